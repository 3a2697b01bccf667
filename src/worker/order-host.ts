// Hosts one actor per order on this replica: keeps its slot, its lease and the partitions assigned here, creates
// actors from commands (as command-intake.ts decides), restores them from the state topic when a partition is
// assigned or a lease was lost, and appends every transition to the order's journal (events with consecutive seq
// numbers, the new state record and the offset of the command that caused it, in one Kafka transaction). An order
// is driven only while this replica holds its Redis lease; a record is written only while the lease is still
// valid (fencing).
//
// A façade: it builds the parts in src/worker/runtime/ in order, each given only what is below it - the shared
// state and the slots' phases (slot-phases.ts), the writes, the lifecycle (every transition of a slot), signals,
// partition restore, the command pipeline and the command handler - and answers for them.
import type { InboundCommandMessage } from '../kafka/command-consumer.ts';
import type { MachineBinding } from './machine-binding.ts';
import { CommandHandler } from './runtime/command-handler.ts';
import { CommandPipeline } from './runtime/command-pipeline.ts';
import { CommandReplies } from './runtime/command-replies.ts';
import { CommandWaits } from './runtime/command-waits.ts';
import { HostState } from './runtime/host-state.ts';
import { OrderLifecycle } from './runtime/lifecycle.ts';
import { OrderWrites } from './runtime/order-writes.ts';
import { PartitionRestore } from './runtime/partition-restore.ts';
import { orphanSweepIntervalMs, type ListingOutcome, type OrderHostOptions } from './runtime/ports.ts';
import { OrderSignals } from './runtime/signals.ts';

export type {
  LeaseRequest,
  ListingOutcome,
  OrderHomes,
  OrderHostMetrics,
  OrderHostOptions,
  OrderLeases,
  PollDeferralReason,
  StateReader,
  WakeReason,
} from './runtime/ports.ts';
export { orphanSweepIntervalMs } from './runtime/ports.ts';
export { pollDeferralStepMs } from './runtime/rest-rules.ts';

export class OrderHost {
  private readonly state: HostState;
  private readonly writes: OrderWrites;
  private readonly lifecycle: OrderLifecycle;
  private readonly signals: OrderSignals;
  private readonly partitions: PartitionRestore;
  private readonly pipeline: CommandPipeline;
  private readonly commands: CommandHandler;
  private lastOrphanSweepAt = 0;

  constructor(opts: OrderHostOptions) {
    const state = (this.state = new HostState(opts));
    const binding: MachineBinding = opts.binding({
      durable: (orderId) => this.durable(orderId),
      mayAct: (orderId) => state.mayAct(orderId),
      ownerOfReference: (uniqueReference) => state.ownerOfReference(uniqueReference),
    });
    const waits = new CommandWaits(opts.commandWaitBoundMs);
    this.writes = new OrderWrites(state, binding);
    this.lifecycle = new OrderLifecycle(state, binding, this.writes);
    this.signals = new OrderSignals(state, binding, this.lifecycle);
    this.partitions = new PartitionRestore(state, this.lifecycle);
    this.pipeline = new CommandPipeline(state, this.lifecycle, waits);
    this.commands = new CommandHandler(state, {
      binding,
      lifecycle: this.lifecycle,
      signals: this.signals,
      pipeline: this.pipeline,
      waits,
      replies: new CommandReplies(state, this.lifecycle, this.pipeline, waits),
    });
    const writerFailed = opts.writerFailed;
    writerFailed?.addEventListener('abort', () => this.halt(writerFailed.reason as Error), { once: true });
  }

  /** True while partitions just assigned are being restored (their orders' leases taken, their records read). */
  get restoring(): boolean {
    return this.partitions.restoring;
  }

  get activeOrders(): number {
    return this.state.slots.size;
  }

  /** Orders that hold memory and CPU here: driven, and not resting (their actor, or its re-creation, in memory). */
  get liveOrders(): number {
    return this.state.slots.size - this.lifecycle.rests.resting;
  }

  /** Orders driven here whose actor is stopped while they only wait (their slot keeps the record). */
  get passivatedOrders(): number {
    return this.lifecycle.rests.resting;
  }

  /** How long the longest-running command handler now running has been running; undefined when none runs. */
  commandRunningForMs(): number | undefined {
    return this.commands.runningForMs();
  }

  /** Unfinished orders driven here, per machine state (`a.b` for a nested state value), passivated ones included. */
  openOrdersByState(): Map<string, number> {
    return this.signals.openOrdersByState();
  }

  /**
   * Waits until everything this order's actor has recorded so far is durable in Kafka. Rejects unless the latest
   * write committed (refused by the lease guard, or the writer failed): no call may go out on an unwritten intent.
   */
  durable(orderId: string): Promise<void> {
    return this.writes.durable(orderId);
  }

  /**
   * The Kafka writer failed for good: nothing more can be made durable, so nothing more may be done. Stops every
   * actor at once (before any continuation of the failed writes runs); leases are left to expire, since the
   * records they guard may not be the latest.
   */
  halt(reason: Error): void {
    this.lifecycle.halt(reason);
  }

