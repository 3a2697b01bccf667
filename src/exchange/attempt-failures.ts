// What a failed attempt becomes: one ExchangeError of the classification's codes and actions, and whether the
// retry policy repeats it. Money safety: only a request that provably never left (a connect failure) is repeated
// whatever its policy; a request with a side effect that was lost, or answered 5xx/408, ends in 'unknown_outcome'.
import type { z } from 'zod';
import type { CallSpec } from './call-spec.ts';
import { ExchangeError } from './errors.ts';

/**
 * Statuses that do not say "not done" for a request with a side effect: 408 (the server gave up waiting, possibly
 * after acting) and every 5xx (it may have failed after the order was written). Everything else in 4xx refuses.
 */
export function answerLeavesOutcomeUnknown(status: number): boolean {
  return status === 408 || status >= 500;
}

const connectFailureCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function errorCode(err: unknown): string | undefined {
  for (
    let current: unknown = err, depth = 0;
    current !== undefined && current !== null && depth < 5;
    depth++
  ) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The retry policy: may this failed attempt be repeated? */
export function mayRepeat(spec: CallSpec<z.ZodType>, failure: ExchangeError): boolean {
  if (failure.code === 'connection_failed') return true; // nothing left this process
  if (spec.retry !== 'idempotent') return false;
  return (
    failure.code === 'timeout' ||
    failure.code === 'connection_lost' ||
    failure.code === 'throttled' ||
    failure.code === 'http_408' ||
    (failure.httpStatus !== undefined && failure.httpStatus >= 500 && failure.code.startsWith('http_'))
  );
}

/** A request that got no answer: refused to connect (never left), timed out, aborted or lost on the way. */
export function transportFailure(
  spec: CallSpec<z.ZodType>,
  err: unknown,
  timedOut: boolean,
  callerSignal: AbortSignal | undefined,
): unknown {
  const code = errorCode(err);
  if (code !== undefined && connectFailureCodes.has(code)) {
    return new ExchangeError({
      code: 'connection_failed',
      action: 'backoff',
      message: `could not connect (${code})`,
      endpoint: spec.endpoint,
      cause: err,
    });
  }
  const callerAborted = callerSignal?.aborted === true && !timedOut;
  if (callerAborted && !spec.outcomeUnknownWhenLost) return callerSignal.reason;
  const what = timedOut
    ? `timed out after ${spec.timeoutMs} ms`
    : callerAborted
      ? 'aborted by the caller'
      : `connection lost (${code ?? 'unknown'})`;
  return new ExchangeError({
    code: timedOut ? 'timeout' : callerAborted ? 'aborted' : 'connection_lost',
    action: spec.outcomeUnknownWhenLost ? 'unknown_outcome' : 'backoff',
    message: spec.outcomeUnknownWhenLost ? `${what}; the order may have been created, look it up` : what,
    endpoint: spec.endpoint,
    cause: err,
  });
}
