// One order as the fleet tools show it (the read API, `inspect list`, the console): what an operator asks first,
// decided purely from the order's latest state record (the compacted state topic). The record's machine is read
// loosely (its context evolves with the machine); a field it does not have is null, never made up. Nothing here is
// a secret: the record holds no key, token or webhook secret, and only the fields below leave this module.
import { z } from 'zod';

/** The states an order waits in for an operator (machines/resume-keys.ts: `parked` is an older spelling). */
const parkedStates = new Set(['creating.parked', 'parked']);
const finishedStates = new Set(['completed', 'refunded', 'canceled', 'failed']);

/** `parked`: waits for an operator (create in doubt, or halted by a bug); `open`: moving; `finished`. */
export type OrderPhase = 'open' | 'parked' | 'finished';

export interface ParkedEvidence {
  /** When it was parked (ISO). */
  since: string;
  reason: 'create_outcome_unknown' | 'internal_error';
  /** Earliest and latest time the exchange order may have been created (ISO), when known. */
  window_from: string | null;
  window_to: string | null;
  /** POST /orders/ attempts made. */
  attempts: number | null;
  rate_id: string | null;
  /** GET /orders/ scans made for the create in doubt (CeFi). */
  lookup_scans: number | null;
  last_failure: { code: string; message: string } | null;
}

/** What the order asked the exchange for: the facts an operator matches an exchange order against. */
export interface OrderIntent {
  deposit_currency: string | null;
  withdraw_currency: string | null;
  deposit_amount: string | null;
  withdraw_amount: string | null;
  withdraw_address: string | null;
  withdraw_address_extra_id: string | null;
  refund_address: string | null;
  /** The exchange order's deposit address, once the exchange order is known. */
  deposit_address: string | null;
}

export interface OrderSummary {
  order_id: string;
  /** The machine state it is stored in (a resume key, e.g. `creating.parked`, `open`, `completed`). */
  state: string;
  phase: OrderPhase;
  seq: number;
  mode: string;
  /** The state partition (= commands partition) the order lives on. */
  partition: number;
  /** Fencing token of the lease holder that wrote the record. */
  fence: number;
  unique_reference: string | null;
  /** The last exchange status the worker confirmed. */
  exchange_status: string | null;
  /** When the record last changed (ISO): any event, command or intent written. */
  updated_at: string;
  /** When the order entered what it waits in now (ISO): parked since, else its last change. */
  since: string;
  deadlines: {
    payment_deadline: string | null;
    next_poll_at: string | null;
    retry_at: string | null;
  };
  parked: ParkedEvidence | null;
  intent: OrderIntent;
  /** W3C traceparent of the command that created the order, when recorded. */
  trace_origin: string | null;
}

/** The state record's fields read here (src/kafka/order-state-store.ts orderRecordSchema), loosely. */
export const summaryRecordSchema = z
  .object({
    order_id: z.string(),
    partition: z.number().int(),
    fence: z.number().int(),
    rev: z.number().int(),
    seq: z.number().int(),
    updated_at: z.string(),
    mode: z.string(),
    unique_reference: z.string().nullable(),
    terminal: z.boolean(),
    halted: z.object({ code: z.string(), message: z.string(), at: z.string() }).loose().nullish(),
    machine: z.unknown(),
    trace_origin: z.string().optional(),
  })
  .loose();
export type SummaryRecord = z.infer<typeof summaryRecordSchema>;

type Loose = Record<string, unknown>;

function objectAt(value: unknown, key: string): Loose | null {
  const inner = typeof value === 'object' && value !== null ? (value as Loose)[key] : undefined;
  return typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? (inner as Loose) : null;
}

function textAt(value: Loose | null, key: string): string | null {
  const inner = value?.[key];
  return typeof inner === 'string' ? inner : null;
}

function numberAt(value: Loose | null, key: string): number | null {
  const inner = value?.[key];
  return typeof inner === 'number' && Number.isFinite(inner) ? inner : null;
}

