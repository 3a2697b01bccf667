// An order's life on this replica: every transition of its slot (create, restore, reload, take up, halt, unload; rest
// and wake in rest-and-wake.ts, which this module builds) with what goes with it - its lease, its actor's start, its
// deadlines - and what follows a write (quiet after a durable write, finished after a terminal one, reloaded or
// halted after a failed one). The phases themselves are assigned in slot-phases.ts, at this module's request only.
import pLimit from 'p-limit';
import { parkedEventOf } from '../../../machines/order-event-builders.ts';
import type { OrderCreateCommand } from '../../contract/commands.ts';
import { WorkerError } from '../../errors.ts';
import type { OrderRecord } from '../../kafka/order-state-store.ts';
import type { MachineBinding } from '../machine-binding.ts';
import type { EventPayload } from '../order-journal.ts';
import { defaultCallsSettleTimeoutMs, WriteFailures } from '../order-reload.ts';
import { commandWaitExceeded } from './command-waits.ts';
import type { HostState } from './host-state.ts';
import { answered, type OrderWrites, type WriteExtra, type WriteReport } from './order-writes.ts';
import { RestAndWake } from './rest-and-wake.ts';
import { stateLabel } from './rest-rules.ts';
import * as phases from './slot-phases.ts';
import { actorOf, isOut, isStopped, restOf, type OrderSlot } from './slot-phases.ts';
import { inOrderTrace, recordTransition } from './tracing.ts';

/**
 * Releases of resting orders' suspended leases in flight at once when they leave (a revocation, shutdown). Giving
 * away half of 100k resting orders sent 50k releases to Redis at once, each with its command, reply and promise
 * chain: the replica's live heap went from 386 to 533 MiB at the moment it gave memory away. The slots are dropped
 * at once all the same (nothing acts for them); only their Redis round trips queue.
 */
const leaseReleaseConcurrency = 1000;

export class OrderLifecycle {
  private readonly state: HostState;
  private readonly binding: MachineBinding;
  private readonly writes: OrderWrites;
  /** Orders whose writes failed in a row: reloaded once, then halted. */
  private readonly writeFailures = new WriteFailures();
  /** Rest and wake (rest-and-wake.ts): the deadlines, polls at rest and wakes of the orders driven here. */
  readonly rests: RestAndWake;
  /** The suspended-lease releases of resting orders leaving this replica (leaseReleaseConcurrency). */
  private readonly releases = pLimit(leaseReleaseConcurrency);
  /** What the lifecycle hears of each write it makes. */
  private readonly report: WriteReport = {
    committed: (slot) => this.writeFailures.forget(slot.orderId),
    durable: (slot) => this.rests.noteQuiet(slot),
    failed: (slot, error) => this.writeFailed(slot, error),
  };

  constructor(state: HostState, binding: MachineBinding, writes: OrderWrites) {
    this.state = state;
    this.binding = binding;
    this.writes = writes;
    this.rests = new RestAndWake(state, binding, writes, {
      startOptions: (slot) => this.startOptions(slot),
      onLeaseLost: (orderId, live) => this.onLeaseLost(orderId, live),
      haltOrder: (slot, error) => this.haltOrder(slot, error),
    });
  }

  /**
   * The Kafka writer failed for good: nothing more can be made durable, so nothing more may be done. Stops every
   * actor at once (before any continuation of the failed writes runs); leases are left to expire, since the
   * records they guard may not be the latest.
   */
  halt(reason: Error): void {
    if (this.state.writerFailed) return;
    this.state.writerFailed = true;
    this.state.logger.error(
      { err: { message: reason.message } },
      'Kafka writer failed: every order actor stopped',
    );
    for (const slot of this.state.slots.values()) {
      const actor = actorOf(slot);
      phases.toStopped(slot);
      actor?.stop();
    }
    this.rests.clearDeadlines();
  }

  // ---- writes ---------------------------------------------------------------------------------------------------

  /** Writes the order (order-writes.ts append): a durable record notes it quiet, a failed one reloads or halts it. */
  persist(slot: OrderSlot, extra: WriteExtra = {}): Promise<boolean> {
    return this.writes.append(slot, extra, this.report);
  }

