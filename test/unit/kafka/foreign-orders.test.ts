// The table of other partitions' orders against a plain Map doing the same: any sequence of writes, tombstones and
// lookups answers alike, across growth and the backward shifts of removal.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ForeignOrders, hash53, type ForeignEntry } from '../../../src/kafka/foreign-orders.ts';
import { reduceHeap } from '../../../src/process/heap-reducer.ts';

type Op =
  { kind: 'set'; id: number; entry: ForeignEntry; reference: number | null } | { kind: 'delete'; id: number };

const orderId = (n: number): string => `order-${n.toString(36).padStart(6, '0')}`;
const reference = (n: number): string => `REF${n}`;

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('set' as const),
      id: fc.integer({ min: 0, max: 3_000 }),
      entry: fc.record({
        partition: fc.integer({ min: 0, max: 63 }),
        fence: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        rev: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        terminal: fc.boolean(),
      }),
      reference: fc.option(fc.integer({ min: 0, max: 3_000 }), { nil: null }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 3_000 }) }),
  },
);

describe('ForeignOrders', () => {
  it('answers like a Map of the same writes and tombstones, through growth and removal', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 500, maxLength: 4_000, size: 'max' }), (ops) => {
        const table = new ForeignOrders();
        const model = new Map<string, { entry: ForeignEntry; reference: string | null }>();
        for (const o of ops) {
          const id = orderId(o.id);
          if (o.kind === 'delete') {
            expect(table.delete(id)).toBe(model.delete(id));
            continue;
          }
          const held = model.get(id);
          // An order's reference is set once (null until the exchange order exists), as in the state records.
          const ref = held?.reference ?? (o.reference === null ? null : reference(o.reference));
          table.set(id, o.entry, ref);
          model.set(id, { entry: o.entry, reference: ref });
        }
        expect(table.size).toBe(model.size);
        const references = new Map<string, number>();
        for (const { reference } of model.values())
          if (reference) references.set(reference, (references.get(reference) ?? 0) + 1);
        for (let n = 0; n <= 3_000; n++) {
          expect(table.get(orderId(n))).toEqual(model.get(orderId(n))?.entry);
          // A reference two orders shared stays held while one of them is.
          expect(table.hasReference(reference(n))).toBe(references.has(reference(n)));
        }
        const partitions = new Set([...model.values()].map((v) => v.entry.partition));
        for (let p = 0; p < 64; p++) expect(table.holds(p)).toBe(partitions.has(p));
      }),
      { numRuns: 25, endOnFailure: true },
    );
  });

  it('gives back the rows of the orders it no longer holds, and still answers for the rest', async () => {
    // A lone replica holds every order here until its first assignment, then owns them all: the table empties.
    const entry = (n: number): ForeignEntry => ({ partition: n % 6, fence: n, rev: 1, terminal: false });
    const arrayBuffers = async (): Promise<number> => {
      await reduceHeap();
      return process.memoryUsage().arrayBuffers;
    };
    const before = await arrayBuffers();
    const table = new ForeignOrders();
    for (let n = 1; n <= 100_000; n++) table.set(orderId(n), entry(n), reference(n));
    const full = (await arrayBuffers()) - before;
    for (let n = 101; n <= 100_000; n++) expect(table.delete(orderId(n))).toBe(true);
    const left = (await arrayBuffers()) - before;
    // 2^18 rows of 40 bytes (orders and references) while full: about 10 MiB; a hundred orders need the least table.
    expect(full).toBeGreaterThan(8 * 2 ** 20);
    expect(left).toBeLessThan(128 * 1024);
    expect(table.size).toBe(100);
    for (let n = 1; n <= 100; n++) {
      expect(table.get(orderId(n))).toEqual(entry(n));
      expect(table.hasReference(reference(n))).toBe(true);
    }
    expect(table.get(orderId(101))).toBeUndefined();
    expect(table.hasReference(reference(101))).toBe(false);
  });

  it('forgets the reference of an order whose tombstone it applies', () => {
    const table = new ForeignOrders();
    table.set('o-1', { partition: 2, fence: 1, rev: 3, terminal: true }, 'REF1');
    expect(table.hasReference('REF1')).toBe(true);
    expect(table.delete('o-1')).toBe(true);
    expect(table.hasReference('REF1')).toBe(false);
    expect(table.get('o-1')).toBeUndefined();
  });

  it('hashes ids to 53-bit integers, never 0 (an empty row)', () => {
    const seen = new Set<number>();
    for (let n = 0; n < 100_000; n++) {
      const h = hash53(orderId(n));
      expect(Number.isSafeInteger(h) && h > 0).toBe(true);
      seen.add(h);
    }
    expect(seen.size).toBe(100_000);
    expect(hash53('')).toBeGreaterThan(0);
  });
});
