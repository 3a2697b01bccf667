// Hosts one actor per order on this replica: creates them from commands, restores them from the state topic when
// a partition is assigned, and writes every transition (its events with consecutive seq numbers, the new state
// record, and the offset of the command that caused it) in one Kafka transaction. An order is driven only while
// this replica holds its Redis lease; a record is written only while the lease is still valid (fencing).
import { createHash } from 'node:crypto';
import {
  context,
  createContextKey,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { OrderCommand, OrderCreateCommand } from '../contract/commands.ts';
import { commandTypes, parseCommand } from '../contract/commands.ts';
import { orderEvent, rejectedCommandFingerprint, type RejectionReason } from '../contract/events.ts';
import type { InboundCommandMessage } from '../kafka/command-consumer.ts';
import type { OrderRecord, OrderStateStore } from '../kafka/order-state-store.ts';
import type { OffsetToCommit, OutboundRecord, TransactionalWriter } from '../kafka/transactional-writer.ts';
import { WorkerError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';
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
import type {
  EmittedDomainEvent,
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
  OrderBarrier,
} from './machine-binding.ts';

export interface OrderLeases {
  /**
   * Acquires the lease with a fencing token above minFence; null when another owner holds it. `onLost` runs (once,
   * never synchronously) if the lease is lost while held: expired, taken, or Redis restarted empty.
   */
  acquire(orderId: string, minFence: number, onLost: () => void): Promise<{ fence: number } | null>;
  release(orderId: string): Promise<void>;
  /** False once the lease may have passed to someone else (lost, expired, or unrenewed for too long). */
  isValid(orderId: string): boolean;
}

export interface OrderHostOptions {
  store: OrderStateStore;
  writer: TransactionalWriter;
  leases: OrderLeases;
  /** Builds the machine binding; the host hands it its barrier (durability, lease validity, reference owners). */
  binding: (barrier: OrderBarrier) => MachineBinding;
  /** Aborted when the Kafka writer failed for good: every order actor stops at once (see halt). */
  writerFailed?: AbortSignal;
  topics: { events: string; state: string };
  logger: Logger;
  now: () => number;
  maxRememberedCommands?: number;
  /**
   * Resolves once no exchange call of the order is in progress (or after the bound). The lease is released only
   * after it, so a request already sent ends before another replica may act for the order.
   */
  callsSettled?: (orderId: string, timeoutMs: number) => Promise<void>;
  /** The bound of that wait: the longest exchange call (a DeFi create: 30 s) plus a margin. Default 35 000. */
  callsSettleTimeoutMs?: number;
  /** Commands above this many bytes are refused unread (MAX_COMMAND_BYTES). */
  maxCommandBytes?: number;
  /** Told of commands handled, events committed, leases and restores (metrics). */
  metrics?: OrderHostMetrics;
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
}

/** How a command ended, filled in while it is handled (read by handleMessage for its span and metrics). */
interface CommandOutcome {
  commandType: string;
  result: 'accepted' | 'duplicate' | 'rejected' | 'consumed';
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
  /** When a webhook hint asked for the poll now under way (epoch ms), for the webhook-to-event latency. */
  webhookAt: number | undefined;
}

const tracer = trace.getTracer('exchange-order-worker');

/** A machine state value as a label: `"a"`, `{"a":"b"}` -> `a.b`, parallel regions joined by `+`. */
function stateLabel(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object')
    return Object.entries(value)
      .map(([key, inner]) => `${key}.${stateLabel(inner)}`)
      .join('+');
  return 'unknown';
}

/** JSON with object keys sorted at every depth (undefined members dropped), so equal content hashes equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const contentHashPrefix = 'v2:';

/** The content of a command (all but its command_id), canonicalised at every depth and hashed. */
export function commandContentHash(command: OrderCommand): string {
  const { command_id: _ignored, ...content } = command;
  return contentHashPrefix + createHash('sha256').update(canonicalJson(content)).digest('hex').slice(0, 32);
}

/**
 * Hashes stored before "v2:" (f4cae36 and earlier) covered top-level fields only. They are still honoured for the
 * orders that carry them, so a redelivered command of such an order is recognised after an upgrade.
 */
function legacyContentHash(command: OrderCommand): string {
  const { command_id: _ignored, ...content } = command;
  const canonical = JSON.stringify(content, Object.keys(content).sort());
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

/** Whether a stored content hash (either version) names this command's content. */
export function sameCommandContent(stored: string, command: OrderCommand): boolean {
  return stored.startsWith(contentHashPrefix)
    ? stored === commandContentHash(command)
    : stored === legacyContentHash(command);
}

function toActorEvent(command: OrderCommand, at: number): OrderActorEvent | null {
  switch (command.type) {
    case 'order.submit_deposit':
      return { type: 'SUBMIT_DEPOSIT', txHash: command.tx_hash, at };
    case 'order.cancel':
      return { type: 'CANCEL', at };
    case 'order.webhook_hint':
      return command.status === undefined
        ? { type: 'WEBHOOK_HINT', at }
        : { type: 'WEBHOOK_HINT', status: command.status, at };
    case 'order.settle':
      return command.resolution === 'adopt'
        ? { type: 'SETTLE', resolution: 'adopt', uniqueReference: command.unique_reference, at }
        : { type: 'SETTLE', resolution: 'abandon', at };
    default:
      return null;
  }
}

export class OrderHost {
  private readonly slots = new Map<string, OrderSlot>();
  /** Command partitions assigned to this replica (an order is driven only while its partition is here). */
  private readonly assigned = new Set<number>();
  /** Orders being (re)loaded after a lost lease: their commands wait instead of being refused. */
  private readonly reloading = new Map<string, Promise<void>>();
  private readonly opts: OrderHostOptions;
  private readonly binding: MachineBinding;
  private readonly logger: Logger;
  private readonly maxCommands: number;
  private writerFailed = false;
  private readonly maxCommandBytes: number | undefined;
  readonly counters = { commands: 0, rejected: 0, events: 0, restored: 0, leaseLost: 0, reconcileNudges: 0 };

  constructor(opts: OrderHostOptions) {
    this.opts = opts;
    this.logger = opts.logger.child({ component: 'order-host' });
    this.maxCommands = opts.maxRememberedCommands ?? 200;
    this.maxCommandBytes = opts.maxCommandBytes;
    this.binding = opts.binding({
      durable: (orderId) => this.durable(orderId),
      mayAct: (orderId) => this.mayAct(orderId),
      ownerOfReference: (uniqueReference) => this.ownerOfReference(uniqueReference),
    });
    const writerFailed = opts.writerFailed;
    writerFailed?.addEventListener('abort', () => this.halt(writerFailed.reason as Error), { once: true });
  }

  get activeOrders(): number {
    return this.slots.size;
  }

  /** Unfinished orders driven here, per machine state (`a.b` for a nested state value). */
  openOrdersByState(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const slot of this.slots.values()) {
      const status = slot.actor?.status();
      if (!status || status.terminal) continue;
      const state = stateLabel(JSON.parse(status.state) as unknown);
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
  }

  /**
   * The reconciliation sweep's safety net: an order on the exchange whose status was last confirmed longer than
   * `maxAgeMs` ago (its poll is overdue) is nudged to poll now. The machine polls on its own every poll interval;
   * this only fires when something held a poll back. Returns how many orders were nudged.
   */
  reconcile(now: number, maxAgeMs: number): number {
    let nudged = 0;
    for (const slot of this.slots.values()) {
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
    this.counters.reconcileNudges += nudged;
    if (nudged) this.opts.metrics?.reconcileNudged(nudged);
    return nudged;
  }

  /** True while this replica may act for the order: checked as each exchange request leaves the process. */
  mayAct(orderId: string): boolean {
    const slot = this.slots.get(orderId);
    return Boolean(slot && !slot.stopped && !this.writerFailed && this.opts.leases.isValid(orderId));
  }

  /** The order whose durable record names this exchange order, if any. */
  ownerOfReference(uniqueReference: string): string | undefined {
    for (const slot of this.slots.values()) {
      if (slot.record.unique_reference === uniqueReference) return slot.orderId;
    }
    return this.opts.store.orderIdByReference(uniqueReference);
  }

  // ---- partitions ---------------------------------------------------------------------------------------------

  /**
   * The consumer's current assignment, told at once (not after the queued restores): a lease wait or a restore for
   * a partition that has just been revoked gives up instead of blocking the next owner.
   */
  setAssignment(partitions: readonly number[]): void {
    this.assigned.clear();
    for (const partition of partitions) this.assigned.add(partition);
    // Orders of a revoked partition stop now and release their leases: the new owner is waiting for them.
    for (const slot of [...this.slots.values()]) {
      if (this.assigned.has(slot.partition)) continue;
      this.unload(slot).catch((error: unknown) => {
        this.logger.error(
          { orderId: slot.orderId, err: { message: (error as Error).message } },
          'could not unload the order of a revoked partition',
        );
      });
    }
  }

  /**
   * Partitions moved. Revoked ones: their orders are persisted and their leases released. Added ones: read up to a
   * barrier, take the leases of their unfinished orders (waiting for a previous owner to let go), then read up to a
   * second barrier - a previous owner writes its last records before it releases a lease, so only after the lease
   * is ours is the state topic known to hold the order's latest record - and restore from that. The candidates are
   * computed again until a round finds none: a previous owner may have created an order after the first barrier.
   * Safe to call again with the same partitions (a failed restore is retried by the consumer).
   */
  async onAssignment(revoked: number[], added: number[]): Promise<void> {
    const revokedSet = new Set(revoked);
    await Promise.all(
      [...this.slots.values()]
        .filter((slot) => revokedSet.has(slot.partition) && !this.assigned.has(slot.partition))
        .map((slot) => this.unload(slot)),
    );
    const attempted = new Set<string>();
    for (;;) {
      const partitions = added.filter((partition) => this.assigned.has(partition));
      if (partitions.length === 0) return;
      await this.opts.store.catchUp(partitions);
      const candidates = partitions
        .flatMap((partition) => this.opts.store.recordsOfPartition(partition))
        .filter(
          (record) =>
            !record.terminal &&
            !this.slots.has(record.order_id) &&
            !this.reloading.has(record.order_id) &&
            !attempted.has(record.order_id),
        );
      if (candidates.length === 0) return;
      for (const record of candidates) attempted.add(record.order_id);
      const leased = await Promise.all(
        candidates.map(async (record) => ({
          record,
          fence: await this.acquireLease(record.order_id, record.fence, record.partition),
        })),
      );
      await this.opts.store.catchUp(partitions);
      for (const { record, fence } of leased) {
        if (fence === null) continue;
        if (await this.restoreLatest(record.order_id, fence)) {
          this.counters.restored++;
          this.opts.metrics?.orderRestored();
        }
      }
    }
  }

  /** Stops driving every order (shutdown): flushes their last records and releases their leases. */
  async unloadAll(): Promise<void> {
    await Promise.all([...this.slots.values()].map((slot) => this.unload(slot)));
  }

  private async unload(slot: OrderSlot): Promise<void> {
    if (slot.stopped) return;
    slot.stopped = true;
    slot.actor?.stop();
    this.slots.delete(slot.orderId);
    await slot.lastWrite.catch(() => {});
    // A request that already left (stopping the actor does not recall a POST in flight) must end before the
    // lease does: the next owner's lookup must not run while it can still land.
    await this.opts.callsSettled?.(slot.orderId, this.opts.callsSettleTimeoutMs ?? 35_000);
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
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** Math.min(attempt, 5))));
    }
  }

  /** Restores an order whose lease we hold from its latest durable record; false (lease released) if finished. */
  private async restoreLatest(orderId: string, fence: number): Promise<boolean> {
    if (this.slots.has(orderId)) return false;
    const record = this.opts.store.get(orderId);
    if (!record || record.terminal || !this.assigned.has(record.partition)) {
      await this.opts.leases.release(orderId).catch(() => {});
      return false;
    }
    const slot = this.newSlot(record, fence);
    this.slots.set(orderId, slot);
    try {
      slot.actor = this.binding.restore(record.machine, this.startOptions(slot));
    } catch (error) {
      this.logger.error(
        { orderId, err: { message: (error as Error).message } },
        'could not restore order; it stays unloaded',
      );
      this.slots.delete(orderId);
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
  async onLeaseLost(orderId: string): Promise<void> {
    const slot = this.slots.get(orderId);
    if (!slot || slot.stopped) return;
    this.counters.leaseLost++;
    this.opts.metrics?.leaseLost();
    this.logger.warn({ orderId }, 'order lease lost; reloading the order from its last durable record');
    slot.stopped = true;
    slot.actor?.stop();
    this.slots.delete(orderId);
    await slot.lastWrite.catch(() => {});
    for (let attempt = 0; this.assigned.has(slot.partition); attempt++) {
      try {
        await this.adopt(orderId, slot.partition);
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

  /**
   * Starts driving an unfinished order of an assigned partition that no replica drives here (its lease was lost,
   * or a previous owner created it after this replica's restore): takes its lease, reads up to a barrier, restores.
   * One load per order at a time; its commands wait for it. Throws (retryable) when the partition goes meanwhile.
   */
  private adopt(orderId: string, partition: number): Promise<void> {
    const pending = this.reloading.get(orderId);
    if (pending) return pending;
    const load = (async () => {
      const record = this.opts.store.get(orderId);
      if (!record || record.terminal || this.slots.has(orderId)) return;
      const fence = await this.acquireLease(orderId, record.fence, partition);
      if (fence === null) {
        throw new WorkerError(
          'partition_revoked',
          `partition ${partition} was revoked while order ${orderId} was being loaded`,
          { retryable: true },
        );
      }
      try {
        // Whoever held the lease meanwhile wrote its last records before letting go: read up to them first.
        await this.opts.store.catchUp([partition]);
        if (await this.restoreLatest(orderId, fence)) this.counters.restored++;
      } catch (error) {
        await this.opts.leases.release(orderId).catch(() => {});
        throw error;
      }
    })().finally(() => this.reloading.delete(orderId));
    this.reloading.set(orderId, load);
    return load;
  }

  private newSlot(record: OrderRecord, fence: number): OrderSlot {
    return {
      orderId: record.order_id,
      partition: record.partition,
      fence,
      record: { ...record, fence },
      actor: undefined,
      pendingEvents: [],
      lastWrite: Promise.resolve(),
      halted: false,
      persistScheduled: false,
      stopped: false,
      lastNudgeAt: 0,
      origin: fromTraceparent(record.trace_origin),
      webhookAt: undefined,
    };
  }

  /**
   * Runs work of an order that no command started (a machine timer: a poll, a retry; a reconciliation nudge) as a
   * new trace of its own, linked to the command that created the order, with the order named for the logs.
   */
  private inOrderTrace(slot: OrderSlot, name: string, work: () => void): void {
    const span = tracer.startSpan(
      name,
      {
        root: true,
        kind: SpanKind.INTERNAL,
        attributes: this.orderAttributes(slot),
        ...(slot.origin ? { links: [{ context: slot.origin }] } : {}),
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
        this.recordTransition(slot, emitted);
        slot.pendingEvents.push(...emitted);
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
    if (slot.persistScheduled) return;
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

  private envelope(
    orderId: string | null,
    seq: number,
    eventId: string,
  ): { event_id: string; order_id: string | null; seq: number; occurred_at: string } {
    return {
      event_id: eventId,
      order_id: orderId,
      seq,
      occurred_at: new Date(this.opts.now()).toISOString(),
    };
  }

  /**
   * An event for TOPIC_EVENTS, keyed by order_id. Its partition is left to the key's hash (not tied to the command
   * partition): the events topic may have been created with another partition count, and one key always lands on
   * one partition, which is what keeps an order's events in order.
   */
  private eventRecord(orderId: string | null, event: Record<string, unknown>): OutboundRecord {
    const checked = orderEvent.safeParse(event);
    if (!checked.success) {
      // A machine/contract mismatch is a bug; publish anyway (losing the event is worse) and say so loudly.
      this.logger.error(
        { type: event['type'], problem: checked.error.issues[0]?.message },
        'event does not match its published schema',
      );
    }
    return {
      topic: this.opts.topics.events,
      key: orderId ?? String(event['event_id']),
      value: JSON.stringify(event),
      headers: { 'event-type': String(event['type']) },
    };
  }

  /**
   * Writes the order's pending events and its current state record (one transaction), optionally with the offset
   * of the command that caused them and with that command remembered for deduplication.
   */
  private persist(
    slot: OrderSlot,
    extra: {
      offset?: OffsetToCommit;
      command?: [string, string];
      events?: Array<Record<string, unknown>>;
      /** The host itself ends the order (an abandoned halted order). */
      terminal?: boolean;
    } = {},
  ): Promise<boolean> {
    if (slot.stopped) return Promise.resolve(false);
    const records: OutboundRecord[] = [];
    let seq = slot.record.seq;
    const emitted = slot.pendingEvents.splice(0, slot.pendingEvents.length);
    for (const event of [...emitted, ...(extra.events ?? [])]) {
      seq++;
      const full = { ...event, ...this.envelope(slot.orderId, seq, `${slot.orderId}:${seq}`) };
      records.push(this.eventRecord(slot.orderId, { type: event.type, ...full }));
    }
    this.counters.events += records.length;
    const eventTypes = [...emitted, ...(extra.events ?? [])].map((event) => String(event['type']));
    // Webhook-to-event latency: from the hint to the first event a later write publishes (the poll's answer). A
    // hint whose poll found nothing new is forgotten after a minute rather than measured against a later change.
    let webhookAt: number | undefined;
    if (slot.webhookAt !== undefined && extra.offset === undefined) {
      if (eventTypes.length) webhookAt = slot.webhookAt;
      if (eventTypes.length || this.opts.now() - slot.webhookAt > 60_000) slot.webhookAt = undefined;
    }
    const status = slot.actor?.status();
    const commands = extra.command
      ? [...slot.record.commands, extra.command].slice(-this.maxCommands)
      : slot.record.commands;
    const record: OrderRecord = {
      ...slot.record,
      fence: slot.fence,
      rev: slot.record.rev + 1,
      seq,
      updated_at: new Date(this.opts.now()).toISOString(),
      commands,
      unique_reference: status?.uniqueReference ?? slot.record.unique_reference,
      terminal: status?.terminal ?? slot.record.terminal,
      // A live actor that writes again has recovered from an earlier halt.
      halted: slot.actor ? null : (slot.record.halted ?? null),
      machine: slot.actor ? slot.actor.durable() : slot.record.machine,
      ...(extra.terminal ? { terminal: true } : {}),
    };
    slot.record = record;
    records.push({
      topic: this.opts.topics.state,
      key: slot.orderId,
      partition: slot.partition,
      value: JSON.stringify(record),
    });
    const write = this.opts.writer
      .write(
        records,
        extra.offset ? [extra.offset] : [],
        () => !slot.stopped && this.opts.leases.isValid(slot.orderId),
      )
      .then((written) => {
        // A record refused by the lease guard was never written: the store keeps the last durable one.
        if (written) {
          this.opts.store.apply(record);
          if (eventTypes.length) this.opts.metrics?.eventsCommitted(eventTypes);
          if (webhookAt !== undefined)
            this.opts.metrics?.webhookToEvent((this.opts.now() - webhookAt) / 1000);
        }
        return written;
      });
    const lastWrite = write.then((written) => {
      if (!written) throw new Error(`order ${slot.orderId}: a write was refused (lease lost)`);
    });
    lastWrite.catch(() => {}); // observed through durable(); never an unhandled rejection
    slot.lastWrite = lastWrite;
    return write;
  }

  /**
   * The order's actor stopped on an error its machine does not model: publish order.parked (internal_error) once,
   * keep the lease and the last good state, and refuse commands but order.settle abandon. A replica that restores
   * the order later (a restart, a fixed build) tries its last good state again.
   */
  private haltOrder(slot: OrderSlot, error: unknown): void {
    if (slot.stopped || slot.halted) return;
    slot.halted = true;
    // The last written record keeps the last good state (the errored snapshot may be half-way through a step).
    slot.actor = undefined;
    slot.pendingEvents.length = 0;
    const message = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    const at = new Date(this.opts.now()).toISOString();
    const alreadyReported = Boolean(slot.record.halted);
    slot.record = { ...slot.record, halted: { code: 'actor_error', message, at } };
    const events: Array<Record<string, unknown>> = alreadyReported
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
            code: 'actor_error',
            message,
          },
        ];
    void this.persist(slot, { events }).catch(() => {});
  }

  /**
   * A command's effects were refused at commit time because the order's lease was lost meanwhile: nothing of it
   * (offset included) was written. Throwing makes the consumer deliver the message again once the order is
   * reloaded, so the command is neither lost nor applied twice.
   */
  private async requireWritten(written: boolean, orderId: string): Promise<void> {
    if (written) return;
    await this.reloading.get(orderId);
    throw new WorkerError(
      'command_not_committed',
      `order ${orderId} lost its lease while a command was applied; it will be redelivered`,
      { retryable: true },
    );
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
      },
      parent,
    );
    const active = withOrderId(trace.setSpan(parent, span), message.key).setValue(commandOutcomeKey, outcome);
    return context.with(active, async () => {
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
        const reference = message.key ? this.slots.get(message.key)?.actor?.status().uniqueReference : null;
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
    this.counters.commands++;
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
    if (!parsed.ok) span.setAttribute('command.rejected', parsed.reason);
    const named = parsed.ok ? parsed.command.order_id : parsed.orderId;
    // An unfinished order of this partition that nobody drives here (created by a previous owner after this
    // replica's restore, or whose reload failed): load it before answering its command.
    if (named !== null && this.routedHere(named, message)) {
      const record = this.opts.store.get(named);
      if (record && !record.terminal && !this.slots.has(named)) await this.adopt(named, message.partition);
    }
    if (!parsed.ok) {
      await this.reject(parsed.orderId, message, {
        command_id: parsed.commandId,
        command_type: parsed.commandType,
        reason: parsed.reason,
        message: parsed.message,
      });
      return;
    }
    const command = parsed.command;
    await this.reloading.get(command.order_id);
    const hash = commandContentHash(command);
    const rejection = (reason: RejectionReason, text: string) => ({
      command_id: command.command_id,
      command_type: command.type,
      reason,
      message: text,
      remember: [command.command_id, hash] as [string, string],
    });
    const existing = this.slots.get(command.order_id)?.record ?? this.opts.store.get(command.order_id);
    if (existing && existing.partition !== message.partition) {
      // Its key is right but a producer chose another partition: the order is driven where its record lives.
      await this.reject(
        command.order_id,
        message,
        rejection(
          'malformed',
          `order ${command.order_id} lives on partition ${existing.partition}; this command arrived on partition ${message.partition} (let the key choose the partition)`,
        ),
      );
      return;
    }

    if (command.type === 'order.create') {
      if (existing) {
        if (sameCommandContent(existing.create_hash, command)) {
          // The same order.create again (redelivery, replay, retrying producer): nothing to do.
          noteOutcome('duplicate');
          await this.opts.writer.write([], [offset]);
          return;
        }
        await this.reject(
          command.order_id,
          message,
          rejection('order_exists', `order ${command.order_id} already exists with different content`),
        );
        return;
      }
      await this.createOrder(command, message.partition, offset, hash);
      return;
    }

    if (!existing) {
      await this.reject(
        command.order_id,
        message,
        rejection('unknown_order', `no order ${command.order_id} exists`),
      );
      return;
    }
    const seen = existing.commands.find(([id]) => id === command.command_id);
    if (seen) {
      if (sameCommandContent(seen[1], command)) {
        noteOutcome('duplicate');
        await this.opts.writer.write([], [offset]);
        return;
      }
      await this.reject(
        command.order_id,
        message,
        rejection(
          'duplicate_conflict',
          `command_id ${command.command_id} was already used with different content`,
        ),
      );
      return;
    }
    const slot = this.slots.get(command.order_id);
    if (slot?.halted && command.type === 'order.settle' && command.resolution === 'abandon') {
      // An order halted by a bug has no machine to decide: the operator's abandon ends it here.
      await this.requireWritten(
        await this.persist(slot, {
          offset,
          command: [command.command_id, hash],
          terminal: true,
          events: [
            {
              type: 'order.failed',
              reason: 'abandoned_by_operator',
              code: 'operator_abandoned',
              message: 'an operator settled the halted order as abandoned (order.settle)',
            },
          ],
        }),
        command.order_id,
      );
      if (this.slots.get(slot.orderId) === slot) await this.unload(slot);
      return;
    }
    if (command.type === 'order.submit_deposit' && slot?.actor?.status().depositTxHash === command.tx_hash) {
      // The same deposit hash again (under a new command_id): already accepted, nothing more to do.
      noteOutcome('duplicate');
      await this.opts.writer.write([], [offset]);
      return;
    }
    const event = toActorEvent(command, this.opts.now());
    const refusal =
      !slot?.actor || !event
        ? `${command.type} is not allowed: order ${command.order_id} is ${existing.terminal ? 'finished' : slot?.halted ? 'halted by an internal error (see order.parked; only order.settle abandon is possible)' : 'not active on this replica'}`
        : slot.actor.can(event)
          ? undefined
          : `${command.type} is not allowed while the order is in state ${slot.actor.status().state}`;
    if (refusal !== undefined || !slot?.actor || !event) {
      // A webhook hint for an order that cannot poll now is simply consumed: it never changes state by itself.
      if (command.type === 'order.webhook_hint') {
        noteOutcome('consumed');
        await this.opts.writer.write([], [offset]);
      } else await this.reject(command.order_id, message, rejection('not_allowed', refusal ?? 'not allowed'));
      return;
    }
    if (command.type === 'order.webhook_hint') slot.webhookAt = Date.parse(command.received_at);
    slot.actor.send(event);
    await this.requireWritten(
      await this.persist(slot, { offset, command: [command.command_id, hash] }),
      command.order_id,
    );
    this.finishIfTerminal(slot);
  }

  private async createOrder(
    command: OrderCreateCommand,
    partition: number,
    offset: OffsetToCommit,
    hash: string,
  ): Promise<void> {
    let waited = false;
    const fence = await this.acquireLease(command.order_id, 0, partition, () => (waited = true));
    if (fence === null) {
      throw new WorkerError(
        'partition_revoked',
        `partition ${partition} was revoked while order ${command.order_id} was being created`,
        { retryable: true },
      );
    }
    if (waited) {
      // The lease was not free at once (another holder, or Redis unreachable): while this replica waited, another
      // one may have been handed the same order.create (a rebalance while this consumer was stuck) and created the
      // order. Read the partition up to now before creating: a second life of one order_id would mean a second
      // exchange order. If it exists, let go and have the command delivered again, which loads that order.
      await this.opts.store.catchUp([partition]);
      if (this.opts.store.get(command.order_id)) {
        await this.opts.leases.release(command.order_id).catch(() => {});
        throw new WorkerError(
          'order_created_meanwhile',
          `order ${command.order_id} was created by another replica while this one waited for its lease; the command will be delivered again`,
          { retryable: true },
        );
      }
    }
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
    this.slots.set(command.order_id, slot);
    slot.actor = this.binding.create(command, this.startOptions(slot));
    await this.requireWritten(await this.persist(slot, { offset }), command.order_id);
    this.finishIfTerminal(slot);
  }

  /** The command arrived where its order lives: keyed by the order and on the order's partition (when it exists). */
  private routedHere(orderId: string, message: InboundCommandMessage): boolean {
    if (message.key !== orderId) return false;
    const record = this.slots.get(orderId)?.record ?? this.opts.store.get(orderId);
    return !record || record.partition === message.partition;
  }

  /**
   * Publishes command.rejected: a bounded excerpt and a hash of the command as received, never the command itself.
   * For an existing order, when the command arrived where the order lives (its key and partition), it is part of
   * the order's history (next seq, recorded in the state record so a redelivery is not answered twice). Otherwise
   * - no such order, or a null-keyed or mis-keyed or misrouted command naming an order of another partition, which
   * this replica must not touch - it carries seq 0 and an event_id from its source offset.
   */
  private async reject(
    orderId: string | null,
    message: InboundCommandMessage,
    body: {
      command_id: string | null;
      command_type: string | null;
      reason: RejectionReason;
      message: string;
      /** The parsed command's [command_id, content hash], remembered so the same command again is a no-op. */
      remember?: [string, string];
    },
  ): Promise<void> {
    this.counters.rejected++;
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
    const rejected = {
      type: 'command.rejected',
      ...fields,
      ...rejectedCommandFingerprint(message.value),
      source: { topic: message.topic, partition: message.partition, offset: message.offset },
    };
    const inHistory = orderId !== null && this.routedHere(orderId, message);
    const slot = inHistory ? this.slots.get(orderId) : undefined;
    if (slot && orderId) {
      const written = await this.persist(slot, {
        offset,
        events: [rejected],
        ...(remember ? { command: remember } : {}),
      });
      await this.requireWritten(written, orderId);
      return;
    }
    const record = inHistory ? this.opts.store.get(orderId) : undefined;
    if (record && orderId) {
      // A finished order (no actor): extend its history under a fresh lease.
      const fence = await this.acquireLease(orderId, record.fence, record.partition);
      if (fence === null) {
        throw new WorkerError(
          'partition_revoked',
          `partition ${record.partition} was revoked while a command for ${orderId} was refused`,
          { retryable: true },
        );
      }
      const seq = record.seq + 1;
      const commands = remember ? [...record.commands, remember].slice(-this.maxCommands) : record.commands;
      const next: OrderRecord = {
        ...record,
        fence,
        rev: record.rev + 1,
        seq,
        commands,
        updated_at: new Date(this.opts.now()).toISOString(),
      };
      const event = { ...rejected, ...this.envelope(orderId, seq, `${orderId}:${seq}`) };
      const written = await this.opts.writer.write(
        [
          this.eventRecord(orderId, event),
          {
            topic: this.opts.topics.state,
            key: orderId,
            partition: record.partition,
            value: JSON.stringify(next),
          },
        ],
        [offset],
        () => this.opts.leases.isValid(orderId),
      );
      if (written) this.opts.store.apply(next);
      await this.opts.leases.release(orderId).catch(() => {});
      await this.requireWritten(written, orderId);
      return;
    }
    const eventId = `rejected:${message.topic}:${message.partition}:${message.offset}`;
    const event = { ...rejected, ...this.envelope(orderId, 0, eventId) };
    await this.opts.writer.write([this.eventRecord(orderId, event)], [offset]);
  }
}