  /**
   * The reconciliation sweep's safety net: an order on the exchange whose status was last confirmed longer than
   * `maxAgeMs` ago (its poll is overdue) is nudged to poll now. The machine polls on its own every poll interval;
   * this only fires when something held a poll back. Returns how many orders were nudged.
   */
  reconcile(now: number, maxAgeMs: number): number {
    const nudged = this.signals.nudgeOverdue(now, maxAgeMs);
    if (now - this.lastOrphanSweepAt >= orphanSweepIntervalMs) {
      this.lastOrphanSweepAt = now;
      this.takeUpOrphans();
    }
    return nudged;
  }

  /**
   * The safety net under every path that hands an order from one life to the next (a lost lease's reload, a
   * partition's restore, a command's take-up): an unfinished order of an assigned partition that no slot drives and
   * no load is under way for, on two sweeps in a row (so a load between its lease and its slot is not mistaken for
   * one), is taken up. Returns how many were found; each is logged, since each means a path above let one go.
   */
  takeUpOrphans(): number {
    return this.partitions.takeUpOrphans();
  }

  /**
   * A verified webhook for an order this replica drives, handed over in-process instead of through the commands
   * topic: the hint reaches the actor at once, not behind its partition's queue. True when handled here (delivered,
   * or not wanted in the order's state); false when the order is not driven here (route it through Kafka). A hint is
   * best effort either way: if this replica loses the order meanwhile, the next owner's poll confirms the status.
   * `wake: false` hands it only to a live actor: false for an order at rest, which is left at rest.
   */
  deliverHint(
    hint: { orderId: string; status: string; receivedAt: string },
    options: { wake?: boolean; again?: boolean } = {},
  ): boolean {
    return this.signals.deliverHint(hint, options);
  }

  /**
   * A row of a bulk listing (GET /orders/?status=<code>, requested at `at`) for the order it names, if this replica
   * drives it: 'confirmed' when it showed the status the machine last confirmed (no GET; the routine poll moves
   * back), 'differed' when it showed another one (the machine GETs the order now), 'ignored' when the machine does
   * not take it (a GET in flight, a listing older than its last confirmation, an order not yet or no longer open),
   * 'not_here' when no order of this replica records that exchange order (another replica's, or none).
   */
  deliverListing(
    row: { uniqueReference: string; status: string; at: number },
    again = true,
  ): ListingOutcome | Promise<ListingOutcome> {
    return this.signals.deliverListing(row, again);
  }

  /**
   * The unfinished orders driven here that exist at the exchange, and how many of them had their status last
   * confirmed (by a GET, or a listing showing the same status) longer than `maxAgeMs` ago: the gauge that says
   * whether one API key keeps up.
   */
  confirmationFreshness(now: number, maxAgeMs: number): { open: number; overdue: number } {
    return this.signals.confirmationFreshness(now, maxAgeMs);
  }

  /** True when this replica drives an unfinished order of `mode` that exists at the exchange. */
  drivesOpenOrders(mode: string): boolean {
    return this.signals.openReferences(mode, true).length > 0;
  }

  /** The unique references of the open exchange orders of `mode` driven here (live or at rest). */
  openReferences(mode: string): string[] {
    return this.signals.openReferences(mode);
  }

  /** True while this replica may act for the order: checked as each exchange request leaves the process. */
  mayAct(orderId: string): boolean {
    return this.state.mayAct(orderId);
  }

  /**
   * The order whose durable record names this exchange order, if any: null when it is an order of a partition this
   * replica does not own (its id is not held here).
   */
  ownerOfReference(uniqueReference: string): string | null | undefined {
    return this.state.ownerOfReference(uniqueReference);
  }

  /**
   * The consumer's current assignment, told at once (not after the queued restores): a lease wait or a restore for
   * a partition that has just been revoked gives up instead of blocking the next owner.
   */
  setAssignment(partitions: readonly number[]): void {
    this.partitions.setAssignment(partitions, () => this.pipeline.clearRedeliveries());
  }

  /**
   * Partitions moved; resolves with how many orders were unloaded and restored. Revoked ones: their orders are
   * persisted, their leases released and their records forgotten (the store stops reading them). Added ones: read
   * up to a barrier, take the leases of their unfinished orders (waiting for a previous owner to let go), then read
   * up to a second barrier - a previous owner writes its last records before it releases a lease, so only after the
   * lease is ours is the state topic known to hold the order's latest record - and restore from that. The
   * candidates are computed again until a round finds none: a previous owner may have created an order after the
   * first barrier. Safe to call again with the same partitions (a failed restore is retried by the consumer).
   */
  onAssignment(revoked: number[], added: number[]): Promise<number> {
    return this.partitions.onAssignment(revoked, added);
  }

  /** Stops driving every order (shutdown): flushes their last records and releases their leases. */
  unloadAll(): Promise<void> {
    return this.partitions.unloadAll();
  }

  /**
   * The lease of an order was lost (expired, stolen, or Redis restarted empty): stop it and reload from Kafka.
   * Never rejects: a failed reload is retried with backoff while the order's partition is ours.
   */
  onLeaseLost(orderId: string, live = false): Promise<void> {
    return this.lifecycle.onLeaseLost(orderId, live);
  }

  /**
   * Handles one command message in a consumer span, `process <topic>`, that continues the caller's trace (the
   * message's traceparent); everything the command causes (exchange calls, the Kafka transaction, the events and
   * their traceparent) happens under it, and log lines written meanwhile name the trace and the order.
   */
  handleMessage(message: InboundCommandMessage): Promise<void> {
    return this.commands.handleMessage(message);
  }
}