  private schedulePersist(slot: OrderSlot): void {
    if (slot.persistScheduled || phases.isCreating(slot)) return;
    slot.persistScheduled = true;
    queueMicrotask(() => {
      slot.persistScheduled = false;
      // An order can finish on its own (a poll confirms a terminal status, a deadline passes, creation fails):
      // once its terminal record is durable it is unloaded and its lease released, as after a command.
      void this.persist(slot).then(
        (written) => {
          if (written) this.finishIfTerminal(slot);
        },
        () => {},
      );
    });
  }

  finishIfTerminal(slot: OrderSlot): void {
    if (!actorOf(slot)?.status().terminal) return;
    // The terminal record is written by the pending persist; unload once it is durable.
    void slot.lastWrite
      .then(async () => {
        await new Promise((resolve) => setImmediate(resolve));
        await slot.lastWrite;
        if (this.state.holds(slot)) await this.unload(slot);
      })
      .catch(() => {}); // a refused terminal write: the lease-loss reload takes the order over
  }

  /**
   * A write of the order failed (not refused: the broker refused it for its size, say): it never became durable, yet
   * the slot's record holds it already - its events, its state, the command it remembered. Left so, the slot would be
   * ahead of Kafka: the command, delivered again, would be taken for a duplicate of itself and its offset committed
   * with no effect, and the slot's next write would skip the seq numbers of events never published. So the order is
   * reloaded from its last durable record, under the lease it holds (the journal writes nothing queued on top of the
   * failed record meanwhile), and what the write carried is applied again. A write that fails again before any of
   * the order's writes succeeded halts the order instead (order.parked internal_error, code write_failed), keeping
   * its last durable state. Nothing to do once the writer failed for good: halt() stopped every order.
   */
  private writeFailed(slot: OrderSlot, error: unknown): void {
    if (this.state.writerFailed || isStopped(slot) || !this.state.holds(slot)) return;
    const { orderId } = slot;
    const { logger, opts } = this.state;
    const err = { message: (error as Error)?.message ?? String(error) };
    if (phases.isHalted(slot)) {
      logger.error({ orderId, err }, 'the record of a halted order could not be written; it stays halted');
      return;
    }
    const durable = opts.state.get(orderId);
    if (this.writeFailures.failed(orderId) === 'halt' && durable) {
      logger.error(
        { orderId, err },
        'a write of the order failed again; the order is halted with its last durable state (order.parked internal_error)',
      );
      opts.metrics?.writeFailed?.('halted');
      this.writeFailures.forget(orderId);
      actorOf(slot)?.stop();
      slot.record = { ...durable, fence: slot.fence };
      this.haltOrder(slot, error, 'write_failed');
      return;
    }
    logger.error(
      { orderId, err },
      'a write of the order failed; reloading the order from its last durable record',
    );
    opts.metrics?.writeFailed?.('reloaded');
    void this.reload(slot, { keepFence: slot.fence });
  }

  /**
   * The order's actor stopped on an error its machine does not model: publish order.parked (internal_error) once,
   * keep the lease and the last good state, and refuse commands but order.settle abandon. A replica that restores
   * the order later (a restart, a fixed build) tries its last good state again.
   */
  private haltOrder(slot: OrderSlot, error: unknown, code = 'actor_error'): void {
    if (isOut(slot)) return;
    // The last written record keeps the last good state (the errored snapshot may be half-way through a step).
    phases.toHalted(slot);
    slot.pendingEvents.length = 0;
    const message = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    const now = this.state.opts.now();
    const at = new Date(now).toISOString();
    const alreadyReported = Boolean(slot.record.halted);
    slot.record = { ...slot.record, halted: { code, message, at } };
    const events: EventPayload[] = alreadyReported
      ? []
      : [parkedEventOf({ mode: slot.record.mode, code, message, at: now })];
    void this.persist(slot, { events }).catch(() => {});
  }

  // ---- create, restore, reload, take up, unload ------------------------------------------------------------------

