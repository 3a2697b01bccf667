// An order's life on this replica, as one model: a slot is in exactly one phase, and each phase carries only what it
// has (an actor while creating or live, a deadline and a suspended lease while resting). This module is the only
// one that assigns a slot's phase: every other module moves a slot through the transitions below (docs/decisions/
// slot-phase-model.md) and reads it through the accessors.
import type { OpenCommand } from '../../contract/command-answers.ts';
import type { SpanContext } from '@opentelemetry/api';
import type { OrderRecord } from '../../kafka/order-state-store.ts';
import { fromTraceparent } from '../../telemetry/propagation.ts';
import type { EmittedDomainEvent, OrderActorHandle } from '../machine-binding.ts';

/**
 * What an order traces with while it is not at rest: the span context of the command that created it (later traces
 * of it, polls and commands, link to it), when a webhook hint asked for the poll now under way or waiting (epoch ms,
 * for the webhook-to-event latency), and the spans of the hints waiting for their GET (WEBHOOK_COALESCE_MS: the
 * machine timer that sends it links them, so a webhook's trace leads to the GET that confirmed it; at most
 * maxHintLinks). A resting order has none: it comes back from the record when the order wakes.
 */
export interface Trail {
  readonly origin: SpanContext | undefined;
  webhookAt: number | undefined;
  hintLinks: SpanContext[] | undefined;
}

/** Loaded from a record, no actor yet: being restored, or a create whose actor did not start. */
export interface Loaded {
  readonly kind: 'loaded';
  readonly trail: Trail;
}

/** A new order whose actor runs its local first steps: its first record is not written yet (createOrder writes it). */
export interface Creating {
  readonly kind: 'creating';
  /** Undefined while the binding builds it. */
  readonly actor: OrderActorHandle | undefined;
  readonly trail: Trail;
}

/** Driven by its actor. */
export interface Live {
  readonly kind: 'live';
  readonly actor: OrderActorHandle;
  readonly trail: Trail;
}

/**
 * Passivated (no actor): the state it waits in (for metrics), when its machine is due, until when that wake may be
 * put off while the replica is saturated (a routine poll only), and when its suspended lease was last renewed if it
 * was still valid then (no renewals while at rest).
 */
export interface Resting {
  readonly kind: 'resting';
  readonly state: string;
  wakeAt: number;
  pollDeferrableUntil: number | null;
  confirmedAt: number | null;
  readonly leaseRenewedAt: number | undefined;
  /**
   * The time of the latest bulk listing that confirmed the order while it rested (its deadlines above already moved
   * for it): handed to the machine when it wakes, as the listing it would have seen.
   */
  listedAt: number | undefined;
  /** Its routine poll, made without waking it (pollAtRest), while that GET is out: aborted if it wakes. */
  polling: AbortController | undefined;
}

/** Its actor is being re-created from the record it rested with: that start is not a change to write. */
export interface Waking {
  readonly kind: 'waking';
  readonly trail: Trail;
}

/** The actor stopped on an unmodelled error; the slot keeps the lease and refuses all but order.settle abandon. */
export interface Halted {
  readonly kind: 'halted';
  readonly trail: Trail;
}

/** No longer driven here (unloaded, reloading, or the writer failed): what it was is kept for its last status. */
export interface Stopped {
  readonly kind: 'stopped';
  readonly was: Exclude<SlotPhase, Stopped>;
}

export type SlotPhase = Loaded | Creating | Live | Resting | Waking | Halted | Stopped;

export interface OrderSlot {
  readonly orderId: string;
  readonly partition: number;
  fence: number;
  record: OrderRecord;
  /** Read through the accessors below; assigned only here. */
  readonly phase: SlotPhase;
  pendingEvents: EmittedDomainEvent[];
  /**
   * The commands accepted and not answered yet ([type, command_id], contract/command-answers.ts): an event that
   * answers one carries its command_id. Written with the record, so a restored order still answers them.
   */
  answering: OpenCommand[];
  /** The latest write of this order: resolves once committed, rejects when it was refused or failed. */
  lastWrite: Promise<void>;
  persistScheduled: boolean;
  /** When the reconciliation sweep last nudged this order (at most one nudge per max age). */
  lastNudgeAt: number;
  /** The rev of the latest record once it is committed (and nothing newer was appended meanwhile). */
  durableRev: number;
}

/** The lastWrite of every passivated slot: nothing pending (one object, not one per order). */
const settledWrite: Promise<void> = Promise.resolve();

type Mutable = { phase: SlotPhase };

function enter(slot: OrderSlot, phase: SlotPhase): void {
  (slot as Mutable).phase = phase;
}

