// The partitions of this replica: a new assignment unloads the orders of revoked partitions at once and restores
// the unfinished orders of added ones (their leases taken in batches, their records read up to a barrier after the
// grants), and the orphan sweep takes up what every other path let go. Each order's load goes through the lifecycle.
import pLimit from 'p-limit';
import type { OrderRecord } from '../../kafka/order-state-store.ts';
import type { HostState } from './host-state.ts';
import type { OrderLifecycle } from './lifecycle.ts';

/** Lease requests in flight at once while a partition's open orders are restored one at a time. */
const restoreLeaseConcurrency = 1000;
/**
 * Orders whose leases one round trip asks for at a restore, and such round trips in flight at once: a script run of
 * a hundred acquires holds Redis for about a millisecond, and a 100k-order partition costs a thousand round trips
 * instead of 100k (each with its own command, reply and promise: about 2 s of this process's CPU).
 */
const restoreLeaseBatch = 100;
const restoreLeaseBatchesInFlight = 4;

export class PartitionRestore {
  private readonly state: HostState;
  private readonly lifecycle: OrderLifecycle;
  /** Orders unloaded by setAssignment since the last onAssignment (which reports them). */
  private unloadedByAssignment = 0;
  /** Restores of added partitions under way (onAssignment): the orphan sweep waits for them. */
  private restoresRunning = 0;
  /**
   * Orders a restore holds the lease of and has not restored yet, by id: their partition. A new assignment that
   * takes a partition away releases these leases at once (setAssignment), so the partition's next owner does not
   * wait for this restore to work through the orders before them.
   */
  private readonly leasedToRestore = new Map<string, number>();
  /** Unfinished orders the last orphan sweep found driven by nobody here; taken up if the next sweep agrees. */
  private suspectedOrphans = new Set<string>();

  constructor(state: HostState, lifecycle: OrderLifecycle) {
    this.state = state;
    this.lifecycle = lifecycle;
  }

  get restoring(): boolean {
    return this.restoresRunning > 0;
  }

  /** See OrderHost.setAssignment. */
  setAssignment(partitions: readonly number[], redeliveryCleared: () => void): void {
    const { assigned } = this.state;
    // A new assignment starts each partition from the group's committed offset: no redelivery is awaited.
    redeliveryCleared();
    assigned.clear();
    for (const partition of partitions) assigned.add(partition);
    // Orders of a revoked partition stop now and release their leases: the new owner is waiting for them. So do the
    // leases a restore under way took for orders of such a partition (it skips them).
    for (const [orderId, partition] of this.leasedToRestore) {
      if (assigned.has(partition)) continue;
      this.leasedToRestore.delete(orderId);
      this.state.opts.leases.release(orderId).catch(() => {});
    }
    const held = this.state.slots.size;
    for (const slot of [...this.state.slots.values()]) {
      if (assigned.has(slot.partition)) continue;
      this.unloadedByAssignment++;
      this.lifecycle.unload(slot).catch((error: unknown) => {
        this.state.logger.error(
          { orderId: slot.orderId, err: { message: (error as Error).message } },
          'could not unload the order of a revoked partition',
        );
      });
    }
    this.compactAfterRevocation(held);
  }

  /**
   * Once a revocation left at most half of the orders held before it (unload drops a slot and its deadlines at
   * once), the tables of the orders that stay are copied into storage sized for them. V8 shrinks a Map's table
   * only once it is less than a quarter full (DeadlineQueue.compact): a replica that restored every partition and
   * then kept a third of them (a group formed in two rounds, a scale-out from one replica to three) kept tables
   * sized for all. The state store does the same for its records (OrderStateStore.release).
   */
  private compactAfterRevocation(held: number): void {
    const { state } = this;
    if (state.slots.size === held || state.slots.size * 2 > held) return;
    state.slots = new Map(state.slots);
    state.slotsByReference = new Map(state.slotsByReference);
    this.lifecycle.rests.compactDeadlines();
  }

  /** See OrderHost.onAssignment. */
  async onAssignment(revoked: number[], added: number[]): Promise<number> {
    const { assigned } = this.state;
    const revokedSet = new Set(revoked);
    const leaving = [...this.state.slots.values()].filter(
      (slot) => revokedSet.has(slot.partition) && !assigned.has(slot.partition),
    );
    const held = this.state.slots.size;
    const unloading = Promise.all(leaving.map((slot) => this.lifecycle.unload(slot)));
    this.compactAfterRevocation(held);
    await unloading;
    const unloaded = this.unloadedByAssignment + leaving.length;
    this.unloadedByAssignment = 0;
    // Their records are the new owner's to read: this replica stops holding them.
    const released = revoked.filter((partition) => !assigned.has(partition));
    if (released.length) this.state.opts.state.release(released);
    this.restoresRunning++;
    try {
      return unloaded + (await this.restoreAdded(added));
    } finally {
      this.restoresRunning--;
    }
  }

