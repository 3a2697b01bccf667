// What the inspector knows about one order, decided purely from what it read: the durable state record (state
// topic), the order's events (events topic, with the trace id of each from its `traceparent` header) and the
// lease holder (Redis). No I/O here, and the clock comes in as `now`, so every answer is testable as it is.
// Records are read loosely: the machine's context evolves, and an inspector must still show what it can.
import { z } from 'zod';

/** An event as published: the envelope every event carries, the rest kept as it is. */
export const publishedEventSchema = z
  .object({
    type: z.string(),
    event_id: z.string(),
    order_id: z.string().nullable(),
    seq: z.number().int(),
    occurred_at: z.string(),
  })
  .loose();
export type PublishedEvent = z.infer<typeof publishedEventSchema>;

export interface EventOnTopic {
  event: PublishedEvent;
  partition: number;
  offset: string;
  /** W3C trace id from the message's `traceparent` header, when the worker wrote one. */
  traceId: string | null;
}

/** The fields of the persisted machine the inspector reads (machines/order-persistence.ts, PersistedOrder). */
const persistedMachineSchema = z
  .object({
    resumeFrom: z.string(),
    stateValue: z.unknown(),
    done: z.boolean().optional(),
    savedAt: z.number().optional(),
    context: z
      .object({
        retryAt: z.number().nullable().optional(),
        nextPollAt: z.number().nullable().optional(),
        paymentDeadline: z.number().nullable().optional(),
        paymentDeadlineChecked: z.boolean().optional(),
        depositRetryAt: z.number().nullable().optional(),
        attempt: z.number().optional(),
        createAttempts: z.number().optional(),
        lastStatus: z.string().nullable().optional(),
        lastFailure: z
          .object({ code: z.string().optional(), message: z.string().optional() })
          .loose()
          .nullable()
          .optional(),
        order: z.object({ uniqueReference: z.string().optional() }).loose().nullable().optional(),
        parkedRechecks: z.number().optional(),
        lookupUnreachableAt: z.number().nullable().optional(),
        pendingIntent: z
          .object({
            kind: z.string().optional(),
            reference: z.string().nullable().optional(),
            foreign: z.array(z.string()).optional(),
          })
          .loose()
          .nullable()
          .optional(),
      })
      .loose(),
  })
  .loose();

/** The state topic record (src/kafka/order-state-store.ts), read loosely. */
export const stateRecordSchema = z
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
    machine: z.unknown(),
  })
  .loose();
export type StateRecord = z.infer<typeof stateRecordSchema>;

export interface LeaseView {
  holder: string;
  fence: number;
  remainingMs: number;
}

export interface NextAction {
  what: string;
  at: string;
  /** Negative when overdue. */
  inMs: number;
}

export interface OperatorAction {
  resolution: 'adopt' | 'abandon';
  when: string;
  command: Record<string, string>;
}

export interface ParkedView {
  since: string;
  reason: string;
  message: string;
  windowFrom: string | null;
  windowTo: string | null;
  attempts: number | null;
  tried: string[];
  rateId: string | null;
  /**
   * What the order does about it on its own: when it re-checks the evidence next, or that it stopped (its lookup
   * can never finish: only order.settle ends it). Null when the state record does not say.
   */
  recheck: string | null;
  /** The exchange order its POST was answered with, when it knows one, and whether another order holds it. */
  knownReference: { uniqueReference: string; heldElsewhere: boolean } | null;
  actions: OperatorAction[];
}

export interface OrderReport {
  orderId: string;
  uniqueReference: string | null;
  mode: string | null;
  found: { state: boolean; events: number };
  state: {
    name: string;
    value: unknown;
    terminal: boolean;
    updatedAt: string;
    partition: number;
    fence: number;
    seq: number;
  } | null;
  /** The last exchange status the worker confirmed. */
  exchangeStatus: string | null;
  outcome: string | null;
  waitingFor: string;
  next: NextAction[];
  lease: LeaseView | null | 'unknown';
  parked: ParkedView | null;
  timeline: Array<{
    seq: number;
    type: string;
    occurredAt: string;
    traceId: string | null;
    summary: string;
    partition: number;
    offset: string;
  }>;
  problems: string[];
}