  /**
   * A new order's slot, its actor started from the command: its first record is written once the order's local
   * first steps have run (the address check, and whatever follows at once: a quote slot that needs none, the intent
   * of a CeFi order's create), not at the state it starts in: one record fewer per order, and one commit less to
   * wait for before its first call. Its calls to the exchange wait for it (durable() waits for lastWrite, which is
   * this write until it is made), and it is queued before this partition's next command is taken, so its offset
   * commits in order. Those steps are promise continuations (the currency catalog is cached): a nextTick queued
   * from here runs once the microtask queue has drained, without waiting for a turn of the event loop
   * (setImmediate: a turn behind every I/O callback ready at that moment, on a path each of a partition's creates
   * takes one after the other). Resolves with the slot and its first write (with `extra`).
   */
  async create(
    command: OrderCreateCommand,
    record: OrderRecord,
    fence: number,
    answering: OrderSlot['answering'],
    extra: WriteExtra,
  ): Promise<{ slot: OrderSlot; written: Promise<boolean> }> {
    const slot = phases.newSlot(record, fence);
    slot.answering = answering;
    this.state.slots.set(command.order_id, slot);
    const first = Promise.withResolvers<void>();
    first.promise.catch(() => {}); // observed through durable(), as every lastWrite; never an unhandled rejection
    slot.lastWrite = first.promise;
    phases.toCreating(slot, undefined);
    try {
      const actor = this.binding.create(command, this.startOptions(slot));
      if (phases.isCreating(slot)) phases.toCreating(slot, actor);
      await new Promise((resolve) => process.nextTick(resolve));
    } catch (error) {
      // Nothing to write: whoever waits for this order's writes (its next command) must not wait for ever.
      first.resolve();
      throw error;
    } finally {
      if (phases.isCreating(slot)) {
        const actor = actorOf(slot);
        if (actor) phases.toLive(slot, actor);
        else phases.toLoaded(slot);
      }
    }
    const written = this.persist(slot, extra);
    first.resolve(slot.lastWrite === first.promise ? undefined : slot.lastWrite);
    return { slot, written };
  }

