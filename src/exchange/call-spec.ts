// One call to the exchange as an endpoint describes it (CallSpec: path, schema, retry policy, timeout, budget
// priority, whether a lost request leaves its outcome unknown) and what its caller may say about it (CallOptions).
import type { z } from 'zod';
import type { TradingMode } from '../../machines/domain.ts';
import type { EndpointName } from './errors.ts';
import type { RequestPriority, RequestShare } from './request-budget.ts';

/** What the caller of an endpoint may say about one call. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  readonly priority?: RequestPriority;
  /** The part of the key's budget this call is held to, on top of its priority (request-budget.ts, requestShares). */
  readonly share?: RequestShare;
  /** `X-User-Timezone`: "GMT +HH:MM (Area/City)"; a value the exchange could not use is dropped with a warning. */
  readonly userTimezone?: string;
  /**
   * Called after the request budget is granted, immediately before each attempt leaves the process; throwing
   * stops the call unsent. The worker checks its order lease here (fencing a money-moving request).
   */
  readonly beforeSend?: () => void | Promise<void>;
  /**
   * Checked synchronously as the attempt is written to its connection, after any wait inside the HTTP pool (a busy
   * or new connection); throwing stops it unsent and the call rejects with what was thrown. The worker's lease
   * check: `beforeSend` runs before the request queues in the pool, and a replica may stall (GC, SIGSTOP, a loaded
   * machine) between the two, long enough for its successor to have taken the order over.
   */
  readonly fence?: () => void;
}

/** 'idempotent': repeated after any retryable failure; 'unsent_only': repeated only when it never left. */
export type RetryPolicy = 'idempotent' | 'unsent_only';
export type QueryValue = string | number | boolean | undefined;

/** One request as an endpoint describes it. */
export interface CallSpec<S extends z.ZodType> {
  /** The operation's name in spans and metrics (`exchange <operation>`). */
  readonly operation: string;
  readonly endpoint: EndpointName;
  readonly mode: TradingMode;
  /** Below the v2 base path, e.g. "/orders/". */
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>> | undefined;
  readonly body?: unknown;
  readonly schema: S;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  /** The budget priority when the caller names none. */
  readonly priority: RequestPriority;
  /** A request that may have taken effect once received (POST /orders/) cannot be repeated blindly. */
  readonly outcomeUnknownWhenLost: boolean;
  /** Status codes whose body is a successful result (default: 2xx). */
  readonly okStatuses?: readonly number[];
  /** `GET /rate/` also accepts the referral token alone. */
  readonly referralTokenAuthorizes?: boolean;
}

export interface CallResult<T> {
  readonly status: number;
  readonly data: T;
}