const terminalTypes = new Set(['order.completed', 'order.refunded', 'order.canceled', 'order.failed']);

/** What each stored state waits for, by resume key (machines/order-persistence.ts resumableStates). */
const waits: Record<string, string> = {
  'preScreening.calling': 'the exchange to answer POST /pre_screening/ (in flight)',
  'preScreening.waiting': 'its next pre-screening attempt (backoff)',
  'quoting.acquiringSlot': 'a quote slot (the 15 s cooldown between identical actionable quotes)',
  'quoting.coolingDown': 'the actionable-quote cooldown to end',
  'quoting.requesting': 'the exchange to answer GET /rate/ (in flight)',
  'quoting.waiting': 'its next quote attempt (backoff)',
  'creating.posting': 'the exchange to answer POST /orders/ (in flight)',
  'creating.verifying': 'the check whether the exchange created the order (the create answer was lost)',
  'creating.waiting': 'its next create attempt (backoff); an order in doubt is verified before any repeat',
  'creating.parked': 'an operator (order.settle): the create outcome could not be established',
  'creating.adopting': 'the GET that checks the exchange order an operator named (order.settle adopt)',
  'checkingAddress.calling':
    'the address and chain pairing check (the exchange currency and network records)',
  'checkingAddress.waiting': 'its next address check attempt (the currency records could not be read)',
  open: 'the exchange to move the order (a webhook, or the next poll of GET /orders/{ref}/)',
  parked: 'an operator: the create outcome could not be established',
  completed: 'nothing (finished: completed)',
  refunded: 'nothing (finished: refunded)',
  canceled: 'nothing (finished: canceled)',
  failed: 'nothing (finished: failed)',
};

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** An end's unrecorded deposit, for its summary (docs/operations.md, "Deposits not recorded"). */
function unrecordedDepositNote(fields: Record<string, unknown>): string {
  const deposit = fields['unrecorded_deposit'] as Record<string, unknown> | undefined;
  if (deposit === undefined || deposit === null || typeof deposit !== 'object') return '';
  return `; deposit ${str(deposit['tx_hash']) ?? '?'} NOT recorded at the exchange (${str(deposit['state']) ?? '?'})`;
}

function summaryOf(event: PublishedEvent): string {
  const f = event as Record<string, unknown>;
  return endSummaryOf(event, f) + (terminalTypes.has(event.type) ? unrecordedDepositNote(f) : '');
}

