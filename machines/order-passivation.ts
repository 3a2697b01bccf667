// When an order stored in its persisted form is only waiting, and until when: the runtime may then stop its actor and
// keep the record alone (passivation), re-creating the actor through the `restoring` router when the time comes or
// an event arrives. Only a state whose restore re-enters exactly the state it was stored in, with no call in flight
// and every timer derived from an absolute time in context, qualifies; anything else keeps its actor (null).
// Which states may rest is the machine's word (its states tagged `restable`), where the routers lead back is the
// routers' own (order-context.ts), and the context fields named here are typed by the machine's context.
import type { AnyStateNode } from 'xstate';
import { isPersistedOrder, type PersistedOrder } from './order-persistence.ts';
import { orderMachine, restableTag } from './order-machine.ts';
import {
  awaitingDepositStatus,
  depositResumeTarget,
  exchangeResumeTarget,
  fetchOrderInputOf,
  isStaleListing,
  listingConfirmation,
  listingConfirms,
  observation,
  pollIntervalBounds,
  type ListingRow,
} from './order-context.ts';
import type { FetchOrderInput, FetchOrderOutput, OrderContext } from './order-types.ts';

/** The state nodes the machine tags `restable` (the nodes of `restableStates`). */
function nodesTagged(node: AnyStateNode, tag: string): AnyStateNode[] {
  const own = node.tags.includes(tag) ? [node] : [];
  return [...own, ...Object.values(node.states).flatMap((child) => nodesTagged(child, tag))];
}

const restableNodes: ReadonlySet<AnyStateNode> = new Set(nodesTagged(orderMachine.root, restableTag));

/**
 * The states the machine tags `restable`, by path below its root (`open.exchange.monitoring`): an order all of whose
 * active states are among them may rest.
 */
export const restableStates: ReadonlySet<string> = new Set(
  [...restableNodes].map((node) => node.path.join('.')),
);

/** The machine's states as a tree of maps, each marked whether it is tagged `restable`: what `restsIn` walks. */
interface StateTree {
  readonly restable: boolean;
  readonly children: ReadonlyMap<string, StateTree>;
}

function stateTree(node: AnyStateNode): StateTree {
  return {
    restable: restableNodes.has(node),
    children: new Map(Object.entries(node.states).map(([key, child]) => [key, stateTree(child)])),
  };
}

const machineTree = stateTree(orderMachine.root);

/**
 * Whether a stored state value names at least one active leaf and every one of them is a state of the machine
 * tagged `restable` (below `node`). Walks the value beside the machine's own state nodes, building no path: the
 * restore asks it of every order it reads.
 */
function restsIn(value: unknown, node: StateTree): boolean {
  if (typeof value === 'string') return node.children.get(value)?.restable === true;
  if (typeof value !== 'object' || value === null) return false;
  let leaves = false;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = node.children.get(key);
    if (child === undefined || !restsIn((value as Record<string, unknown>)[key], child)) return false;
    leaves = true;
  }
  return leaves;
}

const leafPaths = { deposit: new Map<string, string[]>(), exchange: new Map<string, string[]>() };

/**
 * Whether a stored state value has, among its active leaves, the state at `target` (a dotted path such as
 * `submitting.waiting`) of the open order's `region`.
 */
function namesLeaf(value: unknown, region: 'deposit' | 'exchange', target: string): boolean {
  let segments = leafPaths[region].get(target);
  if (segments === undefined)
    leafPaths[region].set(target, (segments = ['open', region, ...target.split('.')]));
  let at = value;
  for (let i = 0; i < segments.length - 1; i++) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, segments[i]!)) return false;
    at = (at as Record<string, unknown>)[segments[i]!];
  }
  return at === segments[segments.length - 1];
}

/** A set of context fields, checked by the compiler against the machine's context (a rename does not compile). */
export function contextFields(...fields: ReadonlyArray<keyof OrderContext>): ReadonlySet<keyof OrderContext> {
  return new Set(fields);
}

/**
 * Whether a stored state value is one an order may rest in: every active leaf tagged `restable`, the deposit region
 * in `deposit` and the exchange region in `exchange` (where their restore routers lead the order back to).
 */
export function restsInStates(value: unknown, deposit: string, exchange: string): boolean {
  return (
    restsIn(value, machineTree) &&
    namesLeaf(value, 'deposit', deposit) &&
    namesLeaf(value, 'exchange', exchange)
  );
}

