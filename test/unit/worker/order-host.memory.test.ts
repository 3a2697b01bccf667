// What a replica keeps of the orders it no longer drives. A replica that restored every partition and then kept a
// third of them (a consumer group formed in two rounds, a scale-out from one replica to three) must hold about what
// a replica that restored only that third holds: V8 shrinks a Map's table only once it is less than a quarter full,
// so tables sized for every order would stay (measured in bench/restore-at-scale.ts with BENCH_RESTORE_STAGGER_MS:
// 136.4 MiB of heap against 129.6 and 128.3 for the two other replicas, at 100k orders).
import { describe, expect, it } from 'vitest';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import type { MachineBinding } from '../../../src/worker/machine-binding.ts';
import type { OrderLeases } from '../../../src/worker/ports.ts';
import { reduceHeap } from '../../../src/process/heap-reducer.ts';
import { hostOver, memoryStore, openOrderHandle, openRecord, withSuspend } from './host-fixtures.ts';

const partitions = [0, 1, 2];
/** Per partition: 120k orders fill 0.92 of a 131,072-entry table, and the 40k kept stay above its quarter. */
const perPartition = 40_000;

function ordersOf(): Map<string, OrderRecord> {
  const records = new Map<string, OrderRecord>();
  for (const partition of partitions)
    for (let i = 0; i < perPartition; i++) {
      const orderId = `o-${partition}-${i}`;
      records.set(orderId, openRecord(orderId, partition, { unique_reference: `REF${partition}X${i}` }));
    }
  return records;
}

/**
 * The real host over an in-memory store, grants for every lease, and one actor stand-in for every order; with
 * `resting`, every order is restored at rest (passivation on) and `releaseSuspended` frees its suspended lease.
 */
function hostOverOrders(
  records: Map<string, OrderRecord>,
  resting?: { releaseSuspended: () => Promise<void> },
) {
  const leases: OrderLeases = withSuspend({
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  });
  leases.acquireMany = (requests) => Promise.resolve(requests.map(() => ({ fence: 1 })));
  if (resting) leases.releaseSuspended = resting.releaseSuspended;
  const handle = openOrderHandle();
  const binding: MachineBinding = {
    create: () => handle,
    restore: () => handle,
    // Waiting a day for its deposit.
    resting: () => ({ wakeAt: 1_000_000 + 86_400_000, stateValue: 'open', confirmedAt: null }),
  };
  const writer = { write: () => Promise.resolve(true) } as unknown as TransactionalWriter;
  return hostOver(
    { store: memoryStore(records), writer, leases, binding },
    resting ? { passivateIdleMs: 1_000 } : {},
  );
}

async function heapUsed(): Promise<number> {
  await reduceHeap();
  return process.memoryUsage().heapUsed;
}

describe('order host memory', () => {
  it('holds, after partitions were taken away, what a replica that only ever had the rest holds', async () => {
    const records = ordersOf();

    // Restored every partition, then the group took two of three away (measured while that host lives).
    const keptAfterRevocation = await (async () => {
      const all = hostOverOrders(records);
      all.setAssignment(partitions);
      expect(await all.onAssignment([], partitions)).toBe(3 * perPartition);
      all.setAssignment([0]);
      expect(await all.onAssignment([1, 2], [])).toBe(2 * perPartition);
      const used = await heapUsed();
      expect(all.activeOrders).toBe(perPartition);
      expect(all.ownerOfReference('REF0X7')).toBe('o-0-7');
      return used;
    })();
    const without = await heapUsed();

    // Only ever the partition that stays.
    const one = hostOverOrders(records);
    one.setAssignment([0]);
    expect(await one.onAssignment([], [0])).toBe(perPartition);
    expect(one.activeOrders).toBe(perPartition);
    const keptAlone = await heapUsed();

    const mib = (bytes: number): number => bytes / 2 ** 20;
    // Tables sized for 120k orders would hold about 3.5 MiB more than tables for the 40k kept.
    expect(mib(keptAfterRevocation - without) - mib(keptAlone - without)).toBeLessThan(1);
    expect(one.ownerOfReference('REF0X7')).toBe('o-0-7');
  }, 60_000);

  it('releases the suspended leases of the resting orders it gives away a thousand at a time, not all at once', async () => {
    // 50k releases sent to Redis at once took the replica's live heap from 386 to 533 MiB as it gave half its
    // orders away (each with its command, reply and promise chain).
    const records = new Map<string, OrderRecord>();
    for (const partition of partitions)
      for (let i = 0; i < 1_500; i++)
        records.set(`r-${partition}-${i}`, openRecord(`r-${partition}-${i}`, partition));
    let inFlight = 0;
    let most = 0;
    let released = 0;
    const host = hostOverOrders(records, {
      releaseSuspended: async () => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        released++;
      },
    });
    host.setAssignment(partitions);
    await host.onAssignment([], partitions);
    expect(host.passivatedOrders).toBe(4_500);
    host.setAssignment([0]);
    await host.onAssignment([1, 2], []);
    // setAssignment started them (the new owner waits for these leases); they end a round trip at a time.
    for (let i = 0; i < 1_000 && released < 3_000; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(released).toBe(3_000);
    expect(most).toBe(1_000);
    expect(host.passivatedOrders).toBe(1_500);
  });
});
