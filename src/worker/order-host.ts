// Hosts one actor per order on this replica: keeps its slot, its lease and the partitions assigned here, creates
// actors from commands (as command-intake.ts decides), restores them from the state topic when a partition is
// assigned or a lease was lost, and appends every transition to the order's journal (events with consecutive seq
// numbers, the new state record and the offset of the command that caused it, in one Kafka transaction). An order
// is driven only while this replica holds its Redis lease; a record is written only while the lease is still
// valid (fencing).
import {
  context,
  createContextKey,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import pLimit from 'p-limit';
import type { OrderCreateCommand } from '../contract/commands.ts';
import { commandTypes, parseCommand } from '../contract/commands.ts';
import { answerOf, opened, type OpenCommand } from '../contract/command-answers.ts';
import { operatorEvents, screenOperator, type OperatorAuthority } from './operator-authority.ts';
import { rejectedCommandFingerprint } from '../contract/events.ts';
import type { InboundCommandMessage } from '../kafka/command-consumer.ts';
import type { OrderRecord } from '../kafka/order-state-store.ts';
import type { OffsetToCommit } from '../kafka/transactional-writer.ts';
import { WorkerError } from '../errors.ts';
import { commandWaitBoundOf, defaultKafkaSessionTimeoutMs, withTimeout } from '../timeouts.ts';
import { onceEvery, type Logger } from '../telemetry/logger.ts';
import { originLink } from '../telemetry/order-sampler.ts';
import { extractContext, fromTraceparent, toTraceparent, withOrderId } from '../telemetry/propagation.ts';
import {
  ATTR_EXCHANGE_UNIQUE_REFERENCE,
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_KAFKA_MESSAGE_KEY,
  ATTR_MESSAGING_KAFKA_OFFSET,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_ORDER_ID,
} from '../telemetry/semconv.ts';
import {
  isStatusReadRefusal,
  type EmittedDomainEvent,
  type MachineBinding,
  type OrderActorEvent,
  type OrderActorHandle,
  type OrderBarrier,
  type PollAnswer,
  type RestingOrder,
} from './machine-binding.ts';
import type { FetchOrderInput } from '../../machines/order-types.ts';
import { awayDecision, decide, retired, type Rejection } from './command-intake.ts';
import { forwardedHeaders, forwardingOf, towardsHome } from './command-routing.ts';
import { unrecordedDepositAlerts } from './deposit-alerts.ts';
import { DeadlineQueue } from './deadline-queue.ts';
import type { EventPayload, Journal } from './order-journal.ts';
import { defaultCallsSettleTimeoutMs, WriteFailures } from './order-reload.ts';

/** One order's lease asked for with others (`OrderLeases.acquireMany`): as `acquire`'s arguments. */
export interface LeaseRequest {
  readonly orderId: string;
  readonly minFence: number;
  readonly onLost: () => void;
}

export interface OrderLeases {
  /**
   * Acquires the lease with a fencing token above minFence; null when another owner holds it. `onLost` runs (once,
   * never synchronously) if the lease is lost while held: expired, taken, or Redis restarted empty.
   */
  acquire(orderId: string, minFence: number, onLost: () => void): Promise<{ fence: number } | null>;
  /**
   * Acquires the leases of many orders in one round trip, each as `acquire` would: per request, in order, its grant
   * or null (held by another owner). A restore asks this way when it can; a failure rejects the whole call.
   */
  acquireMany?(requests: readonly LeaseRequest[]): Promise<Array<{ fence: number } | null>>;
  release(orderId: string): Promise<void>;
  /** False once the lease may have passed to someone else (lost, expired, or unrenewed for too long). */
  isValid(orderId: string): boolean;
  /**
   * A resting order: stop renewing its lease without giving it up (it runs out on its ttl). Returns when it was
   * last renewed if it is still valid (for keepAgain), else undefined. `onLost` no longer runs for it.
   */
  suspend(orderId: string): number | undefined;
  /**
   * Keeps a suspended lease again, synchronously and without Redis, while a third of its ttl of validity is left
   * (time for its renewal to come back); else false.
   */
  keepAgain(orderId: string, fence: number, lastRenewedAt: number, onLost: () => void): boolean;
  /**
   * Takes a suspended lease up again: the same fence when the lease is still ours in Redis, else a new grant above
   * `fence` (null when another owner holds it). A fence above `fence + 1` means someone else held it in between.
   */
  resume(orderId: string, fence: number, onLost: () => void): Promise<{ fence: number } | null>;
  /**
   * Frees a suspended lease if it may still be ours (a resting order leaving this replica); nothing when it ran out
   * long ago (`lastRenewedAt` as suspend gave it).
   */
  releaseSuspended(orderId: string, fence: number, lastRenewedAt: number): Promise<void>;
}

/** Where each order lives, shared by every replica (this one holds only its own partitions' records). */
export interface OrderHomes {
  /**
   * Records `partition` as the order's home unless it has one; resolves to its home, retired once its finished
   * order left the state topic (the retention sweep).
   */
  claim(orderId: string, partition: number): Promise<{ partition: number; retired: boolean }>;
}

/** The state topic's view of every order, as the host reads it. */
export interface StateReader {
  get(orderId: string): OrderRecord | undefined;
  /** The order recording this exchange order; null when one of a partition not owned here does (id not held). */
  orderIdByReference(uniqueReference: string): string | null | undefined;
  recordsOfPartition(partition: number): OrderRecord[];
  /** Resolves once every record committed to these partitions so far has been read. */
  catchUp(partitions: number[]): Promise<void>;
  /** Stops reading these partitions and forgets their records (another replica owns them now). */
  release(partitions: number[]): void;
  /**
   * An owned open order's machine changed in a way that is not written (it only confirms what is: see
   * MachineBinding.confirmsOnly): the record of this rev held here gets it too, so the order is held once.
   */
  amend?(orderId: string, rev: number, machine: unknown): void;
}

export interface OrderHostOptions {
  state: StateReader;
  journal: Journal;
  leases: OrderLeases;
  /** Builds the machine binding; the host hands it its barrier (durability, lease validity, reference owners). */
  binding: (barrier: OrderBarrier) => MachineBinding;
  /** Aborted when the Kafka writer failed for good: every order actor stops at once (see halt). */
  writerFailed?: AbortSignal;
  logger: Logger;
  now: () => number;
  /**
   * Resolves once no exchange call of the order is in progress (or after the bound). The lease is released only
   * after it, and a reload of the order acts only after it, so a request already sent ends before another life of
   * the order (on another replica, or this one) may act for it.
   */
  callsSettled?: (orderId: string, timeoutMs: number) => Promise<void>;
  /**
   * The bound of that wait: the create timeout plus a margin (order-reload.ts callsSettleTimeoutOf; main.ts derives
   * it from the exchange client's create timeout). Default: defaultCallsSettleTimeoutMs, the same bound for the
   * exchange client's own create timeout.
   */
  callsSettleTimeoutMs?: number;
  /**
   * The longest a command handler waits for a lease, or for a reload or a wake of its order, before the command
   * fails as retryable (its offset not committed: it is delivered again). Default: commandWaitBoundOf the default
   * Kafka session timeout (main.ts derives it from KAFKA_SESSION_TIMEOUT_MS).
   */
  commandWaitBoundMs?: number;
  /** Commands above this many bytes are refused unread (MAX_COMMAND_BYTES). */
  maxCommandBytes?: number;
  /** Told of commands handled, events committed, leases and restores (metrics). */
  metrics?: OrderHostMetrics;
  /** Recognises an order.create of an order that lives on a partition this replica does not hold. */
  homes?: OrderHomes;
  /** Screens operator commands (order.settle) for an operator's signature; absent: no screening (unit tests). */
  operatorAuthority?: OperatorAuthority;
  /**
   * The partition the commands topic's default (murmur2) partitioner gives an order_id: the home of an order not
   * known yet, where a command that arrived elsewhere is forwarded (command-routing.ts). Absent, or undefined while
   * the partition count is unknown: such a command is handled where it arrived.
   */
  canonicalPartition?: (orderId: string) => number | undefined;
  /**
   * An order only waiting (see MachineBinding.resting) for this long, its latest record durable, is passivated:
   * its actor stops and the slot keeps the record and a deadline. 0 or absent: never (PASSIVATE_IDLE_MS).
   */
  passivateIdleMs?: number;
  /** True while an exchange call of the order is in progress (then it is never passivated). */
  callInFlight?: (orderId: string) => boolean;
  /**
   * True while the replica is saturated (its event loop busy nearly all the time): a resting order's routine poll
   * then waits, up to 60 s after its last confirmation (RestingOrder.pollDeferrableUntil). Absent: never.
   */
  pollsMayWait?: () => boolean;
  /**
   * Makes the routine poll of a resting order (GET /orders/{unique_reference}/, lowest priority) without waking it:
   * `mayAsk` throws once the order no longer rests there. Absent: a resting order is woken for its poll. A refusal
   * before sending (isStatusReadRefusal) puts the poll off a step at rest; any other failure wakes the order with it.
   */
  pollResting?: (request: FetchOrderInput, mayAsk: () => void, signal: AbortSignal) => Promise<PollAnswer>;
  /**
   * Polls made at rest that may be out at once (default 100; main.ts: half of MAX_INFLIGHT_EXCHANGE_CALLS). A
   * resting order due for its routine poll while this many are out waits a step (pollDeferralStepMs) at rest, never
   * past its next other deadline: past it, the polls would only wait in memory for the request budget or a slow
   * exchange (each with its promise chain, span and abort controller), and they count against the calls that pause
   * command consumption.
   */
  maxPollsAtRest?: number;
  /**
   * Commands of one partition whose writes may be in flight at once (COMMAND_PIPELINE_DEPTH; default 1: each
   * command waits for its transaction before the next is handled). Above 1 the next command is handled while the
   * last one's transaction commits, so a partition is not bounded by one transaction's round trips. Commands of
   * one order still wait for each other's writes, and a refused write has its partition delivered again from its
   * command (`rewind`; the writer holds the partition's offsets there meanwhile). Needs `rewind`.
   */
  commandPipelineDepth?: number;
  /** Delivers a partition's commands again from this offset (the command consumer's rewind). */
  rewind?: (partition: number, offset: string) => void;
}

/** What the host reports for metrics; label values are command types, reasons and event types only. */
export interface OrderHostMetrics {
  commandHandled(command: { commandType: string; result: string; reason?: string; seconds: number }): void;
  eventsCommitted(eventTypes: string[]): void;
  webhookToEvent(seconds: number): void;
  leaseLost(): void;
  leaseTakenOver(): void;
  orderRestored(): void;
  reconcileNudged(count: number): void;
  /** An unfinished order nobody drove was found and adopted by the orphan sweep. */
  orphanAdopted(): void;
  /** An idle order's actor was stopped; its slot keeps the record and a deadline. */
  orderPassivated(): void;
  /** A passivated order's actor was re-created: its deadline came, or a hint, a command or a sweep woke it. */
  orderReactivated(reason: WakeReason): void;
  /**
   * A write of an order failed (not refused): it was reloaded from its last durable record, or halted when a write
   * of it failed again before any succeeded.
   */
  writeFailed?(outcome: 'reloaded' | 'halted'): void;
  /**
   * An order's end was committed with a deposit its client submitted that the exchange had not recorded
   * (unrecorded_deposit): `outcome` the end (completed, refunded, canceled, failed), `state` the deposit's.
   */
  depositUnrecorded?(outcome: string, state: string): void;
  /**
   * A resting order's routine poll was put off by one step: the replica was saturated ('saturated', within 60 s of
   * its last confirmation), or maxPollsAtRest polls at rest were out ('calls_at_capacity').
   */
  pollDeferred?(reason: PollDeferralReason): void;
  /**
   * A resting order's routine poll made without waking it: its answer only confirmed the order ('confirmed', it
   * rests on), had news or failed (it was woken and handed the answer).
   */
  polledAtRest?(outcome: 'confirmed' | 'news' | 'failed'): void;
}

/** How long a routine poll waits at a time while the replica is saturated (until its deferral bound). */
export const pollDeferralStepMs = 5_000;

/** Why a resting order's routine poll was put off (a metric label). */
export type PollDeferralReason = 'saturated' | 'calls_at_capacity';

/** What brought a passivated order back to life (a metric label). */
export type WakeReason = 'timer' | 'hint' | 'command' | 'reconcile' | 'listing' | 'poll';
/** What a bulk listing's row did to the order it names (OrderHost.deliverListing). */
export type ListingOutcome = 'confirmed' | 'differed' | 'ignored' | 'not_here';

/** A command handler waited longer than its bound: the command is delivered again. */
function commandWaitExceeded(what: string, boundMs: number): WorkerError {
  return new WorkerError(
    'command_wait_exceeded',
    `a command waited longer than ${boundMs} ms for ${what}; it will be delivered again`,
    { retryable: true },
  );
}

/** How often the orphan sweep looks (an orphan is adopted on its second sighting, so within two intervals). */
export const orphanSweepIntervalMs = 30_000;

/** How a command ended, filled in while it is handled (read by handleMessage for its span and metrics). */
interface CommandOutcome {
  commandType: string;
  result: 'accepted' | 'duplicate' | 'rejected' | 'consumed' | 'forwarded';
  reason?: string;
}
const commandOutcomeKey = createContextKey('exchange-order-worker command outcome');

function noteOutcome(result: CommandOutcome['result'], reason?: string): void {
  const outcome = context.active().getValue(commandOutcomeKey) as CommandOutcome | undefined;
  if (!outcome) return;
  outcome.result = result;
  if (reason !== undefined) outcome.reason = reason;
}

function noteCommandType(commandType: string): void {
  const outcome = context.active().getValue(commandOutcomeKey) as CommandOutcome | undefined;
  if (outcome) outcome.commandType = commandType;
}

interface OrderSlot {
  orderId: string;
  partition: number;
  fence: number;
  record: OrderRecord;
  actor: OrderActorHandle | undefined;
  pendingEvents: EmittedDomainEvent[];
  /**
   * The commands accepted and not answered yet ([type, command_id], contract/command-answers.ts): an event that
   * answers one carries its command_id. Written with the record, so a restored order still answers them.
   */
  answering: OpenCommand[];
  /** The latest write of this order: resolves once committed, rejects when it was refused or failed. */
  lastWrite: Promise<void>;
  /** The actor stopped on an unmodelled error; the slot keeps the lease and refuses all but order.settle abandon. */
  halted: boolean;
  persistScheduled: boolean;
  stopped: boolean;
  /** When the reconciliation sweep last nudged this order (at most one nudge per max age). */
  lastNudgeAt: number;
  /** The span context of the command that created the order: later traces of it (polls) link to it. */
  origin: SpanContext | undefined;
  /** When a webhook hint asked for the poll now under way, or waiting (epoch ms), for the webhook-to-event latency. */
  webhookAt: number | undefined;
  /**
   * The spans of the hints waiting for their GET (WEBHOOK_COALESCE_MS): the machine timer that sends it links them,
   * so a webhook's trace leads to the GET that confirmed it (at most maxHintLinks).
   */
  hintLinks?: SpanContext[] | undefined;
  /** The rev of the latest record once it is committed (and nothing newer was appended meanwhile). */
  durableRev: number;
  /**
   * Set while passivated (no actor): the state it waits in (for metrics), when its machine is due, until when that
   * wake may be put off while the replica is saturated (a routine poll only), and when its suspended lease was
   * last renewed if it was still valid then (no renewals while at rest).
   */
  passive:
    | {
        state: string;
        wakeAt: number;
        pollDeferrableUntil: number | null;
        confirmedAt: number | null;
        leaseRenewedAt: number | undefined;
        /**
         * The time of the latest bulk listing that confirmed the order while it rested (its deadlines above already
         * moved for it): handed to the machine when it wakes, as the listing it would have seen.
         */
        listedAt: number | undefined;
        /** Its routine poll, made without waking it (pollAtRest), while that GET is out: aborted if it wakes. */
        polling: AbortController | undefined;
      }
    | undefined;
  /** The actor is being re-created from the record: its start is not a change to write. */
  waking: boolean;
  /**
   * A new order's first record is not written yet (createOrder writes it once the order's local first steps have
   * run): its changes meanwhile schedule no write of their own.
   */
  creating: boolean;
}

/** Hint spans a waiting GET links at most (a webhook storm for one order must not grow a slot). */
const maxHintLinks = 8;

/** The lastWrite of every passivated slot: nothing pending (one object, not one per order). */
const settledWrite: Promise<void> = Promise.resolve();

const tracer = trace.getTracer('exchange-order-worker');

/** Lease requests in flight at once while a partition's open orders are restored one at a time. */
const restoreLeaseConcurrency = 1000;
/**
 * Releases of resting orders' suspended leases in flight at once when they leave (a revocation, shutdown). Giving
 * away half of 100k resting orders sent 50k releases to Redis at once, each with its command, reply and promise
 * chain: the replica's live heap went from 386 to 533 MiB at the moment it gave memory away. The slots are dropped
 * at once all the same (nothing acts for them); only their Redis round trips queue.
 */
const leaseReleaseConcurrency = 1000;
/**
 * Orders whose leases one round trip asks for at a restore, and such round trips in flight at once: a script run of
 * a hundred acquires holds Redis for about a millisecond, and a 100k-order partition costs a thousand round trips
 * instead of 100k (each with its own command, reply and promise: about 2 s of this process's CPU).
 */
const restoreLeaseBatch = 100;
const restoreLeaseBatchesInFlight = 4;

/** A machine state value as a label: `"a"`, `{"a":"b"}` -> `a.b`, parallel regions joined by `+`. */
function stateLabel(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object')
    return Object.entries(value)
      .map(([key, inner]) => `${key}.${stateLabel(inner)}`)
      .join('+');
  return 'unknown';
}

export class OrderHost {
  private slots = new Map<string, OrderSlot>();
  /** The slots by their exchange order's reference (ownerOfReference runs for every create: no scan of every slot). */
  private slotsByReference = new Map<string, OrderSlot>();
  /** Command partitions assigned to this replica (an order is driven only while its partition is here). */
  private readonly assigned = new Set<number>();
  /** Orders being (re)loaded after a lost lease: their commands wait instead of being refused. */
  private readonly reloading = new Map<string, Promise<void>>();
  /** Resting orders whose suspended lease is being taken up again (from Redis) to wake them. */
  private readonly resuming = new Map<string, Promise<void>>();
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
  /** Unfinished orders the last orphan sweep found driven by nobody here; adopted if the next sweep agrees. */
  private suspectedOrphans = new Set<string>();
  private lastOrphanSweepAt = 0;
  private readonly opts: OrderHostOptions;
  private readonly binding: MachineBinding;
  private readonly logger: Logger;
  private writerFailed = false;
  /** Polls made at rest that are out now (pollAtRest), and how many may be. */
  private pollsAtRestOut = 0;
  private readonly maxPollsAtRest: number;
  /** Says that routine polls wait for the calls at rest already out at most once a minute. */
  private readonly pollsAtCapacityWarning = onceEvery(60_000);
  private readonly maxCommandBytes: number | undefined;
  private readonly passivateIdleMs: number;
  /** Live orders that may be idle: checked for passivation at their deadline. */
  private readonly idleChecks: DeadlineQueue<string>;
  /** Passivated orders: woken at their machine's next deadline. */
  private readonly wakes: DeadlineQueue<string>;
  /** State labels of passivated orders, shared (a handful of distinct strings for any number of orders). */
  private readonly stateLabels = new Map<string, string>();
  private readonly pipelineDepth: number;
  /** Per partition, the pipelined commands whose writes are in flight, oldest first (settled, never rejected). */
  private readonly pipelines = new Map<number, Promise<void>[]>();
  /**
   * Per partition, the offset of a refused pipelined command it is being delivered again from: a command past it
   * that reaches its decision meanwhile is left undecided (it comes again after the refused one).
   */
  private readonly redelivering = new Map<number, bigint>();
  /** The suspended-lease releases of resting orders leaving this replica (leaseReleaseConcurrency). */
  private readonly releases = pLimit(leaseReleaseConcurrency);
  /** Orders whose writes failed in a row: reloaded once, then halted. */
  private readonly writeFailures = new WriteFailures();
  private readonly commandWaitBoundMs: number;
  /** When each command handler running now started (performance.now()), by its message. */
  private readonly handlersRunning = new Map<InboundCommandMessage, number>();

  constructor(opts: OrderHostOptions) {
    this.opts = opts;
    this.logger = opts.logger.child({ component: 'order-host' });
    this.maxCommandBytes = opts.maxCommandBytes;
    this.commandWaitBoundMs = opts.commandWaitBoundMs ?? commandWaitBoundOf(defaultKafkaSessionTimeoutMs);
    this.passivateIdleMs = opts.passivateIdleMs ?? 0;
    this.maxPollsAtRest = Math.max(1, Math.floor(opts.maxPollsAtRest ?? 100));
    this.pipelineDepth = opts.rewind ? Math.max(1, opts.commandPipelineDepth ?? 1) : 1;
    this.idleChecks = new DeadlineQueue((orderId) => this.passivateIfIdle(orderId), opts.now);
    this.wakes = new DeadlineQueue((orderId) => this.wakeDue(orderId), opts.now);
    this.binding = opts.binding({
      durable: (orderId) => this.durable(orderId),
      mayAct: (orderId) => this.mayAct(orderId),
      ownerOfReference: (uniqueReference) => this.ownerOfReference(uniqueReference),
    });
    const writerFailed = opts.writerFailed;
    writerFailed?.addEventListener('abort', () => this.halt(writerFailed.reason as Error), { once: true });
  }

  /** True while partitions just assigned are being restored (their orders' leases taken, their records read). */
  get restoring(): boolean {
    return this.restoresRunning > 0;
  }

  get activeOrders(): number {
    return this.slots.size;
  }

  /** Orders that hold memory and CPU here: driven, and not resting (their actor, or its re-creation, in memory). */
  get liveOrders(): number {
    return this.slots.size - this.wakes.size;
  }

  /** How long the longest-running command handler now running has been running; undefined when none runs. */
  commandRunningForMs(): number | undefined {
    let oldest: number | undefined;
    for (const startedAt of this.handlersRunning.values())
      if (oldest === undefined || startedAt < oldest) oldest = startedAt;
    return oldest === undefined ? undefined : performance.now() - oldest;
  }

  /** Orders driven here whose actor is stopped while they only wait (their slot keeps the record). */
  get passivatedOrders(): number {
    return this.wakes.size;
  }

  /** Unfinished orders driven here, per machine state (`a.b` for a nested state value), passivated ones included. */
  openOrdersByState(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const slot of this.slots.values()) {
      let state: string;
      if (slot.passive) state = slot.passive.state;
      else {
        const status = slot.actor?.status();
        if (!status || status.terminal) continue;
        state = stateLabel(JSON.parse(status.state) as unknown);
      }
      counts.set(state, (counts.get(state) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * Waits until everything this order's actor has recorded so far is durable in Kafka. Rejects unless the latest
   * write committed (refused by the lease guard, or the writer failed): no call may go out on an unwritten intent.
   */
  async durable(orderId: string): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    const slot = this.slots.get(orderId);
    if (!slot) throw new Error(`order ${orderId} is not driven by this replica`);
    await slot.lastWrite;
    if (slot.stopped || this.writerFailed || !this.opts.leases.isValid(orderId))
      throw new Error(`order ${orderId} is no longer driven by this replica`);
  }

  /**
   * The Kafka writer failed for good: nothing more can be made durable, so nothing more may be done. Stops every
   * actor at once (before any continuation of the failed writes runs); leases are left to expire, since the
   * records they guard may not be the latest.
   */
  halt(reason: Error): void {
    if (this.writerFailed) return;
    this.writerFailed = true;
    this.logger.error({ err: { message: reason.message } }, 'Kafka writer failed: every order actor stopped');
    for (const slot of this.slots.values()) {
      slot.stopped = true;
      slot.actor?.stop();
    }
    this.idleChecks.clear();
    this.wakes.clear();
  }

  /**
   * The reconciliation sweep's safety net: an order on the exchange whose status was last confirmed longer than
   * `maxAgeMs` ago (its poll is overdue) is nudged to poll now. The machine polls on its own every poll interval;
   * this only fires when something held a poll back. Returns how many orders were nudged.
   */
  reconcile(now: number, maxAgeMs: number): number {
    let nudged = 0;
    for (const slot of [...this.slots.values()]) {
      // A passivated order polls when it wakes; one whose wake is overdue (its timer held back) is woken here.
      if (slot.passive) {
        if (now - slot.passive.wakeAt > maxAgeMs) this.wake(slot, 'reconcile');
        continue;
      }
      const status = slot.actor?.status();
      if (
        !slot.actor ||
        !status ||
        status.terminal ||
        !status.uniqueReference ||
        status.lastConfirmedAt === null
      )
        continue;
      if (now - status.lastConfirmedAt <= maxAgeMs || now - slot.lastNudgeAt <= maxAgeMs) continue;
      const nudge: OrderActorEvent = { type: 'WEBHOOK_HINT', at: now };
      if (!slot.actor.can(nudge)) continue;
      this.inOrderTrace(slot, 'order reconcile', () => slot.actor?.send(nudge));
      slot.lastNudgeAt = now;
      nudged++;
    }
    if (nudged) this.opts.metrics?.reconcileNudged(nudged);
    if (now - this.lastOrphanSweepAt >= orphanSweepIntervalMs) {
      this.lastOrphanSweepAt = now;
      this.adoptOrphans();
    }
    return nudged;
  }

  /**
   * The safety net under every path that hands an order from one life to the next (a lost lease's reload, a
   * partition's restore, a command's adopt): an unfinished order of an assigned partition that no slot drives and
   * no load is under way for, on two sweeps in a row (so a load between its lease and its slot is not mistaken for
   * one), is adopted. Returns how many were found; each is logged, since each means a path above let one go.
   */
  adoptOrphans(): number {
    if (this.writerFailed || this.restoresRunning > 0) {
      this.suspectedOrphans.clear();
      return 0;
    }
    const orphans = new Set<string>();
    for (const partition of this.assigned)
      for (const record of this.opts.state.recordsOfPartition(partition))
        if (!record.terminal && !this.slots.has(record.order_id) && !this.reloading.has(record.order_id))
          orphans.add(record.order_id);
    let adopted = 0;
    for (const orderId of orphans) {
      if (!this.suspectedOrphans.has(orderId)) continue;
      const record = this.opts.state.get(orderId);
      if (!record) continue;
      adopted++;
      this.logger.warn(
        { orderId, partition: record.partition },
        'unfinished order driven by nobody on its partition; adopting it',
      );
      this.opts.metrics?.orphanAdopted();
      this.adopt(orderId, record.partition).catch((error: unknown) => {
        this.logger.warn(
          { orderId, err: { message: (error as Error).message } },
          'could not adopt the orphaned order; the next sweep tries again',
        );
      });
      orphans.delete(orderId);
    }
    this.suspectedOrphans = orphans;
    return adopted;
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
    { wake = true, again = true }: { wake?: boolean; again?: boolean } = {},
  ): boolean {
    const slot = this.slots.get(hint.orderId);
    if (slot?.passive) {
      if (!wake) return false;
      if (!this.wake(slot, 'hint') && this.resuming.has(hint.orderId)) {
        // Its lease is being taken up again from Redis: the hint follows once the order is live (once only).
        if (again) void this.awake(hint.orderId).then(() => this.deliverHint(hint, { again: false }));
        return true;
      }
    }
    if (!slot?.actor || slot.stopped || slot.halted || !this.mayAct(hint.orderId)) return false;
    const event: OrderActorEvent = { type: 'WEBHOOK_HINT', status: hint.status, at: this.opts.now() };
    if (!slot.actor.can(event)) return true;
    // In the webhook's trace, linked to the order's first (a sampler keeps it with the order's other traces).
    const span = tracer.startSpan('order webhook hint', {
      kind: SpanKind.INTERNAL,
      attributes: this.orderAttributes(slot),
      ...(slot.origin ? { links: [originLink(slot.origin)] } : {}),
    });
    try {
      context.with(trace.setSpan(context.active(), span), () => this.takeHint(slot, event, hint.receivedAt));
    } finally {
      span.end();
    }
    return true;
  }

  /**
   * A webhook's hint to a live order that takes it, however it came (handed over in-process, or routed here through
   * the commands topic): the machine decides what to GET and when. A hint never changes state by itself, so nothing
   * is written for it; the machine's own writes (the GET's answer) follow as always.
   */
  private takeHint(slot: OrderSlot, event: OrderActorEvent, receivedAt: string): void {
    const at = Date.parse(receivedAt);
    if (Number.isFinite(at)) slot.webhookAt = at;
    slot.actor?.send(event);
    // A hint the machine keeps waiting for the ones after it: its span is linked from the GET's trace later.
    if (slot.actor?.status().hintDueAt == null) return;
    const spanContext = trace.getActiveSpan()?.spanContext();
    if (!spanContext || !isSpanContextValid(spanContext)) return;
    const links = (slot.hintLinks ??= []);
    if (links.length < maxHintLinks) links.push(spanContext);
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
    const orderId = this.ownerOfReference(row.uniqueReference);
    const slot = orderId == null ? undefined : this.slots.get(orderId);
    // A passivated order stays at rest for a row that only confirms it (the machine says what it would do with it:
    // move its next poll out), and is handed that listing when it wakes. For any other row it is woken like for a
    // hint: the machine decides (another status is a GET), and it rests again after the idle time. Its lease may
    // have to be taken up again from Redis first: the row follows once the order is live.
    const atRest = slot?.passive && !slot.stopped && !slot.halted ? this.confirmAtRest(slot, row) : undefined;
    if (atRest) return atRest;
    if (slot?.passive && !this.wake(slot, 'listing') && this.resuming.has(slot.orderId))
      return again ? this.awake(slot.orderId).then(() => this.deliverListing(row, false)) : 'ignored';
    if (!slot?.actor || slot.stopped || slot.halted || !this.mayAct(slot.orderId)) return 'not_here';
    const actor = slot.actor;
    const status = actor.status();
    if (status.uniqueReference !== row.uniqueReference) return 'not_here';
    const event: OrderActorEvent = { type: 'LISTED', status: row.status, at: row.at };
    if (!actor.can(event)) return 'ignored';
    if (status.lastStatus === row.status) {
      // A confirmation only re-arms a timer: no trace of its own (thousands per round).
      actor.send(event);
      return 'confirmed';
    }
    this.inOrderTrace(slot, 'order listing hint', () => actor.send(event));
    return 'differed';
  }

  /**
   * A listing row for a passivated order that the machine would take as a confirmation: the slot's deadlines move
   * as the machine's would, and the order stays at rest ('confirmed'). A row older than a confirmation already
   * taken this way is 'ignored' (as the machine ignores a stale page). Undefined: the order must be woken for it.
   * Waking each listed order (re-creating its actor, taking its lease up again from Redis, writing the record of
   * the confirmation, resting again) once per listing round was measured as most of a replica's work with
   * thousands of CeFi orders open.
   */
  private confirmAtRest(
    slot: OrderSlot,
    row: { uniqueReference: string; status: string; at: number },
  ): ListingOutcome | undefined {
    const passive = slot.passive;
    if (!passive || !this.binding.restingAfterListing) return undefined;
    if (passive.listedAt !== undefined && row.at < passive.listedAt) return 'ignored';
    const resting = this.binding.restingAfterListing(slot.record.machine, row);
    if (resting === null) return undefined;
    passive.listedAt = row.at;
    this.restAgain(slot, passive, resting);
    return 'confirmed';
  }

  /** A resting order confirmed without waking it: its confirmation and next wake move as the machine's would. */
  private restAgain(
    slot: OrderSlot,
    passive: NonNullable<OrderSlot['passive']>,
    resting: RestingOrder,
  ): void {
    passive.confirmedAt = resting.confirmedAt;
    passive.pollDeferrableUntil = resting.pollDeferrableUntil ?? null;
    passive.wakeAt = resting.wakeAt;
    this.wakes.schedule(slot.orderId, resting.wakeAt);
  }

  /**
   * A change of the order's machine that only confirms what is written: not written, but kept in memory as the
   * order's record, in the slot and in the state store's record of the same rev (the order is held once).
   */
  private holdUnwritten(slot: OrderSlot, machine: unknown): void {
    slot.record.machine = machine;
    this.opts.state.amend?.(slot.orderId, slot.record.rev, machine);
  }

  /**
   * The unfinished orders driven here that exist at the exchange, and how many of them had their status last
   * confirmed (by a GET, or a listing showing the same status) longer than `maxAgeMs` ago: the gauge that says
   * whether one API key keeps up.
   */
  confirmationFreshness(now: number, maxAgeMs: number): { open: number; overdue: number } {
    let open = 0;
    let overdue = 0;
    for (const slot of this.slots.values()) {
      // A passivated order is open at the exchange by definition (it rests only while monitoring it).
      const status = slot.passive ?? slot.actor?.status();
      if (!status || ('terminal' in status && (status.terminal || status.uniqueReference === null))) continue;
      open++;
      if (status.confirmedAt === null || now - status.confirmedAt > maxAgeMs) overdue++;
    }
    return { open, overdue };
  }

  /** True when this replica drives an unfinished order of `mode` that exists at the exchange. */
  drivesOpenOrders(mode: string): boolean {
    for (const slot of this.slots.values()) if (this.openReferenceOf(slot, mode) !== null) return true;
    return false;
  }

  /** The unique references of the open exchange orders of `mode` driven here (live or at rest). */
  openReferences(mode: string): string[] {
    const references: string[] = [];
    for (const slot of this.slots.values()) {
      const reference = this.openReferenceOf(slot, mode);
      if (reference !== null) references.push(reference);
    }
    return references;
  }

  /** The order's exchange order when it is of `mode` and open; null otherwise. */
  private openReferenceOf(slot: OrderSlot, mode: string): string | null {
    if (slot.record.mode !== mode || slot.stopped || slot.halted) return null;
    // A passivated order rests only while monitoring its exchange order: it is one (and the listing wakes it).
    if (slot.passive) return slot.record.unique_reference;
    const status = slot.actor?.status();
    return status && status.uniqueReference !== null && !status.terminal ? status.uniqueReference : null;
  }

  /** True while this replica may act for the order: checked as each exchange request leaves the process. */
  mayAct(orderId: string): boolean {
    const slot = this.slots.get(orderId);
    return Boolean(slot && !slot.stopped && !this.writerFailed && this.opts.leases.isValid(orderId));
  }

  /**
   * The order whose durable record names this exchange order, if any: null when it is an order of a partition this
   * replica does not own (its id is not held here).
   */
  ownerOfReference(uniqueReference: string): string | null | undefined {
    const slot = this.slotsByReference.get(uniqueReference);
    if (slot && this.slots.get(slot.orderId) === slot && slot.record.unique_reference === uniqueReference)
      return slot.orderId;
    return this.opts.state.orderIdByReference(uniqueReference);
  }

  /** Keeps slotsByReference in step with a slot's record (called wherever a slot's record is set). */
  private indexReference(slot: OrderSlot): void {
    const reference = slot.record.unique_reference;
    if (reference && this.slotsByReference.get(reference) !== slot)
      this.slotsByReference.set(reference, slot);
  }

  /** A slot leaves the host: it no longer answers for its order or its reference. */
  private dropSlot(slot: OrderSlot): void {
    if (this.slots.get(slot.orderId) === slot) this.slots.delete(slot.orderId);
    const reference = slot.record.unique_reference;
    if (reference && this.slotsByReference.get(reference) === slot) this.slotsByReference.delete(reference);
  }

  // ---- partitions ---------------------------------------------------------------------------------------------

  /**
   * The consumer's current assignment, told at once (not after the queued restores): a lease wait or a restore for
   * a partition that has just been revoked gives up instead of blocking the next owner.
   */
  setAssignment(partitions: readonly number[]): void {
    // A new assignment starts each partition from the group's committed offset: no redelivery is awaited.
    this.redelivering.clear();
    this.assigned.clear();
    for (const partition of partitions) this.assigned.add(partition);
    // Orders of a revoked partition stop now and release their leases: the new owner is waiting for them. So do the
    // leases a restore under way took for orders of such a partition (it skips them).
    for (const [orderId, partition] of this.leasedToRestore) {
      if (this.assigned.has(partition)) continue;
      this.leasedToRestore.delete(orderId);
      this.opts.leases.release(orderId).catch(() => {});
    }
    const held = this.slots.size;
    for (const slot of [...this.slots.values()]) {
      if (this.assigned.has(slot.partition)) continue;
      this.unloadedByAssignment++;
      this.unload(slot).catch((error: unknown) => {
        this.logger.error(
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
    if (this.slots.size === held || this.slots.size * 2 > held) return;
    this.slots = new Map(this.slots);
    this.slotsByReference = new Map(this.slotsByReference);
    this.wakes.compact();
    this.idleChecks.compact();
  }

  /**
   * Partitions moved; resolves with how many orders were unloaded and restored. Revoked ones: their orders are
   * persisted, their leases released and their records forgotten (the store stops reading them). Added ones: read up to a barrier, take the leases of their unfinished orders
   * (waiting for a previous owner to let go), then read up to a second barrier - a previous owner writes its last
   * records before it releases a lease, so only after the lease is ours is the state topic known to hold the order's
   * latest record - and restore from that. The candidates are computed again until a round finds none: a previous
   * owner may have created an order after the first barrier. Safe to call again with the same partitions (a failed
   * restore is retried by the consumer).
   */
  async onAssignment(revoked: number[], added: number[]): Promise<number> {
    const revokedSet = new Set(revoked);
    const leaving = [...this.slots.values()].filter(
      (slot) => revokedSet.has(slot.partition) && !this.assigned.has(slot.partition),
    );
    const held = this.slots.size;
    const unloading = Promise.all(leaving.map((slot) => this.unload(slot)));
    this.compactAfterRevocation(held);
    await unloading;
    const unloaded = this.unloadedByAssignment + leaving.length;
    this.unloadedByAssignment = 0;
    // Their records are the new owner's to read: this replica stops holding them.
    const released = revoked.filter((partition) => !this.assigned.has(partition));
    if (released.length) this.opts.state.release(released);
    this.restoresRunning++;
    try {
      return unloaded + (await this.restoreAdded(added));
    } finally {
      this.restoresRunning--;
    }
  }

  /** Restores the unfinished orders of the added partitions; how many were restored. */
  private async restoreAdded(added: number[]): Promise<number> {
    const attempted = new Set<string>();
    let restored = 0;
    // Where a restore's time goes (an operator's first question when a replica is slow to become ready).
    const took = { readMs: 0, leasesMs: 0, restoreMs: 0 };
    const since = (started: number): number => performance.now() - started;
    const done = (): number => {
      if (restored > 0)
        this.logger.info(
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
      const partitions = added.filter((partition) => this.assigned.has(partition));
      if (partitions.length === 0) return done();
      let started = performance.now();
      await this.opts.state.catchUp(partitions);
      const candidates = partitions
        .flatMap((partition) => this.opts.state.recordsOfPartition(partition))
        .filter(
          (record) =>
            !record.terminal &&
            !this.slots.has(record.order_id) &&
            !this.reloading.has(record.order_id) &&
            !attempted.has(record.order_id),
        );
      took.readMs += since(started);
      if (candidates.length === 0) return done();
      for (const record of candidates) attempted.add(record.order_id);
      started = performance.now();
      const leased = await this.leaseToRestore(candidates);
      took.leasesMs += since(started);
      started = performance.now();
      await this.opts.state.catchUp(partitions);
      took.readMs += since(started);
      started = performance.now();
      for (const { record, fence } of leased) {
        // Released meanwhile: its partition was taken away (setAssignment).
        if (fence === null || !this.leasedToRestore.delete(record.order_id)) continue;
        if (await this.restoreLatest(record.order_id, fence)) {
          restored++;
          this.opts.metrics?.orderRestored();
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
    const leased: Array<{ record: OrderRecord; fence: number | null }> = [];
    let left: readonly OrderRecord[] = candidates;
    const leases = this.opts.leases;
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
            const asked = batch.filter((record) => this.assigned.has(record.partition));
            const grants = await acquireMany(
              asked.map((record) => ({
                orderId: record.order_id,
                minFence: record.fence,
                onLost: () => void this.onLeaseLost(record.order_id),
              })),
            ).catch((error: unknown) => {
              this.logger.warn(
                { orders: asked.length, err: { message: (error as Error).message } },
                'lease acquire of a restore batch failed; asking one order at a time',
              );
              return asked.map(() => null);
            });
            await Promise.all(
              asked.map(async (record, i) => {
                if (!grants[i]) return void notGranted.push(record);
                if (this.assigned.has(record.partition)) {
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
            const fence = await this.acquireLease(record.order_id, record.fence, record.partition);
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
      ...[...this.slots.values()].map((slot) => this.unload(slot)),
      ...leasedOnly.map((orderId) => this.opts.leases.release(orderId).catch(() => {})),
    ]);
  }

  private async unload(slot: OrderSlot): Promise<void> {
    if (slot.stopped) return;
    const suspended = slot.passive && { renewedAt: slot.passive.leaseRenewedAt, fence: slot.fence };
    slot.stopped = true;
    slot.actor?.stop();
    this.dropSlot(slot);
    this.forgetDeadlines(slot);
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
      await this.releases(() =>
        this.opts.leases.releaseSuspended(slot.orderId, fence, renewedAt).catch(() => {}),
      );
    }
    // A kept lease is let go of by order id (whatever grant is kept now), so never after such a wait.
    await this.opts.leases.release(slot.orderId).catch((error: unknown) => {
      this.logger.warn(
        { orderId: slot.orderId, err: { message: (error as Error).message } },
        'lease release failed (it will expire)',
      );
    });
  }

  /**
   * Takes the order's lease, waiting while another replica holds it. Gives up (null) when the order's partition is
   * no longer assigned here, before or after the grant (a grant that lands after a revoke is released at once):
   * the new owner drives the order and must not wait for a lease we keep.
   */
  private async acquireLease(
    orderId: string,
    minFence: number,
    partition: number,
    onWait?: () => void,
    deadline?: number,
  ): Promise<number | null> {
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) onWait?.();
      if (!this.assigned.has(partition)) return null;
      const lost = (): void => void this.onLeaseLost(orderId);
      const grant = await this.opts.leases.acquire(orderId, minFence, lost).catch((error: unknown) => {
        this.logger.warn({ orderId, err: { message: (error as Error).message } }, 'lease acquire failed');
        return null;
      });
      if (grant && !this.assigned.has(partition)) {
        await this.opts.leases.release(orderId).catch(() => {});
        return null;
      }
      if (grant) {
        if (attempt > 0) this.opts.metrics?.leaseTakenOver();
        return grant.fence;
      }
      if (attempt % 10 === 0)
        this.logger.info({ orderId, attempt }, 'waiting for the order lease held by another replica');
      const pause = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5));
      // A command's wait is bounded (commandWaitBoundMs): it gives up between attempts, holding no lease.
      if (deadline !== undefined && performance.now() + pause > deadline)
        throw commandWaitExceeded(`the lease of order ${orderId}`, this.commandWaitBoundMs);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** Restores an order whose lease we hold from its latest durable record; false (lease released) if finished. */
  private async restoreLatest(orderId: string, fence: number, live = false): Promise<boolean> {
    if (this.slots.has(orderId)) return false;
    const record = this.opts.state.get(orderId);
    if (!record || record.terminal || !this.assigned.has(record.partition)) {
      await this.opts.leases.release(orderId).catch(() => {});
      return false;
    }
    this.logger.debug(
      { orderId, partition: record.partition, fence, seq: record.seq, rev: record.rev },
      'restoring the order from its latest record',
    );
    const slot = this.newSlot(record, fence);
    this.slots.set(orderId, slot);
    // The lease may have been lost since its grant (a restore waits for the state to catch up after the grants; a
    // stalled process misses renewals): the keeper's onLost found no slot then and did nothing, so nothing would
    // ever reload the order, and its guard would refuse every write of it. Lost now: dropped and reloaded.
    if (!this.opts.leases.isValid(orderId)) {
      void this.onLeaseLost(orderId, live);
      return false;
    }
    this.indexReference(slot);
    // A resting order is restored as it rests (passivation on): no actor until its deadline or an event, and no
    // record written now. Waking re-creates the actor from this record; its first change is written under the new
    // fence before any call it makes, as every change is.
    const resting =
      this.passivateIdleMs > 0 && !record.halted && !live ? this.binding.resting(record.machine) : null;
    if (resting) {
      slot.durableRev = slot.record.rev;
      this.rest(slot, stateLabel(resting.stateValue), resting, resting.confirmedAt);
      return true;
    }
    try {
      slot.actor = this.binding.restore(record.machine, this.startOptions(slot));
    } catch (error) {
      this.logger.error(
        { orderId, err: { message: (error as Error).message } },
        'could not restore order; it stays unloaded',
      );
      this.dropSlot(slot);
      await this.opts.leases.release(orderId).catch(() => {});
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
    const slot = this.slots.get(orderId);
    if (!slot || slot.stopped) return;
    this.opts.metrics?.leaseLost();
    this.logger.warn({ orderId }, 'order lease lost; reloading the order from its last durable record');
    await this.reload(slot, { live });
  }

  /**
   * Stops the order's slot and loads the order again from its last durable record, under a new grant of its lease
   * (or the one still held, `keepFence`). The load first waits for the slot's last write and for every exchange call
   * of the order still out (bounded: callsSettleTimeoutMs): the restored machine may repeat a call whose outcome its
   * record leaves open (a DeFi create in doubt is repeated after its settle window, a deposit PATCH at once), and it
   * must never do so beside the first one. The load is registered at once, so the order's commands wait for it and
   * no other path (a command's adopt, the orphan sweep) loads it around that wait. Never rejects: a failed load is
   * retried with backoff while the order's partition is ours.
   */
  private async reload(slot: OrderSlot, opts: { live?: boolean; keepFence?: number } = {}): Promise<void> {
    const { orderId, partition } = slot;
    slot.stopped = true;
    slot.actor?.stop();
    this.dropSlot(slot);
    this.forgetDeadlines(slot);
    const settled = (async () => {
      await slot.lastWrite.catch(() => {});
      await this.callsSettled(orderId);
    })();
    for (let attempt = 0; ; attempt++) {
      if (!this.assigned.has(partition)) {
        this.logger.info(
          { orderId, partition },
          'order not reloaded: its partition is no longer assigned here (its next owner restores it)',
        );
        // A lease kept for the reload is not this replica's to keep any more (unload would have let it go).
        if (opts.keepFence !== undefined) {
          await settled;
          await this.opts.leases.release(orderId).catch(() => {});
        }
        return;
      }
      try {
        await this.adopt(orderId, partition, { ...opts, after: settled });
        return;
      } catch (error) {
        this.logger.error(
          { orderId, attempt, err: { message: (error as Error).message } },
          'could not reload the order; retrying',
        );
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(30_000, 500 * 2 ** Math.min(attempt, 6))),
        );
      }
    }
  }

  /** When a wait that starts now in a command handler must end (performance.now() clock). */
  private waitDeadline(): number {
    return performance.now() + this.commandWaitBoundMs;
  }

  /**
   * A command handler's wait for something outside it, bounded by commandWaitBoundMs: past it the command fails as
   * retryable (nothing of it written, its offset not committed) and is delivered again; what it waited for goes on.
   */
  private bounded<T>(wait: Promise<T> | T, what: string): Promise<T> {
    if (!(wait instanceof Promise)) return Promise.resolve(wait);
    return withTimeout(wait, this.commandWaitBoundMs, () =>
      commandWaitExceeded(what, this.commandWaitBoundMs),
    );
  }

  /** Resolves once no exchange call of the order is out here, or after callsSettleTimeoutMs. */
  private callsSettled(orderId: string): Promise<void> {
    return (
      this.opts.callsSettled?.(orderId, this.opts.callsSettleTimeoutMs ?? defaultCallsSettleTimeoutMs) ??
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
  private adopt(
    orderId: string,
    partition: number,
    opts: { live?: boolean; after?: Promise<void>; keepFence?: number } = {},
  ): Promise<void> {
    const pending = this.reloading.get(orderId);
    if (pending) return pending;
    const { live = false, after, keepFence } = opts;
    const load = (async () => {
      await after;
      const record = this.opts.state.get(orderId);
      const kept = keepFence !== undefined && this.opts.leases.isValid(orderId);
      if (!record || record.terminal || this.slots.has(orderId)) {
        if (kept && !this.slots.has(orderId)) await this.opts.leases.release(orderId).catch(() => {});
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
        await this.opts.state.catchUp([partition]);
        await this.restoreLatest(orderId, fence, live);
      } catch (error) {
        await this.opts.leases.release(orderId).catch(() => {});
        throw error;
      }
    })().finally(() => this.reloading.delete(orderId));
    this.reloading.set(orderId, load);
    return load;
  }

  // ---- passivation ---------------------------------------------------------------------------------------------

  /** The order's latest record just became durable: if it stays that way, look at it again after the idle time. */
  private noteQuiet(slot: OrderSlot): void {
    if (this.passivateIdleMs <= 0 || slot.stopped || slot.halted || !slot.actor) return;
    this.idleChecks.schedule(slot.orderId, this.opts.now() + this.passivateIdleMs);
  }

  private forgetDeadlines(slot: OrderSlot): void {
    if (this.slots.get(slot.orderId) === slot) return;
    this.idleChecks.cancel(slot.orderId);
    this.wakes.cancel(slot.orderId);
    slot.passive?.polling?.abort();
    slot.passive = undefined;
  }

  /**
   * An order quiet for the idle time: stops its actor when it only waits - its latest record durable and written
   * from the actor as it is now, nothing pending, no call in flight, still ours - and keeps the record (the one the
   * state store holds too) and the machine's next deadline. The actor's timers go with it.
   */
  private passivateIfIdle(orderId: string): void {
    const slot = this.slots.get(orderId);
    const actor = slot?.actor;
    if (!slot || !actor || slot.passive || slot.stopped || slot.halted || this.writerFailed) return;
    if (slot.persistScheduled || slot.pendingEvents.length > 0 || slot.durableRev !== slot.record.rev) return;
    if (!this.mayAct(orderId)) return;
    // A call still running ends with a transition (and a write that notes the order quiet again); look again
    // after another idle time in any case.
    if (this.opts.callInFlight?.(orderId)) {
      this.noteQuiet(slot);
      return;
    }
    const status = actor.status();
    if (status.terminal) return;
    // Hints waiting for their GET are not in the record (a hint is not written): live until that GET.
    if (status.hintDueAt != null) {
      this.noteQuiet(slot);
      return;
    }
    const resting = this.binding.resting(slot.record.machine);
    if (resting === null) return;
    slot.actor = undefined;
    actor.stop();
    this.rest(slot, stateLabel(JSON.parse(status.state) as unknown), resting, status.confirmedAt);
    this.opts.metrics?.orderPassivated();
  }

  /** The slot keeps its record and a deadline, and nothing of a live actor: no span context, write chain, hint timing. */
  private rest(slot: OrderSlot, label: string, resting: RestingOrder, confirmedAt: number | null): void {
    const { wakeAt } = resting;
    let state = this.stateLabels.get(label);
    if (state === undefined) this.stateLabels.set(label, (state = label));
    // Nothing to do until the next event: the lease is no longer renewed (it runs out on its ttl), and is kept
    // again or taken up again when the order wakes.
    const leaseRenewedAt = this.opts.leases.suspend(slot.orderId);
    slot.passive = {
      state,
      wakeAt,
      pollDeferrableUntil: resting.pollDeferrableUntil ?? null,
      confirmedAt,
      leaseRenewedAt,
      listedAt: undefined,
      polling: undefined,
    };
    slot.origin = undefined;
    slot.lastWrite = settledWrite;
    slot.webhookAt = undefined;
    slot.hintLinks = undefined;
    this.wakes.schedule(slot.orderId, wakeAt);
  }

  private wakeDue(orderId: string): void {
    const slot = this.slots.get(orderId);
    const passive = slot?.passive;
    if (!slot || !passive) return;
    const now = this.opts.now();
    if (passive.wakeAt > now) {
      this.wakes.schedule(orderId, passive.wakeAt);
      return;
    }
    // A routine poll (a safety net: webhooks announce changes) waits while the replica is saturated, in steps, up
    // to the longest interval the interface document recommends since the last confirmation: commands, hints and
    // creations come first. Any other deadline is never put off. Each order keeps its phase within the step (its
    // wake moves by whole steps from where it was due): polls put off together must not all come due together once
    // the load eases, which would block the event loop for seconds (measured: thousands of wakes in one burst, 30
    // leases lost and Redis answers taken for timeouts).
    const until = passive.pollDeferrableUntil;
    if (until !== null && until > now && this.opts.pollsMayWait?.()) {
      this.putPollOff(orderId, passive, now, until, 'saturated');
      return;
    }
    if (!passive.polling && this.pollAtRest(slot, passive, now)) return;
    this.wake(slot, 'timer');
  }

  /**
   * A resting order due for its routine poll and for nothing else is polled without waking it: the host makes the
   * machine's GET (a read: no lease, nothing to make durable first) and hands the answer to the machine's own rules.
   * An answer that only confirms the order (the same status and exchange order) moves its confirmation and next
   * poll, as the machine would, and it rests on: no actor, no lease taken up from Redis, nothing written (as for a
   * live order's confirming poll). Any other answer, or a failure, wakes it and is handed to it (POLLED,
   * POLL_FAILED). While the GET is out the order wakes as before for anything else (an event, its next other
   * deadline), and the GET is then aborted: the live machine polls for itself.
   */
  private pollAtRest(slot: OrderSlot, passive: NonNullable<OrderSlot['passive']>, now: number): boolean {
    const pollResting = this.opts.pollResting;
    if (!pollResting || !this.binding.pollDueAtRest || !this.binding.confirmedByPoll) return false;
    if (slot.stopped || slot.halted || this.writerFailed || !this.assigned.has(slot.partition)) return false;
    const due = this.binding.pollDueAtRest(slot.record.machine, now);
    if (due === null) return false;
    if (this.pollsAtRestOut >= this.maxPollsAtRest) {
      this.deferPollAtCapacity(slot, passive, now, due.nextDeadline);
      return true;
    }
    const polling = new AbortController();
    passive.polling = polling;
    this.pollsAtRestOut++;
    if (due.nextDeadline !== null) {
      passive.wakeAt = due.nextDeadline;
      this.wakes.schedule(slot.orderId, due.nextDeadline);
    }
    const rev = slot.record.rev;
    const current = (): boolean =>
      slot.passive === passive &&
      passive.polling === polling &&
      this.slots.get(slot.orderId) === slot &&
      slot.record.rev === rev &&
      !slot.stopped &&
      !slot.halted &&
      !this.writerFailed;
    const mayAsk = (): void => {
      if (!current()) throw new Error(`order ${slot.orderId} no longer rests here`);
    };
    const origin = fromTraceparent(slot.record.trace_origin);
    const span = tracer.startSpan(
      'order poll at rest',
      {
        root: true,
        kind: SpanKind.INTERNAL,
        attributes: this.orderAttributes(slot),
        ...(origin ? { links: [originLink(origin)] } : {}),
      },
      ROOT_CONTEXT,
    );
    const ctx = withOrderId(trace.setSpan(ROOT_CONTEXT, span), slot.orderId);
    void context
      .with(ctx, () => pollResting(due.request, mayAsk, polling.signal))
      .then(
        (answer) => {
          if (!current()) return;
          passive.polling = undefined;
          context.with(ctx, () => this.takeRestingAnswer(slot, passive, answer));
        },
        (error: unknown) => {
          if (!current()) return;
          passive.polling = undefined;
          if (isStatusReadRefusal(error)) {
            // Refused before it left (the replica's status reads are at capacity): nothing failed at the exchange,
            // so the order is not woken to note a failure; its poll waits a step at rest, as at maxPollsAtRest.
            span.setAttribute('worker.poll.deferred', true);
            passive.wakeAt = this.opts.now();
            this.deferPollAtCapacity(slot, passive, passive.wakeAt, due.nextDeadline);
            return;
          }
          span.recordException(error as Error);
          this.opts.metrics?.polledAtRest?.('failed');
          context.with(ctx, () => this.wakeWith(slot, 'poll', { type: 'POLL_FAILED', error }));
        },
      )
      .finally(() => {
        this.pollsAtRestOut--;
        span.end();
      });
    return true;
  }

  /**
   * A resting order's routine poll, due now (its wake came), put off by one step, never past `bound`: its wake moves
   * by a whole step from where it was due, so each order keeps its phase within the step.
   */
  private putPollOff(
    orderId: string,
    passive: NonNullable<OrderSlot['passive']>,
    now: number,
    bound: number,
    reason: PollDeferralReason,
  ): void {
    const late = now - passive.wakeAt;
    passive.wakeAt = Math.min(bound, now + pollDeferralStepMs - (late % pollDeferralStepMs));
    this.wakes.schedule(orderId, passive.wakeAt);
    this.opts.metrics?.pollDeferred?.(reason);
  }

  /**
   * The routine poll of a resting order while maxPollsAtRest polls at rest are out: it waits a step at rest (a
   * deadline in the timer heap, nothing else held), at its own phase within the step, and never past the order's
   * next other deadline (pollDueAtRest says none is due yet). Unlike a saturated replica's deferral this one may run
   * past 60 s after the last confirmation: the calls already out are what the budget and the exchange can take, and
   * a poll made now would only queue behind them, in memory.
   */
  private deferPollAtCapacity(
    slot: OrderSlot,
    passive: NonNullable<OrderSlot['passive']>,
    now: number,
    nextDeadline: number | null,
  ): void {
    this.putPollOff(
      slot.orderId,
      passive,
      now,
      nextDeadline ?? Number.POSITIVE_INFINITY,
      'calls_at_capacity',
    );
    if (this.pollsAtCapacityWarning(now)) {
      this.logger.warn(
        { pollsAtRestOut: this.pollsAtRestOut, maxPollsAtRest: this.maxPollsAtRest },
        'routine polls of resting orders wait: the polls already out are all the request budget and the exchange take; open orders are confirmed less often than the poll interval (worker_polls_deferred_total{reason="calls_at_capacity"})',
      );
    }
  }

  /** The answer to a poll made at rest: the order rests on when it only confirms it, else it is woken with it. */
  private takeRestingAnswer(
    slot: OrderSlot,
    passive: NonNullable<OrderSlot['passive']>,
    answer: PollAnswer,
  ): void {
    const confirmed = this.binding.confirmedByPoll?.(slot.record.machine, answer) ?? null;
    if (confirmed === null) {
      this.opts.metrics?.polledAtRest?.('news');
      this.wakeWith(slot, 'poll', { type: 'POLLED', output: answer });
      return;
    }
    // As a live order's confirming poll (persist): not written.
    this.holdUnwritten(slot, confirmed.machine);
    this.restAgain(slot, passive, confirmed.resting);
    this.opts.metrics?.polledAtRest?.('confirmed');
  }

  /**
   * Wakes a resting order and hands it an event once it is live (after its lease is taken up again, if need be), in
   * the trace it is called in.
   */
  private wakeWith(slot: OrderSlot, reason: WakeReason, event: OrderActorEvent): void {
    const ctx = context.active();
    const deliver = (): void => {
      const actor = slot.actor;
      if (!actor || this.slots.get(slot.orderId) !== slot || slot.stopped || slot.halted) return;
      if (!this.mayAct(slot.orderId) || !actor.can(event)) return;
      context.with(ctx, () => actor.send(event));
    };
    if (this.wake(slot, reason)) deliver();
    else if (this.resuming.has(slot.orderId)) void this.awake(slot.orderId).then(deliver);
  }

  /**
   * Wakes a passivated order: re-creates its actor from its durable record, exactly as a restore does, once its
   * lease is held again. True when it is live now: its suspended lease had a third of its ttl left on the local
   * clock (kept again without asking Redis: nobody else can have taken it), so the wake is synchronous and the event
   * that woke it is delivered after, in order. False otherwise: stopped or halted, or its lease is being taken up
   * again from Redis (`resuming`; `awake` resolves once that is over), the event to follow then.
   */
  private wake(slot: OrderSlot, reason: WakeReason): boolean {
    if (!slot.passive) return Boolean(slot.actor);
    if (slot.stopped || slot.halted || this.writerFailed) return false;
    // A poll made at rest is not waited for: the live machine polls for itself.
    slot.passive.polling?.abort();
    slot.passive.polling = undefined;
    const orderId = slot.orderId;
    const renewedAt = slot.passive.leaseRenewedAt;
    if (
      renewedAt !== undefined &&
      !this.resuming.has(orderId) &&
      this.opts.leases.keepAgain(orderId, slot.fence, renewedAt, () => void this.onLeaseLost(orderId))
    )
      return this.wakeNow(slot, reason);
    void this.resumeLease(slot, reason);
    return false;
  }

  /** Resolves once a wake under way for the order (its lease taken up again, or a reload) is over. */
  private async awake(orderId: string): Promise<void> {
    await this.resuming.get(orderId);
    await this.reloading.get(orderId);
  }

  /**
   * Takes a resting order's suspended lease up again from Redis, then wakes it. The record the slot rests with is
   * this replica's latest when nobody held the lease in between: the lease was still ours (same fence) or the new
   * fence follows ours directly, and the state topic holds nothing newer for the order. Otherwise (another replica
   * drove it in between, or holds it now) the order is reloaded from Kafka under the lease, as after a lost lease,
   * and comes back live.
   */
  private resumeLease(slot: OrderSlot, reason: WakeReason): Promise<void> {
    const orderId = slot.orderId;
    const pending = this.resuming.get(orderId);
    if (pending) return pending;
    const resume = (async () => {
      const fence = slot.fence;
      const grant = await this.opts.leases
        .resume(orderId, fence, () => void this.onLeaseLost(orderId))
        .catch((error: unknown) => {
          this.logger.warn(
            { orderId, err: { message: (error as Error).message } },
            'could not take the lease of a resting order up again',
          );
          return null;
        });
      const here =
        this.slots.get(orderId) === slot &&
        !slot.stopped &&
        slot.passive !== undefined &&
        this.assigned.has(slot.partition) &&
        !this.writerFailed;
      if (!here) {
        if (grant) await this.opts.leases.release(orderId).catch(() => {});
        return;
      }
      const stored = this.opts.state.get(orderId);
      if (grant && grant.fence <= fence + 1 && (!stored || stored.rev <= slot.record.rev)) {
        slot.fence = grant.fence;
        this.wakeNow(slot, reason);
        return;
      }
      if (grant) await this.opts.leases.release(orderId).catch(() => {});
      this.logger.info(
        { orderId, fence, granted: grant?.fence ?? null },
        'a resting order may have been driven elsewhere meanwhile; reloading it from Kafka',
      );
      // Awaited here, so whoever awaits the wake (`awake`) awaits the reload too.
      await this.onLeaseLost(orderId, true);
    })().finally(() => this.resuming.delete(orderId));
    this.resuming.set(orderId, resume);
    return resume;
  }

  /** The wake itself, once the lease is held: the actor re-created from the record, synchronously. */
  private wakeNow(slot: OrderSlot, reason: WakeReason): boolean {
    if (!slot.passive) return Boolean(slot.actor);
    const { listedAt, polling } = slot.passive;
    this.wakes.cancel(slot.orderId);
    polling?.abort();
    slot.passive = undefined;
    slot.origin = fromTraceparent(slot.record.trace_origin);
    slot.waking = true;
    let actor: OrderActorHandle;
    try {
      actor = slot.actor = this.binding.restore(slot.record.machine, this.startOptions(slot));
    } catch (error) {
      this.logger.error(
        { orderId: slot.orderId, err: { message: (error as Error).message } },
        'could not re-create the passivated order; it is parked (internal_error)',
      );
      this.haltOrder(slot, error);
      return false;
    } finally {
      slot.waking = false;
    }
    // The latest listing that confirmed it at rest (it showed the status the order rests with), as the live machine
    // would have taken it, before the event that woke it. Its record changes with it and is written like any change.
    if (listedAt !== undefined) {
      const { lastStatus } = actor.status();
      const listed: OrderActorEvent = { type: 'LISTED', status: lastStatus ?? '', at: listedAt };
      if (lastStatus !== null && actor.can(listed)) actor.send(listed);
    }
    this.opts.metrics?.orderReactivated(reason);
    // Woken for nothing (a hint its state does not want, a duplicate command): quiet again after the idle time.
    this.noteQuiet(slot);
    return true;
  }

  private newSlot(record: OrderRecord, fence: number): OrderSlot {
    return {
      orderId: record.order_id,
      partition: record.partition,
      fence,
      record: { ...record, fence },
      actor: undefined,
      pendingEvents: [],
      answering: record.answering ?? [],
      lastWrite: Promise.resolve(),
      halted: false,
      persistScheduled: false,
      stopped: false,
      lastNudgeAt: 0,
      origin: fromTraceparent(record.trace_origin),
      webhookAt: undefined,
      durableRev: -1,
      passive: undefined,
      waking: false,
      creating: false,
    };
  }

  /**
   * Runs work of an order that no command started (a machine timer: a poll, a retry; a reconciliation nudge) as a
   * new trace of its own, linked to the command that created the order, with the order named for the logs.
   */
  private inOrderTrace(slot: OrderSlot, name: string, work: () => void): void {
    // A timer while hints wait is theirs (the GET they wait for comes first): their spans are linked, once.
    const hints = name === 'order timer' ? slot.hintLinks : undefined;
    if (hints) slot.hintLinks = undefined;
    const links = [
      ...(slot.origin ? [originLink(slot.origin)] : []),
      ...(hints ?? []).map((c) => ({ context: c })),
    ];
    const span = tracer.startSpan(
      name,
      {
        root: true,
        kind: SpanKind.INTERNAL,
        attributes: this.orderAttributes(slot),
        ...(links.length ? { links } : {}),
      },
      ROOT_CONTEXT,
    );
    try {
      context.with(withOrderId(trace.setSpan(ROOT_CONTEXT, span), slot.orderId), work);
    } finally {
      span.end();
    }
  }

  private orderAttributes(slot: OrderSlot): Attributes {
    const reference = slot.actor?.status().uniqueReference ?? slot.record.unique_reference;
    return {
      [ATTR_ORDER_ID]: slot.orderId,
      ...(reference ? { [ATTR_EXCHANGE_UNIQUE_REFERENCE]: reference } : {}),
    };
  }

  /** A machine transition, as an event of the span that caused it (or, once that ended, a span of its own). */
  private recordTransition(slot: OrderSlot, emitted: EmittedDomainEvent[]): void {
    const span = trace.getActiveSpan();
    if (!span || !slot.actor) return;
    const status = slot.actor.status();
    const attributes: Attributes = {
      ...this.orderAttributes(slot),
      'order.state': status.state,
      ...(emitted.length ? { 'order.event.type': emitted.map((e) => e.type).join(',') } : {}),
    };
    if (span.isRecording()) span.addEvent('order.transition', attributes);
    else tracer.startSpan('order transition', { attributes }).end();
  }

  private startOptions(slot: OrderSlot): Parameters<MachineBinding['create']>[1] {
    return {
      orderId: slot.orderId,
      now: this.opts.now(),
      clock: {
        setTimeout: (fn: (...args: unknown[]) => void, ms: number) =>
          setTimeout(() => this.inOrderTrace(slot, 'order timer', fn), ms),
        clearTimeout: (id: unknown) => clearTimeout(id as NodeJS.Timeout),
      },
      onChange: (emitted) => {
        if (slot.stopped) return;
        // Re-created from the record it was passivated with: the same state, nothing new to write.
        if (slot.waking && emitted.length === 0) return;
        this.recordTransition(slot, emitted);
        slot.pendingEvents.push(...this.answered(slot, emitted));
        this.schedulePersist(slot);
      },
      onError: (error) => {
        this.logger.error(
          { orderId: slot.orderId, err: { message: (error as Error)?.message } },
          'order actor failed unexpectedly; the order is parked (internal_error)',
        );
        this.haltOrder(slot, error);
      },
    };
  }

  private schedulePersist(slot: OrderSlot): void {
    if (slot.persistScheduled || slot.creating) return;
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

  // ---- writing ------------------------------------------------------------------------------------------------

  /**
   * Appends the order's pending events and its current state record to its journal (one transaction), optionally
   * with the offset of the command that caused them and with that command remembered for deduplication.
   */
  private persist(
    slot: OrderSlot,
    extra: {
      offset?: OffsetToCommit;
      command?: [string, string];
      events?: EventPayload[];
      /** The host itself ends the order (an abandoned halted order). */
      terminal?: boolean;
    } = {},
  ): Promise<boolean> {
    if (slot.stopped) return Promise.resolve(false);
    // A change that only starts a status poll is not written (the GET moves nothing; its answer is written unless
    // it only confirms the record), nor one that only confirms what is written (its time and the next poll): the
    // slot keeps that one in memory, with the record of the same rev.
    let machine: unknown;
    if (slot.actor && !slot.record.halted) {
      machine = slot.actor.durable();
      const bare =
        slot.pendingEvents.length === 0 &&
        !extra.events?.length &&
        extra.offset === undefined &&
        extra.command === undefined &&
        extra.terminal !== true;
      if (bare && this.binding.confirmsOnly?.(slot.record.machine, machine)) {
        this.holdUnwritten(slot, machine);
        if (slot.durableRev === slot.record.rev) this.noteQuiet(slot);
        return Promise.resolve(true);
      }
      if (bare && this.binding.unwritten?.(slot.record.machine, machine)) return Promise.resolve(true);
    }
    const events = [
      ...slot.pendingEvents.splice(0, slot.pendingEvents.length),
      ...this.answered(slot, extra.events ?? []),
    ];
    const eventTypes = events.map((event) => event.type);
    // Webhook-to-event latency: from the hint to the first event a later write publishes (the poll's answer). A
    // hint whose poll found nothing new is forgotten after a minute rather than measured against a later change.
    let webhookAt: number | undefined;
    if (slot.webhookAt !== undefined && extra.offset === undefined) {
      if (eventTypes.length) webhookAt = slot.webhookAt;
      if (eventTypes.length || this.opts.now() - slot.webhookAt > 60_000) slot.webhookAt = undefined;
    }
    const status = slot.actor?.status();
    const terminal = extra.terminal === true || (status?.terminal ?? slot.record.terminal);
    // A finished order answers nothing more.
    if (terminal) slot.answering = [];
    const { record, written } = this.opts.journal.append({
      record: slot.record,
      fence: slot.fence,
      events,
      command: extra.command,
      offset: extra.offset,
      changes: {
        unique_reference: status?.uniqueReference ?? slot.record.unique_reference,
        terminal,
        answering: slot.answering,
        // A live actor that writes again has recovered from an earlier halt.
        halted: slot.actor ? null : (slot.record.halted ?? null),
        machine: slot.actor ? (machine ?? slot.actor.durable()) : slot.record.machine,
      },
      guard: () => !slot.stopped && this.opts.leases.isValid(slot.orderId),
    });
    slot.record = record;
    this.indexReference(slot);
    const write = written.then((done) => {
      if (done) {
        this.writeFailures.forget(slot.orderId);
        if (slot.record === record) {
          slot.durableRev = record.rev;
          this.noteQuiet(slot);
        }
        if (eventTypes.length) this.opts.metrics?.eventsCommitted(eventTypes);
        if (eventTypes.length) this.alertUnrecordedDeposits(slot, events);
        if (webhookAt !== undefined) this.opts.metrics?.webhookToEvent((this.opts.now() - webhookAt) / 1000);
      }
      return done;
    });
    // Before anyone waiting for this write (a command's settleCommand, durable()) hears of its failure.
    write.catch((error: unknown) => this.writeFailed(slot, error));
    const lastWrite = write.then((done) => {
      if (!done) throw new Error(`order ${slot.orderId}: a write was refused (lease lost)`);
    });
    lastWrite.catch(() => {}); // observed through durable(); never an unhandled rejection
    slot.lastWrite = lastWrite;
    return write;
  }

  /** The events as published: each that answers an open command carries its command_id (which it may close). */
  private answered<E extends EmittedDomainEvent>(slot: OrderSlot, events: readonly E[]): E[] {
    if (slot.answering.length === 0) return [...events];
    return events.map((event) => {
      const { commandId, open } = answerOf(slot.answering, event.type);
      slot.answering = open;
      return commandId === undefined ? event : { ...event, command_id: commandId };
    });
  }

  /** An end just committed left a deposit unrecorded at the exchange: the operator hears of it (log and metric). */
  private alertUnrecordedDeposits(slot: OrderSlot, events: readonly EventPayload[]): void {
    for (const alert of unrecordedDepositAlerts(events)) {
      this.logger.warn(
        {
          orderId: slot.orderId,
          outcome: alert.outcome,
          reason: alert.reason,
          state: alert.state,
          txHash: alert.txHash,
        },
        'the order ended with a deposit transaction the exchange has not recorded on it: trace it and refund or credit the user (docs/operations.md, "Deposits not recorded")',
      );
      this.opts.metrics?.depositUnrecorded?.(alert.outcome, alert.state);
    }
  }

  /**
   * The order's actor stopped on an error its machine does not model: publish order.parked (internal_error) once,
   * keep the lease and the last good state, and refuse commands but order.settle abandon. A replica that restores
   * the order later (a restart, a fixed build) tries its last good state again.
   */
  private haltOrder(slot: OrderSlot, error: unknown, code = 'actor_error'): void {
    if (slot.stopped || slot.halted) return;
    slot.halted = true;
    // The last written record keeps the last good state (the errored snapshot may be half-way through a step).
    slot.actor = undefined;
    slot.pendingEvents.length = 0;
    const message = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    const at = new Date(this.opts.now()).toISOString();
    const alreadyReported = Boolean(slot.record.halted);
    slot.record = { ...slot.record, halted: { code, message, at } };
    const events: EventPayload[] = alreadyReported
      ? []
      : [
          {
            type: 'order.parked',
            reason: 'internal_error',
            mode: slot.record.mode,
            rate_id: null,
            window_from: at,
            window_to: at,
            attempts: 0,
            tried: [],
            code,
            message,
          },
        ];
    void this.persist(slot, { events }).catch(() => {});
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
    if (this.writerFailed || slot.stopped || this.slots.get(slot.orderId) !== slot) return;
    const { orderId } = slot;
    const err = { message: (error as Error)?.message ?? String(error) };
    if (slot.halted) {
      this.logger.error(
        { orderId, err },
        'the record of a halted order could not be written; it stays halted',
      );
      return;
    }
    const durable = this.opts.state.get(orderId);
    if (this.writeFailures.failed(orderId) === 'halt' && durable) {
      this.logger.error(
        { orderId, err },
        'a write of the order failed again; the order is halted with its last durable state (order.parked internal_error)',
      );
      this.opts.metrics?.writeFailed?.('halted');
      this.writeFailures.forget(orderId);
      slot.actor?.stop();
      slot.record = { ...durable, fence: slot.fence };
      this.haltOrder(slot, error, 'write_failed');
      return;
    }
    this.logger.error(
      { orderId, err },
      'a write of the order failed; reloading the order from its last durable record',
    );
    this.opts.metrics?.writeFailed?.('reloaded');
    void this.reload(slot, { keepFence: slot.fence });
  }

  /**
   * A command's effects were refused at commit time because the order's lease was lost meanwhile: nothing of it
   * (offset included) was written. Throwing makes the consumer deliver the message again once the order is
   * reloaded, so the command is neither lost nor applied twice.
   */
  private async requireWritten(written: boolean, orderId: string, slot?: OrderSlot): Promise<void> {
    if (written) return;
    if (slot) this.dropRefused(slot);
    await this.bounded(this.reloading.get(orderId), `the reload of order ${orderId}`);
    throw new WorkerError(
      'command_not_committed',
      `order ${orderId} lost its lease while a command was applied; it will be redelivered`,
      { retryable: true },
    );
  }

  /**
   * A command's write is queued: with a pipeline depth of 1, waits for it (a refused write throws, so the consumer
   * delivers the command again). Deeper, lets the partition's next command go ahead while it commits, waiting only
   * when that many writes of the partition are in flight; a refused (or failed) write has the partition delivered
   * again from this command once the order is reloaded. The writer commits no later offset of the partition
   * meanwhile, so nothing after it is skipped; what was handled after it comes again and is recognised.
   */
  private async settleCommand(
    offset: OffsetToCommit,
    written: Promise<boolean>,
    slot: OrderSlot | null,
  ): Promise<void> {
    const orderId = slot?.orderId ?? null;
    if (this.pipelineDepth <= 1) {
      const done = await written.catch(async (error: unknown) => {
        // Failed: the order is being reloaded from its last durable record (writeFailed); the command comes again.
        if (orderId !== null)
          await this.bounded(this.reloading.get(orderId), `the reload of order ${orderId}`);
        throw error;
      });
      if (slot) await this.requireWritten(done, slot.orderId, slot);
      return;
    }
    let queue = this.pipelines.get(offset.partition);
    if (!queue) this.pipelines.set(offset.partition, (queue = []));
    const inFlight = queue;
    const settled: Promise<void> = written
      .then(
        (done) => {
          if (done) return undefined;
          if (slot) this.dropRefused(slot);
          this.awaitRedelivery(offset);
          return this.redeliver(orderId, offset, 'its order lost its lease');
        },
        (error: unknown) => {
          this.awaitRedelivery(offset);
          return this.redeliver(orderId, offset, (error as Error)?.message ?? String(error));
        },
      )
      .catch(() => {})
      .finally(() => {
        const index = inFlight.indexOf(settled);
        if (index >= 0) void inFlight.splice(index, 1);
      });
    inFlight.push(settled);
    while (inFlight.length > this.pipelineDepth)
      await this.bounded(inFlight[0], `the writes before it on partition ${offset.partition}`);
  }

  /**
   * A command's write of this slot was refused (its lease no longer held, found at commit time, perhaps before the
   * lease keeper said so): the slot's record holds what never became durable, the command among its remembered
   * ones. The slot goes at once and the order is reloaded from its last durable record, as after a lost lease;
   * else the command, delivered again, would be taken for a duplicate of itself and its offset committed unapplied.
   */
  private dropRefused(slot: OrderSlot): void {
    if (this.slots.get(slot.orderId) === slot && !slot.stopped) void this.onLeaseLost(slot.orderId);
  }

  /** From now until the command at `offset` comes again, its partition decides nothing past it. */
  private awaitRedelivery(offset: OffsetToCommit): void {
    const at = BigInt(offset.offset);
    const pending = this.redelivering.get(offset.partition);
    if (pending === undefined || at < pending) this.redelivering.set(offset.partition, at);
  }

  /**
   * False for a command past a refused one its partition is being delivered again from: it is left undecided,
   * nothing written and no offset committed (it comes again after the refused one; deciding it now could, for
   * instance, refuse a command for an order whose creation is about to be applied again). The refused command
   * itself, or one before it, ends the wait.
   */
  private mayDecide(message: InboundCommandMessage): boolean {
    const pending = this.redelivering.get(message.partition);
    if (pending === undefined) return true;
    if (BigInt(message.offset) > pending) return false;
    this.redelivering.delete(message.partition);
    return true;
  }

  /** A pipelined command was not committed: its partition is delivered again from it, once its order is reloaded. */
  private async redeliver(orderId: string | null, offset: OffsetToCommit, why: string): Promise<void> {
    if (orderId !== null) await this.reloading.get(orderId);
    if (this.writerFailed || !this.assigned.has(offset.partition)) return;
    this.logger.warn(
      { orderId, partition: offset.partition, offset: offset.offset, reason: why },
      'a pipelined command was not committed; its partition is delivered again from it',
    );
    this.opts.rewind?.(offset.partition, offset.offset);
  }

  private finishIfTerminal(slot: OrderSlot): void {
    if (!slot.actor?.status().terminal) return;
    // The terminal record is written by the pending persist; unload once it is durable.
    void slot.lastWrite
      .then(async () => {
        await new Promise((resolve) => setImmediate(resolve));
        await slot.lastWrite;
        if (this.slots.get(slot.orderId) === slot) await this.unload(slot);
      })
      .catch(() => {}); // a refused terminal write: the lease-loss reload takes the order over
  }

  // ---- commands -----------------------------------------------------------------------------------------------

  /**
   * Handles one command message in a consumer span, `process <topic>`, that continues the caller's trace (the
   * message's traceparent); everything the command causes (exchange calls, the Kafka transaction, the events and
   * their traceparent) happens under it, and log lines written meanwhile name the trace and the order.
   */
  handleMessage(message: InboundCommandMessage): Promise<void> {
    const startedAt = performance.now();
    const parent = extractContext(message.headers ?? {});
    const outcome: CommandOutcome = { commandType: 'unknown', result: 'accepted' };
    // A command for an order driven here (a deposit, a routed webhook hint) links to the order's first trace.
    const origin = message.key ? this.slots.get(message.key)?.origin : undefined;
    const span = tracer.startSpan(
      `process ${message.topic}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          [ATTR_MESSAGING_SYSTEM]: 'kafka',
          [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
          [ATTR_MESSAGING_OPERATION_NAME]: 'process',
          [ATTR_MESSAGING_DESTINATION_NAME]: message.topic,
          [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(message.partition),
          [ATTR_MESSAGING_KAFKA_OFFSET]: Number(message.offset),
          ...(message.consumerGroup ? { [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: message.consumerGroup } : {}),
          ...(message.key
            ? { [ATTR_MESSAGING_KAFKA_MESSAGE_KEY]: message.key, [ATTR_ORDER_ID]: message.key }
            : {}),
        },
        ...(origin ? { links: [originLink(origin)] } : {}),
      },
      parent,
    );
    const active = withOrderId(trace.setSpan(parent, span), message.key).setValue(commandOutcomeKey, outcome);
    return context.with(active, async () => {
      this.handlersRunning.set(message, startedAt);
      try {
        await this.processMessage(message, span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        span.setAttribute('error.type', (error as { code?: string }).code ?? (error as Error).name);
        this.opts.metrics?.commandHandled({
          commandType: outcome.commandType,
          result: 'error',
          seconds: (performance.now() - startedAt) / 1000,
        });
        throw error;
      } finally {
        const keyed = message.key ? this.slots.get(message.key) : undefined;
        const reference = keyed?.actor?.status().uniqueReference ?? keyed?.record.unique_reference;
        if (reference) span.setAttribute(ATTR_EXCHANGE_UNIQUE_REFERENCE, reference);
        span.setAttribute('command.result', outcome.result);
        this.logger.debug(
          {
            partition: message.partition,
            offset: message.offset,
            commandType: outcome.commandType,
            result: outcome.result,
          },
          'command handled',
        );
        span.end();
        this.handlersRunning.delete(message);
      }
      this.opts.metrics?.commandHandled({
        commandType: outcome.commandType,
        result: outcome.result,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        seconds: (performance.now() - startedAt) / 1000,
      });
    });
  }

  private async processMessage(message: InboundCommandMessage, span: Span): Promise<void> {
    const offset: OffsetToCommit = {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    };
    const parsed = parseCommand(
      message.value,
      message.key,
      this.maxCommandBytes === undefined ? {} : { maxBytes: this.maxCommandBytes },
    );
    const commandType = parsed.ok ? parsed.command.type : (parsed.commandType ?? 'unknown');
    // The metric label only takes a known type: a producer's typo must not create a new time series.
    noteCommandType((commandTypes as readonly string[]).includes(commandType) ? commandType : 'unknown');
    span.setAttribute('command.type', commandType);
    if (parsed.ok) span.setAttribute('command.id', parsed.command.command_id);
    const forwarding = forwardingOf(message.headers);
    if (forwarding) {
      const { from } = forwarding;
      span.setAttribute('command.forwarded_from', `${from.topic}:${from.partition}:${from.offset}`);
    }
    const named = parsed.ok ? parsed.command.order_id : parsed.orderId;
    // A passivated order comes back to life before its command is decided (a wake that fails on a lost lease hands
    // the order to its reload, which the adoption below joins).
    const passive = named === null ? undefined : this.slots.get(named);
    if (passive?.passive && this.routedHere(passive.orderId, message) && !this.wake(passive, 'command'))
      await this.bounded(this.awake(passive.orderId), `the wake of order ${passive.orderId}`);
    // A command is decided on its order's durable state: one that follows a pipelined command of the same order
    // waits for that command's write (a refused one reloads the order, awaited below).
    const writing = named === null ? undefined : this.slots.get(named);
    if (writing)
      await this.bounded(
        writing.lastWrite.catch(() => {}),
        `the last write of order ${named}`,
      );
    // An unfinished order of this partition that nobody drives here (created by a previous owner after this
    // replica's restore, or whose reload failed): load it before answering its command.
    if (named !== null && this.routedHere(named, message)) {
      const record = this.opts.state.get(named);
      if (record && !record.terminal && !this.slots.has(named))
        await this.bounded(this.adopt(named, message.partition), `the load of order ${named}`);
    }
    if (parsed.ok) await this.bounded(this.reloading.get(parsed.command.order_id), 'its reload');
    const orderId = parsed.ok ? parsed.command.order_id : null;
    const slot = orderId === null ? undefined : this.slots.get(orderId);
    const record = orderId === null ? undefined : (slot?.record ?? this.opts.state.get(orderId));
    if (!this.mayDecide(message)) {
      this.logger.debug(
        { partition: message.partition, offset: message.offset },
        'command left for its partition to deliver again (a command before it was refused)',
      );
      return;
    }
    const arrival = {
      partition: message.partition,
      now: this.opts.now(),
      hops: forwarding?.hops ?? 0,
      canonical: orderId === null ? undefined : this.opts.canonicalPartition?.(orderId),
    };
    const here = slot && { halted: slot.halted, actor: slot.actor };
    const routed = decide(parsed, arrival, record, here);
    // An operator command (order.settle) without a valid operator signature is refused like a malformed one, where
    // its order lives: a copy forwarded there keeps the operator headers, and the signature covers only the key and
    // value, which a forward does not change. So the refusal is part of the order's history like any other.
    const screened =
      routed.kind === 'forward'
        ? { parsed, operator: null }
        : screenOperator(this.opts.operatorAuthority, parsed, message, arrival.now);
    if (!screened.parsed.ok) span.setAttribute('command.rejected', screened.parsed.reason);
    const decision = screened.parsed === parsed ? routed : decide(screened.parsed, arrival, record, here);
    switch (decision.kind) {
      case 'skip':
        noteOutcome(decision.outcome);
        await this.settleCommand(offset, this.opts.journal.commitOffset(offset), null);
        return;
      case 'reject':
        await this.reject(decision.orderId, message, decision.rejection);
        return;
      case 'forward':
        await this.forward(decision.orderId, message, decision.partition);
        return;
      case 'create': {
        // The order's home, shared by the replicas: this replica reads only its own partitions' records, so a
        // create of an order that already lives on another partition is recognised here, not by decide().
        const { command, hash } = decision;
        const home = await this.bounded(
          this.opts.homes?.claim(command.order_id, message.partition),
          `the home of order ${command.order_id}`,
        );
        // Finished, and gone from the state topic after its retention: a create replayed from the commands topic
        // (which may keep it longer) would otherwise start the order again, a second exchange order.
        if (home?.retired) {
          await this.reject(command.order_id, message, retired(command, hash));
          return;
        }
        // Its home is another partition (an order created before homes followed the key, or by such a replica during
        // an upgrade): the create goes there, where the order's record is (or is being) written.
        const away =
          home === undefined
            ? undefined
            : awayDecision(
                command,
                hash,
                message.partition,
                towardsHome({ partition: message.partition, hops: forwarding?.hops ?? 0 }, home.partition),
              );
        if (away?.kind === 'forward') return this.forward(command.order_id, message, away.partition);
        if (away?.kind === 'reject') return this.reject(command.order_id, message, away.rejection);
        await this.createOrder(command, message.partition, offset, hash);
        return;
      }
      case 'abandon': {
        // decide() abandons only a halted order driven here; the offset is committed all the same
        if (!slot) return this.settleCommand(offset, this.opts.journal.commitOffset(offset), null);
        const { command } = decision;
        slot.answering = opened(slot.answering, command.type, command.command_id);
        // Its last good state may hold a deposit the exchange never recorded: the end says so, as the machine's do.
        const unrecorded = this.binding.unrecordedDeposit?.(slot.record.machine) ?? null;
        await this.requireWritten(
          await this.persist(slot, {
            offset,
            command: [command.command_id, decision.hash],
            terminal: true,
            events: [
              ...operatorEvents(command, screened.operator),
              {
                type: 'order.failed',
                reason: 'abandoned_by_operator',
                code: 'operator_abandoned',
                message: 'an operator settled the halted order as abandoned (order.settle)',
                ...(unrecorded === null ? {} : { unrecorded_deposit: unrecorded }),
              },
            ],
          }),
          command.order_id,
          slot,
        );
        if (this.slots.get(slot.orderId) === slot) await this.unload(slot);
        return;
      }
      case 'deliver': {
        const { command, event } = decision;
        // decide() delivers only to an actor driven here; the offset is committed all the same
        if (!slot?.actor) return this.settleCommand(offset, this.opts.journal.commitOffset(offset), null);
        if (command.type === 'order.webhook_hint') {
          // A hint routed here by the replica the webhook reached is taken as one handed over in-process; only its
          // offset is committed, in the next group commit. Not remembered for deduplication either: every webhook
          // gets a fresh command_id, and a hint delivered twice costs at most a GET. Writing the order's state record
          // for each routed hint (and its command_id into the order's deduplication window) cost a record and a
          // place in a transaction ahead of the GET's answer per webhook, on every replica but the one it reached.
          this.takeHint(slot, event, command.received_at);
          await this.settleCommand(offset, this.opts.journal.commitOffset(offset), null);
          return;
        }
        slot.answering = opened(slot.answering, command.type, command.command_id);
        // Who sent an operator command comes first in what it writes (before order.failed, for an abandon).
        slot.pendingEvents.push(...operatorEvents(command, screened.operator));
        slot.actor.send(event);
        await this.settleCommand(
          offset,
          this.persist(slot, { offset, command: [command.command_id, decision.hash] }),
          slot,
        );
        this.finishIfTerminal(slot);
        return;
      }
    }
  }

  private async createOrder(
    command: OrderCreateCommand,
    partition: number,
    offset: OffsetToCommit,
    hash: string,
  ): Promise<void> {
    let waited = false;
    const fence = await this.acquireLease(
      command.order_id,
      0,
      partition,
      () => (waited = true),
      this.waitDeadline(),
    );
    if (fence === null) {
      throw new WorkerError(
        'partition_revoked',
        `partition ${partition} was revoked while order ${command.order_id} was being created`,
        { retryable: true },
      );
    }
    // Another replica may have been handed the same order.create (a rebalance while one consumer was stuck, or
    // evicted without knowing) and created the order. Read the partition up to now before creating whenever that
    // is possible: the lease was not free at once (another holder, or Redis unreachable), or it was free but had
    // been held before (its fence counter is past 1: a holder that finished and let go moments ago, whose records
    // this replica may not have read yet). A second life of one order_id would mean a second exchange order. If it
    // exists, let go and have the command delivered again, which loads that order. A brand-new order (fence 1,
    // granted at once) skips the round trip.
    if (waited || fence > 1) {
      await this.opts.state.catchUp([partition]);
      if (this.opts.state.get(command.order_id)) {
        await this.opts.leases.release(command.order_id).catch(() => {});
        throw new WorkerError(
          'order_created_meanwhile',
          `order ${command.order_id} was created by another replica while this one waited for its lease; the command will be delivered again`,
          { retryable: true },
        );
      }
    }
    this.logger.debug({ orderId: command.order_id, partition, fence, waited }, 'creating the order');
    const record: OrderRecord = {
      v: 1,
      order_id: command.order_id,
      partition,
      fence,
      rev: 0,
      seq: 0,
      updated_at: new Date(this.opts.now()).toISOString(),
      mode: command.mode,
      create_hash: hash,
      commands: [[command.command_id, hash]],
      unique_reference: null,
      terminal: false,
      machine: null,
    };
    const origin = toTraceparent(trace.getSpanContext(context.active()));
    if (origin) record.trace_origin = origin;
    const slot = this.newSlot(record, fence);
    slot.answering = opened([], command.type, command.command_id);
    this.slots.set(command.order_id, slot);
    // The first record is written once the order's local first steps have run (the address check, and whatever
    // follows at once: a quote slot that needs none, the intent of a CeFi order's create), not at the state it
    // starts in: one record fewer per order, and one commit less to wait for before its first call. Its calls to
    // the exchange wait for it (durable() waits for lastWrite, which is this write until it is made), and it is
    // queued before this partition's next command is taken, so its offset commits in order. Those steps are
    // promise continuations (the currency catalog is cached): a nextTick queued from here runs once the microtask
    // queue has drained, without waiting for a turn of the event loop (setImmediate: a turn behind every I/O
    // callback ready at that moment, on a path each of a partition's creates takes one after the other).
    const first = Promise.withResolvers<void>();
    first.promise.catch(() => {}); // observed through durable(), as every lastWrite; never an unhandled rejection
    slot.lastWrite = first.promise;
    slot.creating = true;
    try {
      slot.actor = this.binding.create(command, this.startOptions(slot));
      await new Promise((resolve) => process.nextTick(resolve));
    } catch (error) {
      // Nothing to write: whoever waits for this order's writes (its next command) must not wait for ever.
      first.resolve();
      throw error;
    } finally {
      slot.creating = false;
    }
    const written = this.persist(slot, { offset });
    first.resolve(slot.lastWrite === first.promise ? undefined : slot.lastWrite);
    await this.settleCommand(offset, written, slot);
    this.finishIfTerminal(slot);
  }

  /**
   * Forwards a command to its order's home partition (command-routing.ts): a copy of the message (key, value and
   * headers, plus where it first arrived) written with the offset where it arrived, in one transaction.
   */
  private async forward(orderId: string, message: InboundCommandMessage, partition: number): Promise<void> {
    noteOutcome('forwarded');
    const offset: OffsetToCommit = {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    };
    this.logger.debug(
      { orderId, from: { partition: message.partition, offset: message.offset }, to: partition },
      "command forwarded to its order's partition",
    );
    const copy = {
      topic: message.topic,
      partition,
      key: orderId,
      value: message.value?.toString('utf8') ?? '',
      headers: forwardedHeaders(message.headers, offset),
    };
    await this.settleCommand(offset, this.opts.journal.forwardCommand(copy, offset), null);
  }

  /** The command arrived where its order lives: keyed by the order and on the order's partition (when it exists). */
  private routedHere(orderId: string, message: InboundCommandMessage): boolean {
    if (message.key !== orderId) return false;
    const record = this.slots.get(orderId)?.record ?? this.opts.state.get(orderId);
    return !record || record.partition === message.partition;
  }

  /**
   * Publishes command.rejected: a bounded excerpt and a hash of the command as received, never the command itself.
   * For an existing order, when the command arrived where the order lives (its key and partition), it is part of
   * the order's history (next seq, recorded in the state record so a redelivery is not answered twice). Otherwise
   * - no such order, or a null-keyed or mis-keyed or unroutable command naming an order of another partition, which
   * this replica must not touch - it carries seq 0 and an event_id from its source offset.
   */
  private async reject(
    orderId: string | null,
    message: InboundCommandMessage,
    body: Rejection,
  ): Promise<void> {
    noteOutcome('rejected', body.reason);
    this.logger.warn(
      {
        orderId,
        commandId: body.command_id,
        reason: body.reason,
        detail: body.message,
        source: { partition: message.partition, offset: message.offset },
      },
      'command rejected',
    );
    const offset: OffsetToCommit = {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    };
    const { remember, ...fields } = body;
    const forwarded = forwardingOf(message.headers);
    const rejected: EventPayload = {
      type: 'command.rejected',
      ...fields,
      ...rejectedCommandFingerprint(message.value),
      source: { topic: message.topic, partition: message.partition, offset: message.offset },
      ...(forwarded ? { forwarded_from: forwarded.from } : {}),
    };
    const inHistory = orderId !== null && this.routedHere(orderId, message);
    const slot = inHistory ? this.slots.get(orderId) : undefined;
    if (slot && orderId) {
      const written = await this.persist(slot, {
        offset,
        events: [rejected],
        ...(remember ? { command: remember } : {}),
      });
      await this.requireWritten(written, orderId, slot);
      return;
    }
    const record = inHistory ? this.opts.state.get(orderId) : undefined;
    if (record && orderId) {
      // A finished order (no actor): extend its history under a fresh lease.
      const fence = await this.acquireLease(
        orderId,
        record.fence,
        record.partition,
        undefined,
        this.waitDeadline(),
      );
      if (fence === null) {
        throw new WorkerError(
          'partition_revoked',
          `partition ${record.partition} was revoked while a command for ${orderId} was refused`,
          { retryable: true },
        );
      }
      const { written } = this.opts.journal.append({
        record,
        fence,
        events: [rejected],
        command: remember,
        offset,
        guard: () => this.opts.leases.isValid(orderId),
      });
      // Let go of whatever the write did: a lease kept after a failed write would hold the order for ever.
      const done = await written.finally(() => this.opts.leases.release(orderId).catch(() => {}));
      await this.requireWritten(done, orderId);
      return;
    }
    const eventId = `rejected:${message.topic}:${message.partition}:${message.offset}`;
    await this.opts.journal.publishUnsequenced(orderId, rejected, eventId, offset);
  }
}