/** The open order's regions as a state value names them, or null when it is not an open order. */
function openRegions(persisted: PersistedOrder): { deposit: unknown; exchange: unknown } | null {
  if (persisted.resumeFrom !== 'open' || persisted.done) return null;
  const value = persisted.stateValue;
  if (typeof value !== 'object' || value === null) return null;
  const open = (value as Record<string, unknown>)['open'];
  if (typeof open !== 'object' || open === null) return null;
  const regions = open as Record<string, unknown>;
  return { deposit: regions['deposit'], exchange: regions['exchange'] };
}

/**
 * The earliest time (epoch ms) the order's machine has anything to do on its own, when it is only waiting: an open
 * order monitoring the exchange between polls (next poll, hints waiting for their GET, the payment deadline still to
 * be checked) while its deposit region awaits a deposit, has submitted one, or waits to retry the PATCH. Null when
 * it must stay live:
 * any other state (a call in flight, a step before the exchange order exists, a parked create), or a context that
 * the restore router would not route back to the same state.
 */
export function passiveUntil(persisted: PersistedOrder): number | null {
  const deadlines = restingDeadlines(persisted);
  return deadlines === null ? null : Math.min(deadlines.poll, ...deadlines.others);
}

/**
 * Whether the order may rest, and with what: `passiveUntil` and `pollDeferrableUntil` of one persisted form, its
 * state read once (the restore asks this of every order it reads). Null when it is not only waiting.
 */
export function restingPlan(
  persisted: PersistedOrder,
): { wakeAt: number; pollDeferrableUntil: number | null } | null {
  const deadlines = restingDeadlines(persisted);
  return deadlines === null
    ? null
    : {
        wakeAt: Math.min(deadlines.poll, ...deadlines.others),
        pollDeferrableUntil: deferrableUntil(persisted, deadlines),
      };
}

/** The resting order's next routine poll and its other deadlines; null when it is not only waiting. */
function restingDeadlines(persisted: PersistedOrder): { poll: number; others: number[] } | null {
  if (persisted.resumeFrom !== 'open' || persisted.done) return null;
  const context = persisted.context;
  // Each region only where its restore router leads back to it (the router's own guards, order-context.ts).
  const deposit = depositResumeTarget(context);
  if (!restsInStates(persisted.stateValue, deposit, exchangeResumeTarget(context))) return null;
  // The exchange router re-enters `monitoring` only without a poll in flight (above); a hint queued during a poll is
  // served by the poll that re-enters, so none may be pending either.
  if (context.hintPending || context.nextPollAt === null) return null;
  const others: number[] = [];
  // Hints waiting for their GET (hintCoalesceMs): the order wakes for it.
  if (context.hintDueAt != null) others.push(context.hintDueAt);
  if (
    context.paymentDeadline !== null &&
    !context.paymentDeadlineChecked &&
    context.lastStatus === awaitingDepositStatus
  )
    others.push(context.paymentDeadline);
  // The PATCH's retry (its router's guard says depositRetryAt is set).
  if (deposit === 'submitting.waiting' && context.depositRetryAt !== null)
    others.push(context.depositRetryAt);
  return { poll: context.nextPollAt, others };
}

/**
 * A resting order's persisted form as a bulk listing row that confirms it leaves it: the machine's own LISTED
 * confirmation in `monitoring` (the same status as last confirmed, not stale) moves its confirmation time and its
 * next routine poll, and nothing else. Null when the row is anything else for this order (another status, a stale
 * page) or the order is not only waiting: then it has to be woken for the row. Lets the runtime keep a passivated
 * order at rest through the listing rounds that confirm it (one wake per round and order was most of a replica's
 * work with tens of thousands of CeFi orders open).
 */
export function confirmedByListing(persisted: PersistedOrder, listing: ListingRow): PersistedOrder | null {
  if (restingDeadlines(persisted) === null || !listingConfirms(persisted.context, listing)) return null;
  const context = { ...persisted.context, ...listingConfirmation(persisted.context, listing.at) };
  return { ...persisted, savedAt: context.now, context };
}

/**
 * The routine poll a resting order is due for at `now`, when that poll is all it has to do: the GET the runtime may
 * make for it without waking it (the input of the machine's own fetchOrder), and the order's next other deadline
 * (a payment deadline, a deposit retry), if any. Null when the order must be woken for its deadline instead: another
 * deadline is due too, or hints wait for their GET. The retry of a failed poll is one too: its time is the
 * machine's (nextPollAt, after its backoff), the GET the same; its answer, whatever it is, goes to the machine
 * (confirmedByPoll is null for it), which takes it as its retry's. Made at rest, the retries of many orders whose
 * polls failed together (an exchange outage) are bounded like their routine polls, instead of each waking its order
 * for a GET of its own.
 */
