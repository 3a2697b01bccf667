import { describe, expect, it } from 'vitest';
import { orderPageSchema, orderSchema } from '../../../src/exchange/schemas.ts';

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
