// How long a throttled API key is held back: the exchange's `Retry-After` (or the wait its throttle message states),
// never longer than a cap (EXCHANGE_RETRY_AFTER_MAX_MS). A global throttle holds the key for every replica through
// the shared request budget, so a header that says "an hour" (a proxy's, a CDN's, a bug's) would silence every order
// of that mode for an hour. Past the cap the next call finds out: a throttle still in force answers 429 again, and
// the key is held again. The cap is counted (worker_exchange_retry_after_capped_total) and alerted on.

/** The documented throttle is per minute: no honest Retry-After needs more than one window. */
export const DEFAULT_RETRY_AFTER_MAX_MS = 60_000;

export interface BoundedRetryAfter {
  /** The wait to honour: the stated one, or the cap when it said more. */
  readonly retryAfterMs: number | undefined;
  /** What the exchange said, when it said more than the cap. */
  readonly cappedFromMs?: number;
}

export function boundRetryAfter(statedMs: number | undefined, maxMs: number): BoundedRetryAfter {
  if (statedMs === undefined || statedMs <= maxMs) return { retryAfterMs: statedMs };
  return { retryAfterMs: maxMs, cappedFromMs: statedMs };
}