export function pollDueAtRest(
  persisted: PersistedOrder,
  now: number,
): { request: FetchOrderInput; nextDeadline: number | null } | null {
  const deadlines = restingDeadlines(persisted);
  const context = persisted.context;
  if (deadlines === null || deadlines.poll > now || context.order === null) return null;
  if (context.hintDueAt != null || deadlines.others.some((at) => at <= now)) return null;
  return {
    request: fetchOrderInputOf(context),
    nextDeadline: deadlines.others.length ? Math.min(...deadlines.others) : null,
  };
}

/**
 * A resting order's persisted form once the answer to its routine poll (made by the runtime: pollDueAtRest) is taken,
 * when that answer only confirms it: the same status and the same exchange order as written, not older than the
 * last confirmation. Exactly what the machine's POLLED (or its own poll's answer) leaves in `monitoring` then
 * (observeOrder in order-machine.ts: when it was confirmed, the next poll), so the order stays at rest with it and
 * nothing is written (onlyConfirms). Null when the answer has news, or the order is not only waiting for that poll:
 * the machine must take it (POLLED).
 */
export function confirmedByPoll(persisted: PersistedOrder, answer: FetchOrderOutput): PersistedOrder | null {
  const context = persisted.context;
  if (restingDeadlines(persisted) === null || context.pollAttempt !== 0 || context.hintDueAt != null)
    return null;
  if (isStaleListing(context, answer.at)) return null;
  if (answer.order.status !== context.lastStatus || !sameJson(answer.order, context.order)) return null;
  const next: PersistedOrder = {
    ...persisted,
    savedAt: answer.at,
    // The same exchange order as held (sameJson above): the object already held stays.
    context: { ...context, ...observation(context, answer), order: context.order },
  };
  return onlyConfirms(persisted, next) ? next : null;
}

/** How close to the longest poll interval a deferred poll still runs (a margin for timers and the GET itself). */
export const pollDeferralMarginMs = 2_000;

/**
 * The latest a resting order's next wake may be put off when that wake is only its routine poll (a safety net:
 * webhooks announce changes): up to the longest poll interval the interface document recommends
 * (pollIntervalBounds.maxMs, 60 s) after its status was last confirmed, less a margin, and never past any other
 * deadline of the order (its payment deadline, a deposit retry). Null when the next wake is not a routine poll, the
 * status was never confirmed, or nothing is left to put off.
 */
export function pollDeferrableUntil(persisted: PersistedOrder): number | null {
  const deadlines = restingDeadlines(persisted);
  return deadlines === null ? null : deferrableUntil(persisted, deadlines);
}

function deferrableUntil(
  persisted: PersistedOrder,
  deadlines: { poll: number; others: number[] },
): number | null {
  const confirmedAt = persisted.context.confirmedAt;
  if (confirmedAt === null || confirmedAt === undefined) return null;
  if (deadlines.others.some((at) => at <= deadlines.poll)) return null;
  const until = Math.min(confirmedAt + pollIntervalBounds.maxMs - pollDeferralMarginMs, ...deadlines.others);
  return until > deadlines.poll ? until : null;
}

/**
 * What a poll's start changes and a restart may lose: the restore router re-enters `monitoring` without them, and the
 * order polls again at its next deadline (a hint they noted is a hint; webhooks are never believed).
 */
const pollStartFields = contextFields(
  'pollStartedAt',
  'now',
  'hintedStatus',
  'webhooksInformed',
  'hintPending',
  'queuedHintsMayWait',
  'hintDueAt',
  'hintSince',
  'paymentDeadlineChecked',
);

/**
 * Equal as JSON values (both sides are persisted forms: plain objects, arrays, strings, numbers, booleans, null).
 * Compared in place: serialising both sides of every context field on every poll was a measurable share of a
 * replica's CPU while many orders poll at once.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  // Absent and undefined are the same in JSON.
  for (const key in left) if (left[key] !== undefined && !sameJson(left[key], right[key])) return false;
  for (const key in right) if (right[key] !== undefined && left[key] === undefined) return false;
  return true;
}

/**
 * True when `next` differs from the `written` persisted form only by the start of a status poll: the exchange region
 * went from `monitoring` to `polling` (or polls again), the deposit region did not move, and no context field changed
 * but the poll's bookkeeping. Such a change need not be written (issue 12: poll bookkeeping is not rewritten as a
 * full record on every poll): the poll is a GET, which moves no money, and its answer is written unless it only
 * confirms the order (onlyConfirms).
 */