function iso(ms: number | null): string | null {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

/** The state shown for a record: its machine's resume key (`finished` or `unknown` without one), marked when halted. */
function shownState(record: SummaryRecord, machineState: string): string {
  return record.halted && !record.terminal ? `${machineState} (halted)` : machineState;
}

function machineOf(record: SummaryRecord): Loose | null {
  return typeof record.machine === 'object' && record.machine !== null ? (record.machine as Loose) : null;
}

function machineStateOf(record: SummaryRecord, machine: Loose | null): string {
  return textAt(machine, 'resumeFrom') ?? (record.terminal ? 'finished' : 'unknown');
}

function phaseOf(record: SummaryRecord, machineState: string): OrderPhase {
  return record.terminal
    ? 'finished'
    : (record.halted ?? null) !== null || parkedStates.has(machineState)
      ? 'parked'
      : 'open';
}

/** When an order parked by the machine (not halted) was parked, as its summary states it. */
function parkedSince(record: SummaryRecord, context: Loose | null): string {
  return iso(numberAt(context, 'parkedAt')) ?? record.updated_at;
}

/** Epoch ms of a time as a record or summary writes it; an unreadable one counts as 0 (what lists sort it as). */
export function msOf(text: string): number {
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : 0;
}

/** Where an order is, read from its record alone, without a whole summary: what lists filter and sort by. */
export interface OrderPlace {
  state: string;
  phase: OrderPhase;
  /** `since` of its summary in epoch ms (0 when unreadable). */
  sinceMs: number;
}

export function placeOf(record: SummaryRecord): OrderPlace {
  const machine = machineOf(record);
  const machineState = machineStateOf(record, machine);
  const phase = phaseOf(record, machineState);
  const since =
    phase !== 'parked'
      ? record.updated_at
      : record.halted
        ? record.halted.at
        : parkedSince(record, objectAt(machine, 'context'));
  return { state: shownState(record, machineState), phase, sinceMs: msOf(since) };
}

/** The phase of an order, read from its record alone (what the gauges count by). */
export function phaseOfRecord(record: SummaryRecord): OrderPhase {
  return phaseOf(record, machineStateOf(record, machineOf(record)));
}

/** `2026-12-03T10:00:00.000Z`: the form `Date.prototype.toISOString` writes, which sorts as the times it names. */
function isCanonicalIso(text: string): boolean {
  return text.length === 24 && text[10] === 'T' && text[23] === 'Z' && text[4] === '-' && text[19] === '.';
}

/**
 * Whether an open (not parked) order's `since` (its record's `updated_at`) is at or before `atMs`, as `placeOf`'s
 * `sinceMs <= atMs` (an unreadable time counts as 0). `atIso` is `atMs` in canonical form: a canonical `updated_at`
 * is compared as text, without parsing it (the gauges ask it of every open order on every scrape).
 */
export function openSinceAtOrBefore(record: SummaryRecord, atMs: number, atIso: string | null): boolean {
  const text = record.updated_at;
  if (atIso !== null && isCanonicalIso(text)) return text <= atIso;
  return msOf(text) <= atMs;
}

/** `ms` in canonical ISO form when it has one (years 0000-9999), else null. */
export function canonicalIsoOf(ms: number): string | null {
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return null;
  const text = date.toISOString();
  return isCanonicalIso(text) ? text : null;
}

/** The summary of one state record. Throws nothing: an unreadable machine gives a summary with nulls. */
export function summarizeOrder(record: SummaryRecord): OrderSummary {
  // Read by hand, not by a schema: every record a replica reads passes here, and the store validated its shape.
  const machine = machineOf(record);
  const context = objectAt(machine, 'context');
  const state = machineStateOf(record, machine);
  const halted = record.halted ?? null;
  const phase = phaseOf(record, state);
  let parked: ParkedEvidence | null = null;
  if (phase === 'parked') {
    const pending = objectAt(context, 'pendingIntent');
    const intent = textAt(pending, 'kind') === 'create' ? pending : null;
    const failure = objectAt(context, 'lastFailure');
    const failedAt = numberAt(failure, 'at');
    const startedAt = numberAt(intent, 'startedAt');
    const lastFailure =
      failure && textAt(failure, 'code') !== null
        ? { code: textAt(failure, 'code') ?? '', message: textAt(failure, 'message') ?? '' }
        : null;
    parked = halted
      ? {
          since: halted.at,
          reason: 'internal_error',
          window_from: null,
          window_to: null,
          attempts: numberAt(context, 'createAttempts'),
          rate_id: null,
          lookup_scans: numberAt(context, 'lookupScans'),
          last_failure: { code: halted.code, message: halted.message },
        }
      : {
          since: parkedSince(record, context),
          reason: 'create_outcome_unknown',
          // As order.parked states it (machines/order-event-builders.ts parkedEventOf).
          window_from: iso(startedAt ?? failedAt),
          window_to: iso(
            startedAt === null ? failedAt : failedAt === null ? startedAt : Math.max(startedAt, failedAt),
          ),
          attempts: numberAt(context, 'createAttempts'),
          rate_id: textAt(intent, 'rateId'),
          lookup_scans: numberAt(context, 'lookupScans'),
          last_failure: lastFailure,
        };
  }
  const request = objectAt(context, 'request');
  const open = phase === 'open';
  return {
    order_id: record.order_id,
    state: shownState(record, state),
    phase,
    seq: record.seq,
    mode: record.mode,
    partition: record.partition,
    fence: record.fence,
    unique_reference: record.unique_reference,
    exchange_status: textAt(context, 'lastStatus'),
    updated_at: record.updated_at,
    since: parked?.since ?? record.updated_at,
    deadlines: {
      payment_deadline: iso(numberAt(context, 'paymentDeadline')),
      next_poll_at: open ? iso(numberAt(context, 'nextPollAt')) : null,
      retry_at: open ? iso(numberAt(context, 'retryAt')) : null,
    },
    parked,
    intent: {
      deposit_currency: textAt(request, 'depositCurrency'),
      withdraw_currency: textAt(request, 'withdrawCurrency'),
      deposit_amount: textAt(request, 'depositAmount'),
      withdraw_amount: textAt(request, 'withdrawAmount'),
      withdraw_address: textAt(request, 'withdrawAddress'),
      withdraw_address_extra_id: textAt(request, 'withdrawAddressExtraId'),
      refund_address: textAt(request, 'refundAddress'),
      deposit_address: textAt(objectAt(context, 'order'), 'depositAddress'),
    },
    trace_origin: record.trace_origin ?? null,
  };
}

/** Whether a state name is one an order finishes in. */
export function isFinishedState(state: string): boolean {
  return finishedStates.has(state);
}
