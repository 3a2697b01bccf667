// Domain vocabulary shared by the order machine and the runtime that provides its actors.
// Pure types and constants only: no I/O, no clocks. Times are epoch milliseconds supplied by the runtime.

export const tradingModes = ['defi', 'cefi', 'cefi_fixed'] as const;
export type TradingMode = (typeof tradingModes)[number];

/**
 * The exchange's own status names (hossamelneily/nexchange orders/models/base.py), with their v1 codes. The interface
 * document shows only CANCELED 0, REFUNDED 8, COMPLETED 16 and PAID; the rest is an assumption (docs/exchange-api.md).
 */
export const exchangeStatusCodes = {
  CANCELED: 0,
  REFUNDED: 8,
  INITIAL: 11,
  'UNCONFIRMED PAYMENT': 12,
  PAID: 13,
  'PRE-RELEASE': 14,
  RELEASED: 15,
  COMPLETED: 16,
} as const;
export type ExchangeStatus = keyof typeof exchangeStatusCodes;
export const terminalExchangeStatuses: readonly ExchangeStatus[] = ['COMPLETED', 'REFUNDED', 'CANCELED'];

/**
 * Progress of a known status: the v1 code for open statuses, above them every terminal one. An order never moves
 * back (a GET answering INITIAL after PAID is a stale replica or cache, not news); undefined for unknown names.
 */
export function exchangeStatusRank(status: string): number | undefined {
  if ((terminalExchangeStatuses as readonly string[]).includes(status)) return 100;
  return status in exchangeStatusCodes ? exchangeStatusCodes[status as ExchangeStatus] : undefined;
}

/** True when `next` is a known status behind the known status `previous`. */
export function movesBackwards(previous: string | null, next: string): boolean {
  if (previous === null) return false;
  const from = exchangeStatusRank(previous);
  const to = exchangeStatusRank(next);
  return from !== undefined && to !== undefined && to < from;
}

/**
 * What to do about a failed exchange call: the one vocabulary the client's classification table maps every
 * documented error message onto, and the machine acts upon.
 */
export const failureActions = [
  'requote', // fresh quote, then retry (expired/invalid rate_id, pair temporarily unavailable, promised rate mismatch)
  'backoff', // retry the same step with exponential backoff (provider unavailable, cross-chain quote fetch, 5xx, timeouts)
  'throttled', // 429: wait retryAfterMs when given, else the machine's own throttle backoff
  'fatal', // not retryable (validation errors, auth, 4xx not listed)
  'idempotent_success', // "External deposit notification with tx_id <hash>already exists": treat as success
  'mode_mismatch', // DeFi rate_id used for a CeFi order: quote and order must use the same mode (not retryable as is)
  'non_actionable', // fixed-rate rate_id non-actionable for the route: request an actionable quote
  'unknown_outcome', // the request may or may not have taken effect (5xx, 408, timeout, connection lost after sending)
  'unexpected', // no classification explains it (a bug or an unforeseen library failure): retried, boundedly
] as const;
export type FailureAction = (typeof failureActions)[number];

/** How a failed step may be tried again. */
export type RetryPolicy =
  | 'same_step' // the same call again, after a delay, a bounded number of times
  | 'after_requote' // only with a fresh quote (a bounded number of times)
  | 'after_verifying' // the call may have taken effect: never repeated before its outcome is established
  | 'never'; // not retryable: the step fails (or, for a create in doubt, the order is parked)

/**
 * THE retry table: what each failure action allows. The machine's guards and the runtime's error classes
 * (`ExchangeError.retryable`) both read it, so they cannot disagree.
 */
export const failureRetryPolicy: Readonly<Record<FailureAction, RetryPolicy>> = {
  requote: 'after_requote',
  non_actionable: 'after_requote',
  backoff: 'same_step',
  throttled: 'same_step',
  unexpected: 'same_step',
  unknown_outcome: 'after_verifying',
  fatal: 'never',
  idempotent_success: 'never',
  mode_mismatch: 'never',
};

/** Whether trying again (in the way the table says) can help. */
export function isRetryableAction(action: FailureAction): boolean {
  return failureRetryPolicy[action] !== 'never';
}

/**
 * What a create that did not end in order.created learnt of the exchange order its POST was answered with: its
 * reference, whether that order is this one's (`claim`: claimed by it, the claim could not be confirmed, or another
 * order's), and whether a POST of this order made it (false: a 200 reuse answering a first POST named it).
 */