export function onlyStartsAPoll(written: unknown, next: PersistedOrder): boolean {
  return changedOnly(written, next, ['monitoring', 'polling'], 'polling', pollStartFields);
}

/** What a poll that finds the order as last confirmed changes besides its start's: when it was confirmed, the next poll. */
const confirmationFields = contextFields(...pollStartFields, 'confirmedAt', 'nextPollAt');

/**
 * True when `next` differs from the `written` persisted form only by a confirmation: a GET (or a listing row) showed
 * the order exactly as written (the same status and the same exchange order), so only when it was confirmed and
 * when it polls next moved, with the bookkeeping of the poll's start; the order monitors again with no poll or hint
 * pending. Not written (issue 12: poll bookkeeping is not rewritten as a full record on every poll): the runtime
 * keeps this form in memory with the written record, so the order rests until its next poll. A restart re-reads the
 * written form and polls soon (a GET, which moves nothing); nothing else is lost.
 */
export function onlyConfirms(written: unknown, next: PersistedOrder): boolean {
  const context = next.context;
  if (context.pollStartedAt !== null || context.hintPending || context.hintDueAt != null) return false;
  return changedOnly(written, next, ['monitoring'], 'monitoring', confirmationFields);
}

/** What a hint that waits for its GET (or needs none) changes, and a restart may lose. */
const hintWaitFields = contextFields('now', 'hintDueAt', 'hintSince', 'hintedStatus', 'webhooksInformed');

/**
 * True when `next` differs from the `written` persisted form only by webhook hints noted while monitoring: a hint that
 * waits for the ones after it (hintCoalesceMs), or one naming a status already confirmed. Not written: a hint is
 * best effort (a restart loses it, and the routine poll confirms the order), and writing each one would put a
 * Kafka transaction before the GET of the end that often follows within milliseconds. The runtime keeps such an
 * order live until its GET (RestingOrder is computed from the written record).
 */
export function onlyWaitsForHints(written: unknown, next: PersistedOrder): boolean {
  return changedOnly(written, next, ['monitoring'], 'monitoring', hintWaitFields);
}

function changedOnly(
  written: unknown,
  next: PersistedOrder,
  from: readonly string[],
  to: string,
  fields: ReadonlySet<keyof OrderContext>,
): boolean {
  if (!isPersistedOrder(written)) return false;
  const before = openRegions(written);
  const after = openRegions(next);
  if (!before || !after || after.exchange !== to) return false;
  if (typeof before.exchange !== 'string' || !from.includes(before.exchange)) return false;
  if (!sameJson(before.deposit, after.deposit)) return false;
  return sameContextBut(written, next, fields);
}

/** True when the two forms' contexts differ in none but these fields. */
function sameContextBut(
  written: PersistedOrder,
  next: PersistedOrder,
  fields: ReadonlySet<keyof OrderContext>,
): boolean {
  // A stored context may carry keys the type does not (an older record's): they are compared like any other.
  const ignored: ReadonlySet<string> = fields;
  const keys = new Set([...Object.keys(written.context), ...Object.keys(next.context)]);
  for (const key of keys) {
    if (ignored.has(key)) continue;
    if (
      !sameJson(
        (written.context as unknown as Record<string, unknown>)[key],
        (next.context as unknown as Record<string, unknown>)[key],
      )
    )
      return false;
  }
  return true;
}

/** What the grant of a quote slot changes: the time, and the intent (the quote request about to leave). */
const quoteStartFields = contextFields('now', 'pendingIntent');

/**
 * True when `next` differs from the `written` persisted form only by the grant of a quote slot: the order went from
 * `quoting.acquiringSlot` to `quoting.requesting` and nothing else changed. Such a change need not be written: the
 * quote request is a GET, which moves no money, and a restart routes both forms alike, to a fresh slot request (a
 * quote request that may have gone out holds its cooldown slot in Redis under the token of its own attempt, so the
 * restored order waits out the cooldown, whichever form it restored). The quote is written with the create intent,
 * durable before the POST.
 */
export function onlyStartsAQuote(written: unknown, next: PersistedOrder): boolean {
  return (
    isPersistedOrder(written) &&
    written.resumeFrom === 'quoting.acquiringSlot' &&
    next.resumeFrom === 'quoting.requesting' &&
    written.done === next.done &&
    sameContextBut(written, next, quoteStartFields)
  );
}

/** The context fields each rule above lets change unwritten (for the tests that keep them the machine's). */
export const unwrittenContextFields = {
  pollStart: pollStartFields,
  confirmation: confirmationFields,
  hintWait: hintWaitFields,
  quoteStart: quoteStartFields,
} as const;
