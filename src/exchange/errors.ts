// Errors of the exchange client: every failure of a call, whether refused before sending, answered with an error
// by the exchange, lost in transport or malformed on return, is one ExchangeError carrying the FailureAction of
// the classification table. Invariant: messages hold the exchange's text and our own, never a key or token.
import type { ExchangeFailure, FailureAction } from '../../machines/domain.ts';
import { WorkerError } from '../errors.ts';

/** An endpoint as a method and path template, e.g. "PATCH /orders/{unique_reference}/". Never carries ids. */
export type EndpointName = `${'GET' | 'POST' | 'PATCH'} /${string}`;

const retryableActions: ReadonlySet<FailureAction> = new Set([
  'requote',
  'backoff',
  'throttled',
  'non_actionable',
]);

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
      retryable: retryableActions.has(init.action),
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
 * unforeseen library failure: reported as fatal so the machine parks the order instead of looping on it.
 */
export function toExchangeFailure(err: unknown): ExchangeFailure {
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
  return { kind: 'exchange_failure', action: 'fatal', code: 'unexpected_error', message };
}
