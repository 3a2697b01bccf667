// THE classification table: the exchange has no machine-readable error codes, so every documented message is
// recognised here, once, by stable substrings, and mapped onto a FailureAction. Invariants: matching tolerates
// interpolated ids and values (fragments in order, case-insensitive); a message no row knows falls back on the
// HTTP status; the first matching row wins, so narrower rows come first. What the worker does with each action, and
// the exchange's error envelope: docs/exchange-api.md, "Errors".
import { boundedMessage, type FailureAction } from '../../machines/domain.ts';
import { errorBodySchema } from './schemas.ts';

export interface ClassificationRow {
  /** Stable code the machine and the metrics see, e.g. "rate_id_expired". */
  readonly code: string;
  /** Literal fragments of the message that must all occur, in this order; interpolations fall between them. */
  readonly patterns: readonly string[];
  readonly action: FailureAction;
  /** Delay to honour when the exchange gives none (the actionable-quote cooldown). */
  readonly defaultRetryAfterMs?: number;
  /** True only for the per-key global throttle: a 429 there makes every replica back off that key. */
  readonly globalThrottle?: boolean;
  /** The row applies only to responses with this HTTP status (a row known by its status, not its wording). */
  readonly httpStatus?: number;
}

/** The actionable same-chain quote cooldown: "about 15 seconds for identical requests". */
export const actionableQuoteCooldownMs = 15_000;

export const classificationTable: readonly ClassificationRow[] = [
  // Quote and rate errors
  {
    code: 'rate_id_invalid_or_expired',
    patterns: ["rate_id '", "' is invalid or expired"],
    action: 'requote',
  },
  { code: 'rate_id_quote_expired', patterns: ['The quote for this rate_id has expired'], action: 'requote' },
  {
    code: 'pair_temporarily_unavailable',
    patterns: ['Pair ', ' is temporarily unavailable'],
    action: 'requote',
  },
  {
    code: 'cross_chain_quote_unavailable',
    patterns: ['Unable to fetch a cross-chain fixed-rate quote'],
    action: 'backoff',
  },
  {
    code: 'actionable_quote_unavailable',
    patterns: ['Unable to fetch actionable same-chain DeFi fixed-rate quote'],
    action: 'backoff',
    defaultRetryAfterMs: actionableQuoteCooldownMs,
  },
  { code: 'quote_provider_unavailable', patterns: ['Quote provider is unavailable'], action: 'backoff' },
  {
    code: 'rate_id_non_actionable',
    patterns: ['fixed-rate rate_id is non-actionable'],
    action: 'non_actionable',
  },
  {
    code: 'rate_id_mode_mismatch',
    patterns: ['issued for a DeFi quote and cannot be used to create a standard (CeFi) order'],
    action: 'mode_mismatch',
  },
  {
    code: 'referral_rate_no_longer_matches',
    patterns: ['Promised applied referral rate no longer matches current partner limits'],
    action: 'requote',
  },
  // Request validation errors (not retryable)
  { code: 'markup_and_referral_rate', patterns: ['Provide either markup', 'not both'], action: 'fatal' },
  { code: 'markup_over_cap', patterns: ['Must not exceed ', ' basis points'], action: 'fatal' },
  {
    code: 'referral_rate_not_allowed',
    patterns: ['referral_rate is not allowed for this referral code'],
    action: 'fatal',
  },
  {
    code: 'rate_id_on_limit_order',
    patterns: ['rate_id is not supported for limit orders'],
    action: 'fatal',
  },
  { code: 'limit_ttl_too_short', patterns: ['limit_ttl must be at least ', ' seconds'], action: 'fatal' },
  {
    code: 'deposit_amount_required_cross_chain',
    patterns: ['Deposit amount (amount_quote) is required for cross-chain fixed-rate'],
    action: 'fatal',
  },
  { code: 'address_invalid', patterns: [' has invalid characters for a valid value'], action: 'fatal' },
  // The exchange's risk check refused the end user's IP (Django REST framework's top-level
  // `{"non_field_errors": ["User's IP has risk."]}`, answered by /rate/ and /orders/ as EdgeApp's client expects):
  // a compliance refusal, not retryable; nothing was created.
  { code: 'ip_risk', patterns: ["User's IP has risk"], action: 'fatal' },
  {
    code: 'pre_screening_amounts_exclusive',
    patterns: ['Only one of deposit_amount or withdraw_amount can be provided'],
    action: 'fatal',
  },
  // Idempotent conflict: the deposit hash is already recorded ("<hash>already exists", no space before it)
  {
    code: 'deposit_already_recorded',
    patterns: ['External deposit notification with tx_id', 'already exists'],
    action: 'idempotent_success',
  },
  // Throttles: the two quote throttles are tighter and per quote type, so they do not penalise the key's budget
  {
    code: 'same_chain_quote_throttled',
    patterns: ['Too many same-chain fixed-rate quote requests'],
    action: 'throttled',
  },
  {
    code: 'cross_chain_quote_throttled',
    patterns: ['Too many cross-chain fixed-rate quote requests'],
    action: 'throttled',
  },
  // The global throttle is a 429 (the document: "HTTP 429, header Retry-After"); "throttled" in a 5xx or 4xx body
  // from a proxy or a bug must not hold the key for every replica.
  { code: 'throttled', patterns: ['throttled'], action: 'throttled', globalThrottle: true, httpStatus: 429 },
  // Authentication
  { code: 'credentials_missing', patterns: ['credentials were not provided'], action: 'fatal' },
  // The document names two causes of a 401 - missing or invalid credentials, which answer with the
  // credentials-not-provided message (matched above), and a referral code (token header, `ref` or `referral_code`)
  // not owned by the key's owner, whose wording is not shown. So any other explained 401 is the ownership rule:
  // the mode's key and its referral token (EXCHANGE_REFERRAL_TOKEN_<MODE>) or the order's referral_code belong to
  // different partners.
  { code: 'referral_code_not_owned', patterns: [], httpStatus: 401, action: 'fatal' },
];