  /**
   * Takes the order's lease, waiting while another replica holds it. Gives up (null) when the order's partition is
   * no longer assigned here, before or after the grant (a grant that lands after a revoke is released at once):
   * the new owner drives the order and must not wait for a lease we keep. With a `deadline` (a command's wait,
   * performance.now() clock) it gives up between attempts once the next would end past it, holding no lease.
   */
  async acquireLease(
    orderId: string,
    minFence: number,
    partition: number,
    wait: { onWait?: () => void; deadline?: number; boundMs?: number } = {},
  ): Promise<number | null> {
    const { leases, metrics } = this.state.opts;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) wait.onWait?.();
      if (!this.state.assigned.has(partition)) return null;
      const lost = (): void => void this.onLeaseLost(orderId);
      const grant = await leases.acquire(orderId, minFence, lost).catch((error: unknown) => {
        this.state.logger.warn(
          { orderId, err: { message: (error as Error).message } },
          'lease acquire failed',
        );
        return null;
      });
      if (grant && !this.state.assigned.has(partition)) {
        await leases.release(orderId).catch(() => {});
        return null;
      }
      if (grant) {
        if (attempt > 0) metrics?.leaseTakenOver();
        return grant.fence;
      }
      if (attempt % 10 === 0)
        this.state.logger.info({ orderId, attempt }, 'waiting for the order lease held by another replica');
      const pause = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5));
      if (wait.deadline !== undefined && performance.now() + pause > wait.deadline)
        throw commandWaitExceeded(`the lease of order ${orderId}`, wait.boundMs ?? 0);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** Restores an order whose lease we hold from its latest durable record; false (lease released) if finished. */
  async restoreLatest(orderId: string, fence: number, live = false): Promise<boolean> {
    const { opts, logger } = this.state;
    if (this.state.slots.has(orderId)) return false;
    const record = opts.state.get(orderId);
    if (!record || record.terminal || !this.state.assigned.has(record.partition)) {
      await opts.leases.release(orderId).catch(() => {});
      return false;
    }
    logger.debug(
      { orderId, partition: record.partition, fence, seq: record.seq, rev: record.rev },
      'restoring the order from its latest record',
    );
    const slot = phases.newSlot(record, fence);
    this.state.slots.set(orderId, slot);
    // The lease may have been lost since its grant (a restore waits for the state to catch up after the grants; a
    // stalled process misses renewals): the keeper's onLost found no slot then and did nothing, so nothing would
    // ever reload the order, and its guard would refuse every write of it. Lost now: dropped and reloaded.
    if (!opts.leases.isValid(orderId)) {
      void this.onLeaseLost(orderId, live);
      return false;
    }
    this.state.indexReference(slot);
    // A resting order is restored as it rests (passivation on): no actor until its deadline or an event, and no
    // record written now. Waking re-creates the actor from this record; its first change is written under the new
    // fence before any call it makes, as every change is.
    const resting =
      this.rests.passivateIdleMs > 0 && !record.halted && !live ? this.binding.resting(record.machine) : null;
    if (resting) {
      slot.durableRev = slot.record.rev;
      this.rests.rest(slot, stateLabel(resting.stateValue), resting, resting.confirmedAt);
      return true;
    }
    try {
      const actor = this.binding.restore(record.machine, this.startOptions(slot));
      if (slot.phase.kind === 'loaded') phases.toLive(slot, actor);
    } catch (error) {
      logger.error(
        { orderId, err: { message: (error as Error).message } },
        'could not restore order; it stays unloaded',
      );
      this.state.dropSlot(slot);
      await opts.leases.release(orderId).catch(() => {});
      return false;
    }
    this.schedulePersist(slot);
    this.finishIfTerminal(slot);
    return true;
  }

  /**
   * The lease of an order was lost (expired, stolen, or Redis restarted empty): stop it and reload from Kafka.
   * Never rejects: a failed reload is retried with backoff while the order's partition is ours.
   */
  async onLeaseLost(orderId: string, live = false): Promise<void> {
    const slot = this.state.slots.get(orderId);
    if (!slot || isStopped(slot)) return;
    this.state.opts.metrics?.leaseLost();
    this.state.logger.warn({ orderId }, 'order lease lost; reloading the order from its last durable record');
    await this.reload(slot, { live });
  }

  /** The slot stops driving its order and leaves the host, its deadlines with it. */
  private stop(slot: OrderSlot): void {
    const actor = actorOf(slot);
    phases.toStopped(slot);
    actor?.stop();
    this.state.dropSlot(slot);
    this.rests.forgetDeadlines(slot);
  }

  /**
   * Stops the order's slot and loads the order again from its last durable record, under a new grant of its lease
   * (or the one still held, `keepFence`). The load first waits for the slot's last write and for every exchange call
   * of the order still out (bounded: callsSettleTimeoutMs): the restored machine may repeat a call whose outcome its
   * record leaves open (a DeFi create in doubt is repeated after its settle window, a deposit PATCH at once), and it
   * must never do so beside the first one. The load is registered at once, so the order's commands wait for it and
   * no other path (a command's take-up, the orphan sweep) loads it around that wait. Never rejects: a failed load is
   * retried with backoff while the order's partition is ours.
   */
  private async reload(slot: OrderSlot, opts: { live?: boolean; keepFence?: number } = {}): Promise<void> {
    const { orderId, partition } = slot;
    this.stop(slot);
    const settled = (async () => {
      await slot.lastWrite.catch(() => {});
      await this.callsSettled(orderId);
    })();
    for (let attempt = 0; ; attempt++) {
      if (!this.state.assigned.has(partition)) {
        this.state.logger.info(
          { orderId, partition },
          'order not reloaded: its partition is no longer assigned here (its next owner restores it)',
        );
        // A lease kept for the reload is not this replica's to keep any more (unload would have let it go).
        if (opts.keepFence !== undefined) {
          await settled;
          await this.state.opts.leases.release(orderId).catch(() => {});
        }
        return;
      }
      try {
        await this.takeUp(orderId, partition, { ...opts, after: settled });
        return;
      } catch (error) {
        this.state.logger.error(
          { orderId, attempt, err: { message: (error as Error).message } },
          'could not reload the order; retrying',
        );
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(30_000, 500 * 2 ** Math.min(attempt, 6))),
        );
      }
    }
  }

  /** Resolves once no exchange call of the order is out here, or after callsSettleTimeoutMs. */
  private callsSettled(orderId: string): Promise<void> {
    const { opts } = this.state;
    return (
      opts.callsSettled?.(orderId, opts.callsSettleTimeoutMs ?? defaultCallsSettleTimeoutMs) ??
      Promise.resolve()
    );
  }

  /**
   * Starts driving an unfinished order of an assigned partition that no replica drives here (its lease was lost,
   * or a previous owner created it after this replica's restore): takes its lease, reads up to a barrier, restores.
   * One load per order at a time; its commands wait for it. Throws (retryable) when the partition goes meanwhile.
   * A reload passes what its previous life must finish first (`after`) and, when it still holds the lease, its fence
   * (`keepFence`: used while the lease stays valid, released if nothing is restored).
   */
  takeUp(
    orderId: string,
    partition: number,
    opts: { live?: boolean; after?: Promise<void>; keepFence?: number } = {},
  ): Promise<void> {
    const { reloading } = this.state;
    const { state, leases } = this.state.opts;
    const pending = reloading.get(orderId);
    if (pending) return pending;
    const { live = false, after, keepFence } = opts;
    const load = (async () => {
      await after;
      const record = state.get(orderId);
      const kept = keepFence !== undefined && leases.isValid(orderId);
      if (!record || record.terminal || this.state.slots.has(orderId)) {
        if (kept && !this.state.slots.has(orderId)) await leases.release(orderId).catch(() => {});
        return;
      }
      const fence = kept ? keepFence : await this.acquireLease(orderId, record.fence, partition);
      if (fence === null) {
        throw new WorkerError(
          'partition_revoked',
          `partition ${partition} was revoked while order ${orderId} was being loaded`,
          { retryable: true },
        );
      }
      try {
        // Whoever held the lease meanwhile wrote its last records before letting go: read up to them first.
        await state.catchUp([partition]);
        await this.restoreLatest(orderId, fence, live);
      } catch (error) {
        await leases.release(orderId).catch(() => {});
        throw error;
      }
    })().finally(() => reloading.delete(orderId));
    reloading.set(orderId, load);
    return load;
  }

  async unload(slot: OrderSlot): Promise<void> {
    if (isStopped(slot)) return;
    const { leases } = this.state.opts;
    const rest = restOf(slot);
    const suspended = rest && { renewedAt: rest.leaseRenewedAt, fence: slot.fence };
    this.stop(slot);
    this.writeFailures.forget(slot.orderId);
    await slot.lastWrite.catch(() => {});
    // A request that already left (stopping the actor does not recall a POST in flight) must end before the
    // lease does: the next owner's lookup must not run while it can still land.
    await this.callsSettled(slot.orderId);
    // A resting order's lease is suspended, not kept: freed by its token if it may still be ours in Redis. These
    // wait their turn (leaseReleaseConcurrency): a release by token touches only that grant, so one that waits cannot
    // free a lease this replica takes again meanwhile (a later grant has a higher fence).
    if (suspended && suspended.renewedAt !== undefined) {
      const { fence, renewedAt } = suspended;
      await this.releases(() => leases.releaseSuspended(slot.orderId, fence, renewedAt).catch(() => {}));
    }
    // A kept lease is let go of by order id (whatever grant is kept now), so never after such a wait.
    await leases.release(slot.orderId).catch((error: unknown) => {
      this.state.logger.warn(
        { orderId: slot.orderId, err: { message: (error as Error).message } },
        'lease release failed (it will expire)',
      );
    });
  }

  // ---- the actor's start ----------------------------------------------------------------------------------------

  private startOptions(slot: OrderSlot): Parameters<MachineBinding['create']>[1] {
    return {
      orderId: slot.orderId,
      now: this.state.opts.now(),
      clock: {
        setTimeout: (fn: (...args: unknown[]) => void, ms: number) =>
          setTimeout(() => inOrderTrace(slot, 'order timer', fn), ms),
        clearTimeout: (id: unknown) => clearTimeout(id as NodeJS.Timeout),
      },
      onChange: (emitted) => {
        if (isStopped(slot)) return;
        // Re-created from the record it was passivated with: the same state, nothing new to write.
        if (phases.isWaking(slot) && emitted.length === 0) return;
        recordTransition(slot, emitted);
        slot.pendingEvents.push(...answered(slot, emitted));
        this.schedulePersist(slot);
      },
      onError: (error) => {
        this.state.logger.error(
          { orderId: slot.orderId, err: { message: (error as Error)?.message } },
          'order actor failed unexpectedly; the order is parked (internal_error)',
        );
        this.haltOrder(slot, error);
      },
    };
  }
}
