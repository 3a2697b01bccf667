// The sandbox's order store at scale: the v2 list walks orders from a cursor (the same pages as filtering and
// sorting every order), and a sweep skips orders whose next time-driven move is not due, without missing one whose
// schedule changed.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  OrderStore,
  type AutoSchedule,
  type NewOrder,
  type Order,
} from '../../../sandbox/domain/order-store.ts';

const off: AutoSchedule = { enabled: false, stepMs: 1_000, outcome: 'completed' };

function newOrder(createdAt: number, mode: Order['mode']): NewOrder {
  return {
    createdAt,
    mode,
    partnerId: 'partner',
    v1User: undefined,
    side: 'BUY',
    pair: { from: { addressFormat: 'evm' }, to: { addressFormat: 'evm' } } as unknown as Order['pair'],
    depositAmount: 1n,
    withdrawAmount: 1n,
    rate: 1n,
    depositAddress: '',
    depositAddressExtraId: '',
    withdrawAddress: '',
    withdrawAddressExtraId: '',
    refundAddress: '',
    refundAddressExtraId: '',
    paymentWindowMinutes: 60,
    fixedRateDeadline: 0,
    referralCode: undefined,
    rateId: undefined,
    isLimitOrder: false,
    limitTtlSeconds: undefined,
    userProvided: 'deposit',
    addressCase: undefined,
  };
}

describe('sandbox order store', () => {
  it('walks the same pages from a cursor as filtering and sorting every order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { maxLength: 60 }),
        fc.integer({ min: 0, max: 70 }),
        fc.integer({ min: 1, max: 7 }),
        (kept, at, limit) => {
          const store = new OrderStore(off);
          const orders = kept.map((_, i) => store.create(newOrder(i, 'cefi')));
          const keep = (o: Order): boolean => kept[o.seq - 1] === true;
          const sorted = orders.filter(keep).sort((a, b) => b.seq - a.seq);
          const seqs = (list: Order[]): number[] => list.map((o) => o.seq);
          expect(seqs(store.olderThan(at, keep, limit))).toEqual(
            seqs(sorted.filter((o) => o.seq < at).slice(0, limit)),
          );
          expect(seqs(store.olderThan(Number.POSITIVE_INFINITY, keep, limit))).toEqual(
            seqs(sorted.slice(0, limit)),
          );
          expect(seqs(store.newerThan(at, keep, limit))).toEqual(
            seqs(sorted.filter((o) => o.seq > at).slice(-limit)),
          );
        },
      ),
    );
  });

  it('moves an order whose schedule changed after a sweep had worked out its next move', () => {
    const store = new OrderStore({ enabled: true, stepMs: 1_000, outcome: 'completed' });
    const order = store.create(newOrder(0, 'cefi'));
    store.sweep(500);
    expect(order.status).toBe('INITIAL');
    // Its own schedule, sooner: due at 100 ms now, not at the 1 s the last sweep worked out.
    store.setOrderSchedule(order, { enabled: true, stepMs: 100, outcome: 'completed' });
    store.sweep(600);
    expect(order.history.length).toBeGreaterThan(1);
    const moved = order.history.length;
    // The default changed too: an order following it is due again by it.
    const other = store.create(newOrder(600, 'cefi'));
    store.sweep(700);
    expect(other.status).toBe('INITIAL');
    store.setDefaultSchedule({ enabled: true, stepMs: 50, outcome: 'completed' });
    store.sweep(700);
    expect(other.history.length).toBeGreaterThan(1);
    expect(order.history.length).toBeGreaterThanOrEqual(moved);
  });
});
