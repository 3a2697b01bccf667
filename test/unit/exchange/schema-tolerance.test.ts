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