  /** Restores the unfinished orders of the added partitions; how many were restored. */
  private async restoreAdded(added: number[]): Promise<number> {
    const { opts, assigned, reloading, logger } = this.state;
    const attempted = new Set<string>();
    let restored = 0;
    // Where a restore's time goes (an operator's first question when a replica is slow to become ready).
    const took = { readMs: 0, leasesMs: 0, restoreMs: 0 };
    const since = (started: number): number => performance.now() - started;
    const done = (): number => {
      if (restored > 0)
        logger.info(
          {
            partitions: added,
            restored,
            readMs: Math.round(took.readMs),
            leasesMs: Math.round(took.leasesMs),
            restoreMs: Math.round(took.restoreMs),
          },
          'partitions restored',
        );
      return restored;
    };
    for (;;) {
      const partitions = added.filter((partition) => assigned.has(partition));
      if (partitions.length === 0) return done();
      let started = performance.now();
      await opts.state.catchUp(partitions);
      const candidates = partitions
        .flatMap((partition) => opts.state.recordsOfPartition(partition))
        .filter(
          (record) =>
            !record.terminal &&
            !this.state.slots.has(record.order_id) &&
            !reloading.has(record.order_id) &&
            !attempted.has(record.order_id),
        );
      took.readMs += since(started);
      if (candidates.length === 0) return done();
      for (const record of candidates) attempted.add(record.order_id);
      started = performance.now();
      const leased = await this.leaseToRestore(candidates);
      took.leasesMs += since(started);
      started = performance.now();
      await opts.state.catchUp(partitions);
      took.readMs += since(started);
      started = performance.now();
      for (const { record, fence } of leased) {
        // Released meanwhile: its partition was taken away (setAssignment).
        if (fence === null || !this.leasedToRestore.delete(record.order_id)) continue;
        if (await this.lifecycle.restoreLatest(record.order_id, fence)) {
          restored++;
          opts.metrics?.orderRestored();
        }
      }
      took.restoreMs += since(started);
    }
  }

  /**
   * Takes the leases of the orders a restore found: in batches of one round trip each where the leases can, then
   * one at a time, waiting, for every order a batch did not grant (held by the previous owner, or the batch failed).
   * A grant that lands after its partition was revoked is released at once, as `acquireLease` does.
   */
  private async leaseToRestore(
    candidates: readonly OrderRecord[],
  ): Promise<Array<{ record: OrderRecord; fence: number | null }>> {
    const { assigned } = this.state;
    const leased: Array<{ record: OrderRecord; fence: number | null }> = [];
    let left: readonly OrderRecord[] = candidates;
    const leases = this.state.opts.leases;
    const acquireMany = leases.acquireMany?.bind(leases);
    if (acquireMany) {
      const notGranted: OrderRecord[] = [];
      const batches: OrderRecord[][] = [];
      for (let i = 0; i < candidates.length; i += restoreLeaseBatch)
        batches.push(candidates.slice(i, i + restoreLeaseBatch));
      const limit = pLimit(restoreLeaseBatchesInFlight);
      await Promise.all(
        batches.map((batch) =>
          limit(async () => {
            const asked = batch.filter((record) => assigned.has(record.partition));
            const grants = await acquireMany(
              asked.map((record) => ({
                orderId: record.order_id,
                minFence: record.fence,
                onLost: () => void this.lifecycle.onLeaseLost(record.order_id),
              })),
            ).catch((error: unknown) => {
              this.state.logger.warn(
                { orders: asked.length, err: { message: (error as Error).message } },
                'lease acquire of a restore batch failed; asking one order at a time',
              );
              return asked.map(() => null);
            });
            await Promise.all(
              asked.map(async (record, i) => {
                if (!grants[i]) return void notGranted.push(record);
                if (assigned.has(record.partition)) {
                  this.leasedToRestore.set(record.order_id, record.partition);
                  return void leased.push({ record, fence: grants[i].fence });
                }
                await leases.release(record.order_id).catch(() => {});
                leased.push({ record, fence: null });
              }),
            );
          }),
        ),
      );
      left = notGranted;
    }
    // A bounded number of lease requests at a time: a partition of 100k open orders asked for at once would queue
    // 100k Redis commands behind each other, time most of them out and retry them all (a storm, not a restore).
    const limit = pLimit(restoreLeaseConcurrency);
    leased.push(
      ...(await Promise.all(
        left.map((record) =>
          limit(async () => {
            const fence = await this.lifecycle.acquireLease(record.order_id, record.fence, record.partition);
            if (fence !== null) this.leasedToRestore.set(record.order_id, record.partition);
            return { record, fence };
          }),
        ),
      )),
    );
    return leased;
  }

  /** Stops driving every order (shutdown): flushes their last records and releases their leases. */
  async unloadAll(): Promise<void> {
    const leasedOnly = [...this.leasedToRestore.keys()];
    this.leasedToRestore.clear();
    await Promise.all([
      ...[...this.state.slots.values()].map((slot) => this.lifecycle.unload(slot)),
      ...leasedOnly.map((orderId) => this.state.opts.leases.release(orderId).catch(() => {})),
    ]);
  }

  /** See OrderHost.takeUpOrphans. */
  takeUpOrphans(): number {
    const { opts, assigned, reloading, logger } = this.state;
    if (this.state.writerFailed || this.restoresRunning > 0) {
      this.suspectedOrphans.clear();
      return 0;
    }
    const orphans = new Set<string>();
    for (const partition of assigned)
      for (const record of opts.state.recordsOfPartition(partition))
        if (!record.terminal && !this.state.slots.has(record.order_id) && !reloading.has(record.order_id))
          orphans.add(record.order_id);
    let takenUp = 0;
    for (const orderId of orphans) {
      if (!this.suspectedOrphans.has(orderId)) continue;
      const record = opts.state.get(orderId);
      if (!record) continue;
      takenUp++;
      logger.warn(
        { orderId, partition: record.partition },
        'unfinished order driven by nobody on its partition; taking it up',
      );
      opts.metrics?.orphanTakenUp();
      this.lifecycle.takeUp(orderId, record.partition).catch((error: unknown) => {
        logger.warn(
          { orderId, err: { message: (error as Error).message } },
          'could not take up the orphaned order; the next sweep tries again',
        );
      });
      orphans.delete(orderId);
    }
    this.suspectedOrphans = orphans;
    return takenUp;
  }
}
