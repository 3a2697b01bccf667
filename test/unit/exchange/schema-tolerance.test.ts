import { describe, expect, it } from 'vitest';
import { exchangeMessageMaxChars, exchangeValueMaxChars } from '../../../machines/domain.ts';
import {
  orderPageSchema,
  orderSchema,
  preScreeningResultSchema,
  rateSchema,
  v1OrderSchema,
} from '../../../src/exchange/schemas.ts';
import { v2WebhookSchema } from '../../../src/exchange/schemas.ts';

const order = {
  unique_reference: 'R1',
  created_on: '2026-11-22T06:00:00.123456Z',
  status: 'INITIAL',
  deposit_amount: '1.00000000',
  withdraw_amount: '0.03000000',
  deposit_currency: 'ETH',
  withdraw_currency: 'BTC',
  fixed_rate_deadline: '',
};

describe('wire tolerance where the document leaves room', () => {
  it('reads an empty fixed_rate_deadline (a floating order) as no deadline, and microsecond timestamps', () => {
    const parsed = orderSchema.parse(order);
    expect(parsed.fixed_rate_deadline).toBeNull();
    expect(parsed.deposit_address).toBe('');
  });

  it('still refuses a deadline that is not a timestamp', () => {
    expect(orderSchema.safeParse({ ...order, fixed_rate_deadline: 'soon' }).success).toBe(false);
  });

  it('accepts the order list under results, or under orders when that is the key used', () => {
    expect(
      orderPageSchema.parse({ results: [order], pagination: { next: null, previous: null } }).results,
    ).toHaveLength(1);
    expect(
      orderPageSchema.parse({ orders: [order], pagination: { next: 'c2', previous: null } }).results,
    ).toHaveLength(1);
    expect(orderPageSchema.safeParse({ pagination: {} }).success).toBe(false);
  });
});

describe('values that would break date arithmetic are invalid responses', () => {
  const order = {
    unique_reference: 'R1',
    created_on: '2026-11-22T06:00:00Z',
    status: 'INITIAL',
    deposit_amount: '0.1',
    withdraw_amount: '1',
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
  };
  it('refuses a payment window or a timestamp outside plausible bounds', async () => {
    const { rateSchema } = await import('../../../src/exchange/schemas.ts');
    expect(orderSchema.safeParse(order).success).toBe(true);
    expect(orderSchema.safeParse({ ...order, payment_window_minutes: 1e15 }).success).toBe(false);
    expect(orderSchema.safeParse({ ...order, created_on: '+275760-09-13T00:00:00.000Z' }).success).toBe(
      false,
    );
    const rate = {
      pair: 'ETHBTC',
      from: 'BTC',
      to: 'ETH',
      withdrawal_fee: '0',
      rate: '1',
      rate_id: 'r',
      max_withdraw_amount: '1',
      min_withdraw_amount: '0',
      max_deposit_amount: '1',
      min_deposit_amount: '0',
    };
    expect(rateSchema.safeParse({ ...rate, expiration_time_unix: '1795000000' }).success).toBe(true);
    expect(rateSchema.safeParse({ ...rate, expiration_time_unix: '99999999999999' }).success).toBe(false);
    expect(rateSchema.safeParse({ ...rate, expiration_time_unix: 1e300 }).success).toBe(false);
  });
});

describe('exchange text an order keeps is bounded (machines/domain.ts)', () => {
  const megabyte = 'x'.repeat(1 << 20);

  it('refuses an order whose kept values run past the cap, never cutting them', () => {
    for (const field of [
      'unique_reference',
      'status',
      'side',
      'deposit_address',
      'deposit_address_extra_id',
      'withdraw_address',
      'refund_address',
      'deposit_transaction',
      'withdraw_transaction',
      'refund_transaction',
      'deposit_currency',
    ])
      expect(orderSchema.safeParse({ ...order, [field]: megabyte }).success, field).toBe(false);
    expect(orderSchema.safeParse({ ...order, deposit_amount: '1'.repeat(1 << 20) }).success).toBe(false);
    expect(orderSchema.safeParse({ ...order, deposit_currency: { code: megabyte } }).success).toBe(false);
    // The same through a webhook body and a listing page.
    expect(v2WebhookSchema.safeParse({ ...order, id: 'd', status: megabyte }).success).toBe(false);
    expect(orderPageSchema.safeParse({ results: [{ ...order, withdraw_address: megabyte }] }).success).toBe(
      false,
    );
    // At the cap it is a value like any other.
    const longest = 'a'.repeat(exchangeValueMaxChars);
    expect(orderSchema.parse({ ...order, deposit_address: longest }).deposit_address).toBe(longest);
  });

  it('refuses a quote whose rate_id runs past the cap, and a v1 order whose transaction hash does', () => {
    const rate = {
      pair: 'ETHBTC',
      from: 'BTC',
      to: 'ETH',
      withdrawal_fee: '0',
      rate: '1',
      rate_id: 'r1',
      max_withdraw_amount: '1',
      min_withdraw_amount: '0',
      max_deposit_amount: '1',
      min_deposit_amount: '0',
      expiration_time_unix: '1900000000',
    };
    expect(rateSchema.safeParse(rate).success).toBe(true);
    expect(rateSchema.safeParse({ ...rate, rate_id: megabyte }).success).toBe(false);
    const v1 = {
      order_type: 0,
      amount_base: '1',
      amount_quote: '1',
      unique_reference: 'R1',
      pair: { name: 'ETHBTC', base: { code: 'ETH' }, quote: { code: 'BTC' } },
      withdraw_address: null,
      deposit_address: null,
      refund_address: null,
      created_on: '2026-11-22T06:00:00Z',
      status_name: [[16, 'COMPLETED']],
      transactions: [{ type: 'W', tx_id: 'abc' }],
    };
    expect(v1OrderSchema.safeParse(v1).success).toBe(true);
    expect(v1OrderSchema.safeParse({ ...v1, transactions: [{ type: 'W', tx_id: megabyte }] }).success).toBe(
      false,
    );
  });

  it('cuts a pre-screening message to the cap', () => {
    const parsed = preScreeningResultSchema.parse({ status: 'failed', message: megabyte });
    expect(parsed.message).toHaveLength(exchangeMessageMaxChars);
    expect(parsed.message.endsWith('…')).toBe(true);
  });
});
