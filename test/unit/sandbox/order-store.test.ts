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
    requested: { depositAmount: 1n, withdrawAmount: undefined },
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

  it('applies the same time-driven moves as looking at every order on every sweep', () => {
    const schedules: AutoSchedule[] = [
      off,
      { enabled: true, stepMs: 1_000, outcome: 'completed' },
      { enabled: true, stepMs: 250, outcome: 'refunded' },
      { enabled: true, stepMs: 4_000, outcome: 'canceled' },
    ];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('create' as const), window: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('sweep' as const), ms: fc.nat({ max: 5_000 }) }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.nat({ max: 300_000 }) }),
      fc.record({
        kind: fc.constant('orderSchedule' as const),
        index: fc.nat(),
        schedule: fc.integer({ min: -1, max: 3 }),
      }),
      fc.record({ kind: fc.constant('defaultSchedule' as const), schedule: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('peek' as const), index: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 }), fc.array(op, { maxLength: 60 }), (initial, ops) => {
        const store = new OrderStore(schedules[initial]!);
        const reference = new OrderStore(schedules[initial]!);
        const orders: Order[] = [];
        const twins: Order[] = [];
        let now = 0;
        for (const step of ops) {
          switch (step.kind) {
            case 'create': {
              const input = {
                ...newOrder(now, 'cefi'),
                paymentWindowMinutes: [1, 5, 60, 0.01][step.window]!,
              };
              orders.push(store.create(input));
              twins.push(reference.create(input));
              break;
            }
            case 'sweep':
            case 'tick':
              now += step.ms;
              store.sweep(now);
              for (const twin of twins) reference.sweepOrder(twin, now);
              break;
            case 'orderSchedule': {
              if (orders.length === 0) break;
              const i = step.index % orders.length;
              const schedule = step.schedule < 0 ? undefined : schedules[step.schedule];
              store.setOrderSchedule(orders[i]!, schedule);
              reference.setOrderSchedule(twins[i]!, schedule);
              break;
            }
            case 'defaultSchedule':
              store.setDefaultSchedule(schedules[step.schedule]!);
              reference.setDefaultSchedule(schedules[step.schedule]!);
              break;
            case 'peek': {
              // A GET of one order sweeps that order alone (the routes do): its heap entry goes stale.
              if (orders.length === 0) break;
              const i = step.index % orders.length;
              store.sweepOrder(orders[i]!, now);
              reference.sweepOrder(twins[i]!, now);
              break;
            }
          }
          expect(orders.map((o) => o.history)).toEqual(twins.map((o) => o.history));
        }
      }),
    );
  });
});
