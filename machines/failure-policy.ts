// The failure policy of the steps before the exchange order exists: what a thrown value means, whether and when
// a step is tried again (the one retry table, domain.ts failureRetryPolicy), and the reason an order fails with.

import { backoffDelay } from './backoff.ts';
import { boundedCode, boundedMessage, failureRetryPolicy, isExchangeFailure } from './domain.ts';
import type { FailureRecord, OrderConfig, OrderContext, OrderFailureReason } from './order-types.ts';

/**
 * What a thrown value means to the machine; anything but an ExchangeFailure is an unexpected, retryable error. Every
 * failure the machine records or publishes (lastFailure, order.failed, order.parked, order.deposit_rejected,
 * order.settle_refused) comes from here, its message and code within the caps on exchange text (domain.ts).
 */
export function failureRecordOf(error: unknown, fallbackAt: number): FailureRecord {
  if (isExchangeFailure(error)) {
    const at = (error as { at?: unknown }).at;
    return {
      action: error.action,
      code: boundedCode(error.code),
      message: boundedMessage(error.message),
      at: typeof at === 'number' ? at : fallbackAt,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  // No classification explains it (the one retry table says what that allows).
  return { action: 'unexpected', code: 'unexpected_error', message: boundedMessage(message), at: fallbackAt };
}

export function retryAfterOf(error: unknown): number | null {
  return isExchangeFailure(error) && typeof error.retryAfterMs === 'number' ? error.retryAfterMs : null;
}

/**
 * When to retry after a failure: the Retry-After of a 429 when given; a fixed-rate quote throttle without it waits at
 * least fixedRateThrottleDelayMs; anything else backs off exponentially with jitter, capped at backoff.maxMs.
 */
export function retryDelayFor(
  config: OrderConfig,
  failure: FailureRecord,
  retryAfterMs: number | null,
  attempt: number,
  rngState: number,
): { readonly delayMs: number; readonly rngState: number } {
  if (failure.action === 'throttled' && retryAfterMs !== null)
    return { delayMs: Math.max(0, retryAfterMs), rngState };
  const backoff = backoffDelay(config.backoff, attempt, rngState);
  if (failure.action === 'throttled') {
    return {
      delayMs: Math.max(config.fixedRateThrottleDelayMs, backoff.delayMs),
      rngState: backoff.rngState,
    };
  }
  return backoff;
}

/** The same step may be tried again after a delay (the retry table's `same_step`). */
export function isRetryable(error: unknown): boolean {
  return failureRetryPolicy[failureRecordOf(error, 0).action] === 'same_step';
}

export function needsRequote(error: unknown): boolean {
  return failureRetryPolicy[failureRecordOf(error, 0).action] === 'after_requote';
}

export function mayHaveTakenEffect(error: unknown): boolean {
  return failureRetryPolicy[failureRecordOf(error, 0).action] === 'after_verifying';
}

export function hasAttemptsLeft(context: OrderContext): boolean {
  return context.attempt + 1 < context.config.maxAttempts;
}

/**
 * A fresh quote is allowed while the total stays under maxRequotes and the failure's own code stays under its own
 * limit: the interface document says to retry `rate_id '<id>' is invalid or expired.` once with a fresh quote.
 */
export function canRequote(context: OrderContext, error: unknown): boolean {
  const code = failureRecordOf(error, 0).code;
  const perCode = context.config.requoteLimits[code];
  const usedForCode = context.requotesByCode[code] ?? 0;
  return context.requotes < context.config.maxRequotes && (perCode === undefined || usedForCode < perCode);
}

export function failureReasonOf(failure: FailureRecord): OrderFailureReason {
  if (failure.action === 'mode_mismatch') return 'mode_mismatch';
  const policy = failureRetryPolicy[failure.action];
  if (policy === 'after_requote') return 'requote_limit_reached';
  if (policy === 'same_step') return 'retries_exhausted';
  return 'rejected';
}

/**
 * A step failed and will be tried again: when (`delayMs` after `at`; `tries` failures of it so far: attempt,
 * pollAttempt or depositAttempt) and what the context notes of it (the clock, the failure, the jitter PRNG's state
 * after the delay was drawn).
 */
export function nextTry(
  context: OrderContext,
  error: unknown,
  tries: number,
): {
  readonly at: number;
  readonly delayMs: number;
  readonly noted: Pick<OrderContext, 'now' | 'lastFailure' | 'rngState'>;
} {
  const failure = failureRecordOf(error, context.now);
  const { delayMs, rngState } = retryDelayFor(
    context.config,
    failure,
    retryAfterOf(error),
    tries,
    context.rngState,
  );
  return { at: failure.at, delayMs, noted: { now: failure.at, lastFailure: failure, rngState } };
}