function containsInOrder(message: string, patterns: readonly string[]): boolean {
  const haystack = message.toLowerCase();
  let from = 0;
  for (const pattern of patterns) {
    const at = haystack.indexOf(pattern.toLowerCase(), from);
    if (at < 0) return false;
    from = at + pattern.length;
  }
  return true;
}

/** The first row any of the messages matches, if one does; rows bound to a status need that `httpStatus`. */
export function matchRow(
  messages: readonly string[],
  httpStatus?: number,
): { row: ClassificationRow; message: string } | undefined {
  for (const row of classificationTable) {
    if (row.httpStatus !== undefined && row.httpStatus !== httpStatus) continue;
    const message = messages.find((candidate) => containsInOrder(candidate, row.patterns));
    if (message !== undefined) return { row, message };
  }
  return undefined;
}

/** What an unrecognised error means, from its HTTP status alone. */
export function classifyHttpStatus(status: number): {
  code: string;
  action: FailureAction;
  globalThrottle: boolean;
} {
  const code = `http_${status}`;
  if (status === 429) return { code: 'throttled', action: 'throttled', globalThrottle: true };
  // 417: GET /pair/random/ "exhausted its attempts" - another draw may succeed.
  if (status === 408 || status === 417 || status >= 500)
    return { code, action: 'backoff', globalThrottle: false };
  return { code, action: 'fatal', globalThrottle: false };
}

/** Every human-readable message of an error body: `errors{field: [..]}`, DRF field lists, `detail`, `message`. */
export function errorMessages(body: unknown): string[] {
  if (typeof body === 'string') return body.trim() === '' ? [] : [body];
  const parsed = errorBodySchema.safeParse(body);
  if (!parsed.success) return [];
  const out: string[] = [];
  const collect = (value: unknown, field?: string): void => {
    if (typeof value === 'string')
      out.push(field === undefined || field === 'non_field_errors' ? value : `${field}: ${value}`);
    else if (Array.isArray(value)) for (const item of value) collect(item, field);
    else if (typeof value === 'object' && value !== null)
      for (const [key, inner] of Object.entries(value)) collect(inner, key);
  };
  // Field errors first, so a matched message names its field ("withdraw_address: ... has invalid characters").
  collect(parsed.data.errors);
  for (const [key, value] of Object.entries(parsed.data)) {
    if (key === 'status' || key === 'detail' || key === 'message' || key === 'errors') continue;
    collect(value, key);
  }
  collect(parsed.data.detail);
  collect(parsed.data.message);
  return out;
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The throttle message "states seconds to wait" ("Expected available in 12 seconds."). */
function secondsStatedIn(message: string): number | undefined {
  const match = /(\d+(?:\.\d+)?)\s*(?:seconds?|s\b)/i.exec(message);
  return match?.[1] === undefined ? undefined : Math.ceil(Number(match[1]) * 1000);
}

export interface Classification {
  readonly code: string;
  readonly action: FailureAction;
  /**
   * The matching message, or all messages joined, or a status line when the body said nothing; at most
   * exchangeMessageMaxChars (the exchange's text is the exchange's to make as long as it likes).
   */
  readonly message: string;
  readonly retryAfterMs: number | undefined;
  readonly globalThrottle: boolean;
}

/** Classifies an error response: table rows by message first, then the HTTP status. */
export function classifyErrorResponse(input: {
  readonly status: number;
  readonly body: unknown;
  readonly retryAfter?: string | undefined;
  readonly nowMs?: number;
}): Classification {
  const messages = errorMessages(input.body);
  const headerDelay = parseRetryAfter(input.retryAfter, input.nowMs ?? Date.now());
  // A status-bound row reads the exchange's own JSON error envelope only: a proxy's HTML 401 is not the exchange's.
  const envelope = typeof input.body === 'object' && input.body !== null;
  const matched = matchRow(messages, envelope ? input.status : undefined);
  if (matched !== undefined) {
    const { row, message } = matched;
    const stated = row.action === 'throttled' ? secondsStatedIn(message) : undefined;
    return {
      code: row.code,
      action: row.action,
      message: boundedMessage(message),
      retryAfterMs: headerDelay ?? stated ?? row.defaultRetryAfterMs,
      globalThrottle: row.globalThrottle === true,
    };
  }
  const byStatus = classifyHttpStatus(input.status);
  const message = messages.length > 0 ? messages.join('; ') : `HTTP ${input.status}`;
  return {
    ...byStatus,
    message: boundedMessage(message),
    retryAfterMs: byStatus.action === 'throttled' ? (headerDelay ?? secondsStatedIn(message)) : headerDelay,
  };
}