/** A trail as the record gives it: the origin it was created with, no hint waiting. */
function trailFrom(record: OrderRecord): Trail {
  return { origin: fromTraceparent(record.trace_origin), webhookAt: undefined, hintLinks: undefined };
}

/** The trail a slot carries into its next phase: its own, or (after a rest) the record's. */
function carried(slot: OrderSlot): Trail {
  return trailOf(slot) ?? trailFrom(slot.record);
}

// ---- transitions ------------------------------------------------------------------------------------------------

/** A slot for an order loaded from (or created with) this record under this fence: Loaded. */
export function newSlot(record: OrderRecord, fence: number): OrderSlot {
  return {
    orderId: record.order_id,
    partition: record.partition,
    fence,
    record: { ...record, fence },
    phase: { kind: 'loaded', trail: trailFrom(record) },
    pendingEvents: [],
    answering: record.answering ?? [],
    lastWrite: Promise.resolve(),
    persistScheduled: false,
    lastNudgeAt: 0,
    durableRev: -1,
  };
}

/** Loaded -> Creating: the actor is being built (undefined), then runs its first steps (set). */
export function toCreating(slot: OrderSlot, actor: OrderActorHandle | undefined): void {
  enter(slot, { kind: 'creating', actor, trail: carried(slot) });
}

/** Loaded, Creating or Waking -> Live. */
export function toLive(slot: OrderSlot, actor: OrderActorHandle): void {
  enter(slot, { kind: 'live', actor, trail: carried(slot) });
}

/** Creating -> Loaded: the actor did not start. */
export function toLoaded(slot: OrderSlot): void {
  enter(slot, { kind: 'loaded', trail: carried(slot) });
}

/**
 * Loaded or Live -> Resting: the slot keeps its record and a deadline, and nothing of a live actor (no span context,
 * write chain or hint timing).
 */
export function toResting(slot: OrderSlot, rest: Omit<Resting, 'kind' | 'listedAt' | 'polling'>): Resting {
  const resting: Resting = { kind: 'resting', ...rest, listedAt: undefined, polling: undefined };
  enter(slot, resting);
  slot.lastWrite = settledWrite;
  return resting;
}

/** Resting -> Waking: its actor is re-created from the record (its span context comes back with it). */
export function toWaking(slot: OrderSlot): void {
  enter(slot, { kind: 'waking', trail: trailFrom(slot.record) });
}

/** Any phase but Stopped -> Halted (the actor, if any, is dropped; the record keeps the last good state). */
export function toHalted(slot: OrderSlot): void {
  enter(slot, { kind: 'halted', trail: carried(slot) });
}

/** Any phase -> Stopped (once). */
export function toStopped(slot: OrderSlot): void {
  if (slot.phase.kind !== 'stopped') enter(slot, { kind: 'stopped', was: slot.phase });
}

// ---- accessors --------------------------------------------------------------------------------------------------

/** The phase a stopped slot stopped in; the phase itself otherwise. */
function lastPhase(slot: OrderSlot): Exclude<SlotPhase, Stopped> {
  return slot.phase.kind === 'stopped' ? slot.phase.was : slot.phase;
}

/** The order's actor while it is creating or live (a stopped one's, for its last status); else undefined. */
export function actorOf(slot: OrderSlot): OrderActorHandle | undefined {
  const phase = lastPhase(slot);
  return phase.kind === 'live' || phase.kind === 'creating' ? phase.actor : undefined;
}

/** What the order traces with while it is not at rest (or was when it was stopped); undefined at rest. */
export function trailOf(slot: OrderSlot): Trail | undefined {
  const phase = lastPhase(slot);
  return phase.kind === 'resting' ? undefined : phase.trail;
}

/**
 * The span context of the command that created the order, which every trace of the order links to: its trail's,
 * or at rest (no trail) its record's.
 */
export function originOf(slot: OrderSlot): SpanContext | undefined {
  return carried(slot).origin;
}

/** What the order rests with while it rests (or rested when it was stopped); else undefined. */
export function restOf(slot: OrderSlot): Resting | undefined {
  const phase = lastPhase(slot);
  return phase.kind === 'resting' ? phase : undefined;
}

export function isStopped(slot: OrderSlot): boolean {
  return slot.phase.kind === 'stopped';
}

/** Halted, or stopped while halted. */
export function isHalted(slot: OrderSlot): boolean {
  return lastPhase(slot).kind === 'halted';
}

/** Stopped or halted: nothing may be done for the order but an operator's abandon. */
export function isOut(slot: OrderSlot): boolean {
  return isStopped(slot) || isHalted(slot);
}

export function isWaking(slot: OrderSlot): boolean {
  return slot.phase.kind === 'waking';
}

export function isCreating(slot: OrderSlot): boolean {
  return slot.phase.kind === 'creating';
}