function endSummaryOf(event: PublishedEvent, f: Record<string, unknown>): string {
  switch (event.type) {
    case 'order.quoted':
      return `rate ${str(f['rate']) ?? '?'} (rate_id ${str(f['rate_id']) ?? '?'})`;
    case 'order.created':
      return `${str(f['unique_reference']) ?? '?'}: deposit ${str(f['deposit_amount']) ?? '?'} to ${str(f['deposit_address']) ?? '?'}${f['reused'] === true ? ' (reused)' : ''}`;
    case 'order.status_changed':
      return `${str(f['previous_status']) ?? '-'} -> ${str(f['status']) ?? '?'}`;
    case 'order.deposit_submitted':
      return `${str(f['tx_hash']) ?? '?'}${f['already_recorded'] === true ? ' (already recorded)' : ''}`;
    case 'order.deposit_rejected':
      return `${str(f['tx_hash']) ?? '?'}: ${str(f['code']) ?? ''} ${str(f['message']) ?? ''}`.trim();
    case 'order.completed':
      return `withdraw tx ${str(f['withdraw_transaction']) ?? '?'}`;
    case 'order.refunded':
      return `refund tx ${str(f['refund_transaction']) ?? '?'}`;
    case 'order.canceled':
      return `reason ${str(f['reason']) ?? '?'}`;
    case 'order.failed':
      return `${str(f['reason']) ?? '?'}/${str(f['code']) ?? '?'}: ${str(f['message']) ?? ''}`;
    case 'order.parked':
      return `${str(f['reason']) ?? '?'}: ${str(f['message']) ?? ''}`;
    case 'command.rejected':
      return `${str(f['command_type']) ?? '?'} ${str(f['command_id']) ?? '?'} ${str(f['reason']) ?? '?'}: ${str(f['message']) ?? ''}`;
    default:
      return '';
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The field of a printed command the operator fills in (the kcat line reads it from the shell variable REF). */
export const REFERENCE_PLACEHOLDER = '<UNIQUE_REFERENCE>';

type PersistedContext = z.infer<typeof persistedMachineSchema>['context'];

/** A parked order's own re-checks, as its state record says: next one, or stopped for good. */
function recheckOf(context: PersistedContext | undefined): string | null {
  if (!context) return null;
  if (typeof context.lookupUnreachableAt === 'number')
    return `stopped since ${iso(context.lookupUnreachableAt)}: its lookup can never finish (the window is past the page cap); only order.settle ends it`;
  if (typeof context.retryAt !== 'number') return null;
  const made = context.parkedRechecks ?? 0;
  return `next at ${iso(context.retryAt)} (${made} made so far; each one that changes nothing doubles the wait, up to 6 h by default)`;
}

function knownReferenceOf(context: PersistedContext | undefined): ParkedView['knownReference'] {
  const intent = context?.pendingIntent;
  if (intent?.kind !== 'create' || typeof intent.reference !== 'string') return null;
  return {
    uniqueReference: intent.reference,
    heldElsewhere: (intent.foreign ?? []).includes(intent.reference),
  };
}

/** The parked view and what an operator can do, when the order's last word is order.parked. */
function parkedOf(
  orderId: string,
  events: PublishedEvent[],
  now: number,
  context?: PersistedContext,
): ParkedView | null {
  const lastParked = events.findLast((e) => e.type === 'order.parked');
  if (!lastParked) return null;
  const after = events.filter((e) => e.seq > lastParked.seq);
  if (after.some((e) => terminalTypes.has(e.type) || e.type === 'order.created')) return null;
  const f = lastParked as Record<string, unknown>;
  const stamp = now.toString(36);
  return {
    since: lastParked.occurred_at,
    reason: str(f['reason']) ?? 'unknown',
    message: str(f['message']) ?? '',
    windowFrom: str(f['window_from']),
    windowTo: str(f['window_to']),
    attempts: typeof f['attempts'] === 'number' ? f['attempts'] : null,
    tried: Array.isArray(f['tried']) ? f['tried'].map(String) : [],
    rateId: str(f['rate_id']),
    recheck: recheckOf(context),
    knownReference: knownReferenceOf(context),
    actions: [
      {
        resolution: 'adopt',
        when: 'the exchange holds an order created in the window for this pair, amount and withdraw address: adopt it (set REF to its unique_reference first)',
        // One command_id per resolution: an adopt refused (order.settle_refused) is followed by an abandon, which
        // under the adopt's command_id would be refused as duplicate_conflict.
        command: {
          type: 'order.settle',
          command_id: `settle-${stamp}-adopt`,
          order_id: orderId,
          resolution: 'adopt',
          unique_reference: REFERENCE_PLACEHOLDER,
        },
      },
      {
        resolution: 'abandon',
        when: 'the exchange holds no such order: abandon it (order.failed, reason abandoned_by_operator)',
        command: {
          type: 'order.settle',
          command_id: `settle-${stamp}-abandon`,
          order_id: orderId,
          resolution: 'abandon',
        },
      },
    ],
  };
}

export function describeOrder(input: {
  orderId: string;
  record: StateRecord | null;
  events: EventOnTopic[];
  lease: LeaseView | null | 'unknown';
  now: number;
}): OrderReport {
  const { orderId, record, now } = input;
  const problems: string[] = [];
  const sorted = [...input.events].sort((a, b) => a.event.seq - b.event.seq);
  const events = sorted.map((e) => e.event);
  const machine = record ? persistedMachineSchema.safeParse(record.machine) : undefined;
  if (machine && !machine.success)
    problems.push(
      `state record's machine does not have the expected shape: ${machine.error.issues[0]?.message}`,
    );
  const persisted = machine?.success ? machine.data : null;
  const parked = parkedOf(orderId, events, now, persisted?.context);
  const terminalEvent = events.findLast((e) => terminalTypes.has(e.type));
  const created = events.find((e) => e.type === 'order.created');
  const statusEvent = events.findLast((e) => e.type === 'order.status_changed');
  const context = persisted?.context;

  let stateName = persisted?.resumeFrom ?? null;
  if (parked && stateName !== 'parked' && stateName !== 'creating.parked')
    stateName = stateName ? `${stateName} (parked per events)` : 'parked';
  const waitingFor = parked
    ? waits['parked']!
    : stateName
      ? (waits[stateName] ?? `(state "${stateName}" is not known to this inspector)`)
      : terminalEvent
        ? `nothing (finished: ${terminalEvent.type})`
        : events.length
          ? 'unknown: no state record (an order that never existed, or one rejected before it was created)'
          : 'unknown: nothing found';

  const next: NextAction[] = [];
  const terminal = record?.terminal === true || terminalEvent !== undefined;
  if (context && !terminal && !parked) {
    const add = (what: string, at: number | null | undefined): void => {
      if (typeof at === 'number') next.push({ what, at: iso(at), inMs: at - now });
    };
    if (stateName?.endsWith('.waiting') || stateName === 'quoting.coolingDown')
      add('retries', context.retryAt);
    if (stateName === 'open') {
      add('polls GET /orders/{ref}/', context.nextPollAt);
      if (context.paymentDeadlineChecked !== true)
        add('checks the payment deadline (an unpaid order lapses then)', context.paymentDeadline);
      add('retries the deposit PATCH', context.depositRetryAt);
    }
    next.sort((a, b) => a.inMs - b.inMs);
  }
  if (record && events.length && record.seq !== sorted.at(-1)?.event.seq)
    problems.push(
      `state record says seq ${record.seq}, the events topic's last event of the order has seq ${sorted.at(-1)?.event.seq}`,
    );
  const seqs = events.filter((e) => e.seq > 0).map((e) => e.seq);
  seqs.forEach((seq, i) => {
    if (seq !== i + 1) problems.push(`event seq ${seq} where ${i + 1} was expected (gap or repeat)`);
  });

  return {
    orderId,
    uniqueReference:
      record?.unique_reference ??
      context?.order?.uniqueReference ??
      str((created as Record<string, unknown> | undefined)?.['unique_reference']) ??
      null,
    mode: record?.mode ?? null,
    found: { state: record !== null, events: events.length },
    state: record
      ? {
          name: stateName ?? '(unreadable)',
          value: persisted?.stateValue ?? null,
          terminal: record.terminal,
          updatedAt: record.updated_at,
          partition: record.partition,
          fence: record.fence,
          seq: record.seq,
        }
      : null,
    exchangeStatus:
      context?.lastStatus ?? str((statusEvent as Record<string, unknown> | undefined)?.['status']),
    outcome: terminalEvent ? terminalEvent.type : parked ? 'order.parked' : null,
    waitingFor,
    next,
    lease: input.lease,
    parked,
    timeline: sorted.map(({ event, partition, offset, traceId }) => ({
      seq: event.seq,
      type: event.type,
      occurredAt: event.occurred_at,
      traceId,
      summary: summaryOf(event),
      partition,
      offset,
    })),
    problems,
  };
}

/** The trace id of a W3C `traceparent` header value, or null. */
export function traceIdOf(traceparent: string | undefined): string | null {
  const match = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/.exec(traceparent?.trim() ?? '');
  return match?.[1] && !/^0+$/.test(match[1]) ? match[1] : null;
}
