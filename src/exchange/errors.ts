// Errors of the exchange client: every failure of a call, whether refused before sending, answered with an error
// by the exchange, lost in transport or malformed on return, is one ExchangeError carrying the FailureAction of
// the classification table. Invariant: messages hold the exchange's text and our own, never a key or token.
import { isRetryableAction, type ExchangeFailure, type FailureAction } from '../../machines/domain.ts';
import { WorkerError } from '../errors.ts';

/** An endpoint as a method and path template, e.g. "PATCH /orders/{unique_reference}/". Never carries ids. */
export type EndpointName = `${'GET' | 'POST' | 'PATCH'} /${string}`;

export interface ExchangeErrorInit {
  readonly code: string;
  readonly action: FailureAction;
  readonly message: string;
  readonly endpoint: EndpointName;
  readonly httpStatus?: number | undefined;
  readonly retryAfterMs?: number | undefined;
  readonly cause?: unknown;
}

export class ExchangeError extends WorkerError {
  readonly action: FailureAction;
  readonly endpoint: EndpointName;
  readonly httpStatus: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: ExchangeErrorInit) {
    super(init.code, `${init.endpoint}: ${init.message}`, {
      retryable: isRetryableAction(init.action),
      cause: init.cause,
    });
    this.action = init.action;
    this.endpoint = init.endpoint;
    this.httpStatus = init.httpStatus;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** The exchange's (or our) message without the endpoint prefix. */
  get detail(): string {
    return this.message.slice(this.endpoint.length + 2);
  }
}

export function isExchangeError(value: unknown): value is ExchangeError {
  return value instanceof ExchangeError;
}

/**
 * The plain, serialisable failure the machine receives. Anything that is not an ExchangeError is a bug or an
 * unforeseen library failure: `unexpected` (retried boundedly, per the retry table), or `unknown_outcome` when the
 * call it interrupted may already have reached the exchange with a side effect.
 */
export function toExchangeFailure(
  err: unknown,
  opts: { mayHaveTakenEffect?: boolean } = {},
): ExchangeFailure {
  if (err instanceof ExchangeError) {
    return {
      kind: 'exchange_failure',
      action: err.action,
      code: err.code,
      message: err.detail,
      ...(err.httpStatus === undefined ? {} : { httpStatus: err.httpStatus }),
      ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    kind: 'exchange_failure',
    action: opts.mayHaveTakenEffect === true ? 'unknown_outcome' : 'unexpected',
    code: 'unexpected_error',
    message,
  };
}
