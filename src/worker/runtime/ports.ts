// The order host's ports and what it reports: the leases, homes and state it reads through narrow interfaces, its
// options, and the metrics it tells of. Every runtime module and the host itself take these types from here; the
// host re-exports them (its public surface).
import type { OperatorAuthority } from '../operator-authority.ts';
import type { OrderRecord } from '../../kafka/order-state-store.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { MachineBinding, OrderBarrier, PollAnswer } from '../machine-binding.ts';
import type { FetchOrderInput } from '../../../machines/order-types.ts';
import type { Journal } from '../order-journal.ts';
import type { OrderLeases } from '../ports.ts';

// The ports adapters fill (the leases) live below the runtime, in src/worker/ports.ts; the runtime takes them here.
export type { LeaseRequest, ListingOutcome, OrderLeases } from '../ports.ts';

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
  /** An unfinished order nobody drove was found and taken up by the orphan sweep. */
  orphanTakenUp(): void;
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

/** Why a resting order's routine poll was put off (a metric label). */
export type PollDeferralReason = 'saturated' | 'calls_at_capacity';

/** What brought a passivated order back to life (a metric label). */
export type WakeReason = 'timer' | 'hint' | 'command' | 'reconcile' | 'listing' | 'poll';

/** How often the orphan sweep looks (an orphan is taken up on its second sighting, so within two intervals). */
export const orphanSweepIntervalMs = 30_000;