export interface CreateEvidence {
  readonly uniqueReference: string;
  readonly claim: 'ours' | 'unconfirmed' | 'another_order';
  readonly created: boolean;
}

/** A failed exchange call as the machine sees it (thrown by the runtime's actors; JSON-serialisable). */
export interface ExchangeFailure {
  readonly kind: 'exchange_failure';
  readonly action: FailureAction;
  /** Stable code of the classification row, e.g. "rate_id_expired", "throttled", "http_503". */
  readonly code: string;
  /** The exchange's message (never contains our secrets). */
  readonly message: string;
  readonly httpStatus?: number;
  readonly retryAfterMs?: number;
  /** A create's POST was answered, yet the create is not done (see CreateEvidence). */
  readonly evidence?: CreateEvidence;
}

/**
 * Codes of the create's own conclusions that both the runtime (which finds them) and the machine (which acts on
 * them) name. `lookup_unreachable`: the window of a create in doubt lies beyond what the lookup's page cap can ever
 * reach (the listing only grows), so re-checking it is pointless; the order stays parked for order.settle.
 */
export const createCodes = {
  lookupUnreachable: 'lookup_unreachable',
  claimedElsewhere: 'created_order_claimed_elsewhere',
  reusedForeign: 'reused_foreign_order',
  claimUnconfirmed: 'create_claim_unconfirmed',
  nearMatch: 'lookup_near_match',
} as const;

export function isExchangeFailure(value: unknown): value is ExchangeFailure {
  return (
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'exchange_failure'
  );
}

/** The exchange's v2 order, as the machine needs it (the runtime maps the wire representation onto it). */
export interface ExchangeOrderView {
  uniqueReference: string;
  status: string;
  createdOn: string;
  side: string;
  depositAmount: string;
  withdrawAmount: string;
  depositCurrency: string;
  withdrawCurrency: string;
  depositAddress: string;
  depositAddressExtraId: string;
  withdrawAddress: string;
  withdrawAddressExtraId: string;
  refundAddress: string;
  refundAddressExtraId: string;
  paymentWindowMinutes: number | null;
  fixedRateDeadline: string | null;
  rate: string;
  depositTransaction: string;
  withdrawTransaction: string;
  refundTransaction: string;
}

/** Transaction hashes in hex are case-insensitive (with or without 0x); any other spelling must match exactly. */
export function sameTransactionHash(a: string, b: string): boolean {
  const hex = /^(0x)?[0-9a-f]+$/i;
  return a === b || (hex.test(a) && hex.test(b) && a.toLowerCase() === b.toLowerCase());
}

// ---------------------------------------------------------------------------------------------------------------
// Exchange text an order keeps: the caps, in one place. A state record is written to Kafka whole, and a broker
// refuses a record batch above its max.message.bytes (1 MiB by default): an order whose record it refuses cannot move
// on, so text the exchange (or a webhook) controls must never make a record grow without bound.
// - Values kept as the exchange wrote them (unique_reference, status, side, currencies, addresses and extra ids,
//   transaction hashes, amounts, rates, rate_id, timestamps) are checked by the wire schemas
//   (src/exchange/schemas.ts): a longer one makes the response invalid. Never cut: a cut address or hash is another.
// - Free text (error messages, pre-screening messages) is cut to a bound wherever it enters an order: the error
//   classification, the wire schema of pre-screening, and the machine's failure records (failure-policy.ts).

/** The longest exchange value an order keeps (an address, a hash, a reference, an amount): longer is invalid. */
export const exchangeValueMaxChars = 512;

/** The longest exchange message an order keeps or publishes; longer is cut, ending in "…". */
export const exchangeMessageMaxChars = 1_024;

/** `text` within exchangeMessageMaxChars: cut on a character boundary, ending in "…" when it was longer. */
export function boundedMessage(text: string): string {
  if (text.length <= exchangeMessageMaxChars) return text;
  // A UTF-16 surrogate pair is not split: a lone high surrogate left at the cut is dropped.
  return `${text.slice(0, exchangeMessageMaxChars - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

/** A code (a stable identifier, normally ours) within exchangeValueMaxChars. */
export function boundedCode(code: string): string {
  return code.length <= exchangeValueMaxChars ? code : code.slice(0, exchangeValueMaxChars);
}
