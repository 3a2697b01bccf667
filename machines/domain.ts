// Domain vocabulary shared by the order machine and the runtime that provides its actors.
// Pure types and constants only: no I/O, no clocks. Times are epoch milliseconds supplied by the runtime.

export const tradingModes = ['defi', 'cefi', 'cefi_fixed'] as const;
export type TradingMode = (typeof tradingModes)[number];

/** The exchange's own status names (hossamelneily/nexchange orders/models/base.py), with their v1 codes. */
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
  'unknown_outcome', // the request may or may not have taken effect (timeout / connection lost after sending)
] as const;
export type FailureAction = (typeof failureActions)[number];

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
}

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
