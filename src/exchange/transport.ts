// The exchange's transport: one HTTP request to the v2 API as an endpoint describes it (a CallSpec), carried out on
// undici with keep-alive pooling. It picks the API key of the trading mode, waits for the shared request budget, runs
// the `exchange <operation>` span with one HTTP client span per attempt, enforces the timeout, retries what may be
// retried and turns every failure into one ExchangeError from the classification table. Money-safety invariants:
// GET and PATCH retry transport and 5xx failures; POST retries only when it provably never left (connect failures);
// a request that may have taken effect (POST /orders/) and was lost or answered 5xx/408 ends in 'unknown_outcome',
// and the caller's signal never abandons it once it has left; keys and tokens never reach logs, spans, errors or the
// budget store. What a call is: call-spec.ts; what a failed attempt becomes and whether it is repeated:
// attempt-failures.ts.
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import type { TradingMode } from '../../machines/domain.ts';
import {
  ATTR_ERROR_TYPE,
  ATTR_EXCHANGE_UNIQUE_REFERENCE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  ATTR_URL_TEMPLATE,
} from '../telemetry/semconv.ts';
import { answerLeavesOutcomeUnknown, mayRepeat, transportFailure } from './attempt-failures.ts';
import type { CallOptions, CallResult, CallSpec, QueryValue } from './call-spec.ts';
import { classifyErrorResponse } from './error-classification.ts';
import { ExchangeError, type EndpointName } from './errors.ts';
import { boundRetryAfter, DEFAULT_RETRY_AFTER_MAX_MS } from './retry-after.ts';
import { fenced, StoppedUnsent } from './send-fence.ts';
import {
  apiKeyFingerprint,
  exchangeThrottle,
  LocalRequestBudget,
  type RequestBudget,
  type RequestPriority,
  type RequestShare,
} from './request-budget.ts';
import { userTimezoneProblem } from './user-timezone.ts';

/** Pino-compatible subset: structured fields first, then the message. */
export interface ExchangeLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What the transport reports for metrics; label values are operations, modes and error codes, never secrets. */
export interface ExchangeCallObserver {
  /** outcome: 'ok' or the final error code. */
  callFinished(call: { operation: string; mode: TradingMode; outcome: string; seconds: number }): void;
  attemptFailed(attempt: { operation: string; errorType: string; action: string }): void;
  budgetWaited(wait: { mode: TradingMode; priority: RequestPriority; seconds: number }): void;
  /** A Retry-After (or stated wait) longer than `retryAfterMaxMs` was cut to it (retry-after.ts). */
  retryAfterCapped?(capped: { operation: string; statedMs: number; honouredMs: number }): void;
}

export interface RetryOptions {
  /** Attempts of a retryable call, the first included. Default 3. */
  readonly maxAttempts?: number;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export interface ExchangeTransportOptions {
  /** The v2 base address (ends with the v2 path prefix), e.g. "https://api.example/en/api/v2". */
  readonly baseUrl: string;
  /** One API key per trading mode; a call in a mode without a key is refused. */
  readonly credentials: { readonly defi?: string; readonly cefi?: string; readonly cefi_fixed?: string };
  /** Sent as `x-referral-token` on every call of a mode without its own token; required by pre-screening. */
  readonly referralToken?: string;
  /**
   * A referral token per trading mode (a partner may hold a separate referral code and key per mode, and a code
   * must belong to the key's owner); a mode without one uses `referralToken`.
   */
  readonly referralTokens?: {
    readonly defi?: string | undefined;
    readonly cefi?: string | undefined;
    readonly cefi_fixed?: string | undefined;
  };
  /** Shared budget; default: a process-local budget at the documented 2500/min. */
  readonly budget?: RequestBudget;
  /** Default: an own keep-alive Agent, closed by `close()`. */
  readonly dispatcher?: Dispatcher;
  readonly retry?: RetryOptions;
  /** The longest wait a throttle's Retry-After may impose on the key (default 60 s, retry-after.ts). */
  readonly retryAfterMaxMs?: number;
  readonly tracer?: Tracer;
  /** Told of every finished call, failed attempt and budget wait (metrics). */
  readonly observer?: ExchangeCallObserver;
  readonly logger?: ExchangeLogger;
}

/** The URL for a span: query parameters that could carry credentials are masked (ours never do; a cursor might). */
function urlWithoutSecrets(url: URL): string {
  const copy = new URL(url);
  copy.username = '';
  copy.password = '';
  for (const name of [...copy.searchParams.keys()])
    if (/key|token|secret|signature|auth|password/i.test(name)) copy.searchParams.set(name, 'REDACTED');
  return copy.toString();
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

interface Secret {
  readonly secret: string;
  readonly fingerprint: string;
}

export class ExchangeTransport {
  readonly #base: URL;
  readonly #basePath: string;
  /** server.address and server.port of every request's span: each request goes to the base URL's origin (#url). */
  readonly #server: { address: string; port: number };
  readonly #keys = new Map<TradingMode, Secret>();
  readonly #referrals = new Map<TradingMode, Secret>();
  readonly #budget: RequestBudget;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #maxAttempts: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #retryAfterMaxMs: number;
  readonly #tracer: Tracer;
  readonly #observer: ExchangeCallObserver | undefined;
  readonly #logger: ExchangeLogger | undefined;

  constructor(options: ExchangeTransportOptions) {
    this.#base = new URL(options.baseUrl);
    this.#basePath = this.#base.pathname.replace(/\/+$/, '');
    this.#server = {
      address: this.#base.hostname,
      port: Number(this.#base.port || (this.#base.protocol === 'https:' ? 443 : 80)),
    };
    for (const [mode, secret] of Object.entries(options.credentials) as [TradingMode, string | undefined][]) {
      if (secret !== undefined && secret !== '')
        this.#keys.set(mode, { secret, fingerprint: apiKeyFingerprint(secret) });
    }
    for (const mode of ['defi', 'cefi', 'cefi_fixed'] as const) {
      const own = options.referralTokens?.[mode];
      const token = own !== undefined && own !== '' ? own : options.referralToken;
      if (token !== undefined && token !== '')
        this.#referrals.set(mode, { secret: token, fingerprint: apiKeyFingerprint(token) });
    }
    this.#budget = options.budget ?? new LocalRequestBudget(exchangeThrottle);
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 64 });
    this.#maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 3);
    this.#baseDelayMs = options.retry?.baseDelayMs ?? 200;
    this.#maxDelayMs = options.retry?.maxDelayMs ?? 5_000;
    this.#retryAfterMaxMs = options.retryAfterMaxMs ?? DEFAULT_RETRY_AFTER_MAX_MS;
    this.#tracer = options.tracer ?? trace.getTracer('exchange-client');
    this.#observer = options.observer;
    this.#logger = options.logger;
  }

  /** Budget key of a mode: a fingerprint of its API key (the key itself never leaves this object). */
  budgetKey(mode: TradingMode): string | undefined {
    return this.#keys.get(mode)?.fingerprint;
  }

  /** True when calls of this mode carry a referral token. */
  hasReferralToken(mode: TradingMode): boolean {
    return this.#referrals.has(mode);
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  /**
   * The path and query of a `next`/`previous` link of `listPath`: an opaque cursor becomes a query parameter; an
   * absolute URL must stay on the exchange's origin and v2 prefix (it gets our key), else it is refused unsent.
   */
  resolveCursor(
    endpoint: EndpointName,
    listPath: string,
    cursor: string,
  ): { path: string; query: Record<string, QueryValue> } {
    if (!/^https?:\/\//i.test(cursor) && !cursor.startsWith('/'))
      return { path: listPath, query: { cursor } };
    let url: URL;
    try {
      url = new URL(cursor, this.#base);
    } catch {
      throw new ExchangeError({
        code: 'invalid_cursor',
        action: 'fatal',
        message: 'refused before sending: the pagination link is not a URL',
        endpoint,
      });
    }
    // A link on another origin, or outside the base path, is never followed there (the API key would go with it).
    // Its query (the cursor) is sent to the same list on our own base URL instead: an exchange behind a proxy or a
    // load balancer builds its links from the address it was reached at (another host, http instead of https, an
    // internal name), and refusing such a link left every CeFi create in doubt parked for good - its lookup could
    // never read a second page.
    if (url.origin !== this.#base.origin || !url.pathname.startsWith(`${this.#basePath}/`))
      return { path: listPath, query: Object.fromEntries(url.searchParams) };
    return { path: url.pathname.slice(this.#basePath.length), query: Object.fromEntries(url.searchParams) };
  }

  /**
   * One exchange operation in its own span (`exchange <operation>`): the budget wait and every HTTP attempt are
   * its children, so a slow call shows whether it waited for the budget or for the exchange.
   */
  call<S extends z.ZodType>(spec: CallSpec<S>, options: CallOptions = {}): Promise<CallResult<z.output<S>>> {
    const startedAt = performance.now();
    const operationSpan = this.#tracer.startSpan(`exchange ${spec.operation}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        'exchange.operation': spec.operation,
        'exchange.endpoint': spec.endpoint,
        'exchange.trading_mode': spec.mode,
      },
    });
    // The parent is passed explicitly as well, so the tree holds even where no context manager is registered.
    const parent = trace.setSpan(context.active(), operationSpan);
    return context.with(parent, async () => {
      let outcome = 'ok';
      try {
        const result = await this.#callWithRetries(spec, options, parent);
        const reference = (result.data as { unique_reference?: unknown } | null)?.unique_reference;
        if (typeof reference === 'string')
          operationSpan.setAttribute(ATTR_EXCHANGE_UNIQUE_REFERENCE, reference);
        return result;
      } catch (err) {
        outcome = err instanceof ExchangeError ? err.code : 'aborted';
        operationSpan.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        operationSpan.setAttribute(ATTR_ERROR_TYPE, outcome);
        throw err;
      } finally {
        operationSpan.end();
        this.#observer?.callFinished({
          operation: spec.operation,
          mode: spec.mode,
          outcome,
          seconds: (performance.now() - startedAt) / 1000,
        });
      }
    });
  }

  #credentialFor(spec: CallSpec<z.ZodType>): { authorization: string | undefined; budgetKey: string } {
    const key = this.#keys.get(spec.mode);
    if (key !== undefined) return { authorization: `ApiKey ${key.secret}`, budgetKey: key.fingerprint };
    const referral = this.#referrals.get(spec.mode);
    if (spec.referralTokenAuthorizes === true && referral !== undefined)
      return { authorization: undefined, budgetKey: referral.fingerprint };
    throw new ExchangeError({
      code: 'credentials_missing_for_mode',
      action: 'fatal',
      message: `refused before sending: no API key configured for trading mode ${spec.mode}`,
      endpoint: spec.endpoint,
    });
  }

  /** Omitting X-User-Timezone never fails a request, so a value the exchange could not use is dropped, not refused. */
  #usableUserTimezone(spec: CallSpec<z.ZodType>, value: string | undefined): string | undefined {
    if (value === undefined) return undefined;
    const problem = userTimezoneProblem(value);
    if (problem === undefined) return value;
    this.#logger?.warn(
      { endpoint: spec.endpoint, userTimezone: JSON.stringify(value.slice(0, 80)), problem },
      'X-User-Timezone dropped: the exchange could not use it',
    );
    return undefined;
  }

  #url(spec: CallSpec<z.ZodType>): string {
    const url = new URL(this.#base.origin);
    url.pathname = `${this.#basePath}${spec.path}`;
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  #backoffDelay(attempt: number): number {
    const ceiling = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** (attempt - 1));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  /** Waits for the shared request budget inside a span of its own (the wait is part of the call's latency). */
  async #waitForBudget(
    spec: CallSpec<z.ZodType>,
    budgetKey: string,
    priority: RequestPriority,
    signal: AbortSignal | undefined,
    parent: Context,
    share: RequestShare | undefined,
  ): Promise<void> {
    const startedAt = performance.now();
    const span = this.#tracer.startSpan(
      'exchange budget wait',
      {
        attributes: {
          'exchange.trading_mode': spec.mode,
          'exchange.priority': priority,
          ...(share !== undefined ? { 'exchange.budget_share': share } : {}),
        },
      },
      parent,
    );
    try {
      await (share === undefined
        ? this.#budget.acquire(budgetKey, priority, signal)
        : this.#budget.acquire(budgetKey, priority, signal, share));
    } finally {
      span.end();
      this.#observer?.budgetWaited({
        mode: spec.mode,
        priority,
        seconds: (performance.now() - startedAt) / 1000,
      });
    }
  }

  /** An HTTP client span as the semantic conventions name it: `{method} {url.template}`. */
  #startAttemptSpan(
    spec: CallSpec<z.ZodType>,
    method: string,
    url: string,
    attempt: number,
    parent: Context,
  ): Span {
    return this.#tracer.startSpan(
      spec.endpoint,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: method,
          // Built from the base's origin (#url): no credentials; only a query can hold something to mask.
          [ATTR_URL_FULL]: url.includes('?') ? urlWithoutSecrets(new URL(url)) : url,
          [ATTR_URL_TEMPLATE]: spec.endpoint.slice(spec.endpoint.indexOf(' ') + 1),
          [ATTR_SERVER_ADDRESS]: this.#server.address,
          [ATTR_SERVER_PORT]: this.#server.port,
          ...(attempt > 1 ? { [ATTR_HTTP_REQUEST_RESEND_COUNT]: attempt - 1 } : {}),
          'exchange.endpoint': spec.endpoint,
          'exchange.attempt': attempt,
        },
      },
      parent,
    );
  }

  async #callWithRetries<S extends z.ZodType>(
    spec: CallSpec<S>,
    options: CallOptions,
    parent: Context,
  ): Promise<CallResult<z.output<S>>> {
    const credential = this.#credentialFor(spec);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (credential.authorization !== undefined) headers['authorization'] = credential.authorization;
    const referral = this.#referrals.get(spec.mode);
    if (referral !== undefined) headers['x-referral-token'] = referral.secret;
    const userTimezone = this.#usableUserTimezone(spec, options.userTimezone);
    if (userTimezone !== undefined) headers['x-user-timezone'] = userTimezone;
    let payload: string | undefined;
    if (spec.body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(spec.body);
    }
    const url = this.#url(spec);
    const method = spec.endpoint.slice(0, spec.endpoint.indexOf(' ')) as 'GET' | 'POST' | 'PATCH';
    const priority = options.priority ?? spec.priority;

    for (let attempt = 1; ; attempt++) {
      await this.#waitForBudget(spec, credential.budgetKey, priority, options.signal, parent, options.share);
      options.signal?.throwIfAborted();
      await options.beforeSend?.();
      const span = this.#startAttemptSpan(spec, method, url, attempt, parent);
      try {
        const result = await this.#attempt(
          spec,
          method,
          url,
          headers,
          payload,
          credential.budgetKey,
          span,
          options.signal,
          options.fence,
        );
        span.setStatus({ code: SpanStatusCode.OK });
        return result;
      } catch (err) {
        const failure = err instanceof ExchangeError ? err : undefined;
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure?.code ?? 'aborted' });
        span.setAttribute(ATTR_ERROR_TYPE, failure?.code ?? 'aborted');
        if (failure !== undefined) {
          span.setAttribute('exchange.failure_action', failure.action);
          this.#observer?.attemptFailed({
            operation: spec.operation,
            errorType: failure.code,
            action: failure.action,
          });
        }
        if (failure === undefined || !mayRepeat(spec, failure) || attempt >= this.#maxAttempts) throw err;
        const delayMs = failure.code === 'throttled' ? 0 : this.#backoffDelay(attempt); // the budget holds throttled keys
        this.#logger?.warn(
          {
            endpoint: spec.endpoint,
            code: failure.code,
            httpStatus: failure.httpStatus,
            attempt,
            delayMs: Math.round(delayMs),
          },
          'exchange call failed; retrying',
        );
        if (delayMs > 0)
          await sleep(delayMs, undefined, options.signal === undefined ? {} : { signal: options.signal });
      } finally {
        span.end();
      }
    }
  }

  async #attempt<S extends z.ZodType>(
    spec: CallSpec<S>,
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    headers: Record<string, string>,
    payload: string | undefined,
    budgetKey: string,
    span: Span,
    callerSignal: AbortSignal | undefined,
    fence: (() => void) | undefined,
  ): Promise<CallResult<z.output<S>>> {
    // The request's own timeout, cleared once it is answered. Not AbortSignal.timeout: its timer is not cleared
    // with the request, so it fired for every call seconds later and built a DOMException with a stack trace (with
    // AbortSignal.any's composite signal, about 2 % of a replica's CPU at 10k orders).
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException(`timed out after ${spec.timeoutMs} ms`, 'TimeoutError'));
    }, spec.timeoutMs);
    // A request that may have a side effect is not abandoned once it has left: its answer is worth more than the
    // time saved (the caller's signal still stops it before it is sent). It ends by its own timeout.
    const caller = callerSignal === undefined || spec.outcomeUnknownWhenLost ? undefined : callerSignal;
    const followCaller = (): void => controller.abort(caller?.reason);
    if (caller?.aborted) followCaller();
    else caller?.addEventListener('abort', followCaller, { once: true });
    const signal = controller.signal;
    let status: number;
    let text: string;
    let retryAfter: string | undefined;
    try {
      const response = await request(url, {
        dispatcher: fence === undefined ? this.#dispatcher : fenced(this.#dispatcher, fence),
        method,
        headers,
        body: payload ?? null,
        signal,
        headersTimeout: spec.timeoutMs,
        bodyTimeout: spec.timeoutMs,
      });
      status = response.statusCode;
      retryAfter = firstHeader(response.headers['retry-after']);
      text = await response.body.text();
    } catch (err) {
      if (err instanceof StoppedUnsent) throw err.reason;
      throw transportFailure(spec, err, timedOut, callerSignal);
    } finally {
      clearTimeout(timer);
      caller?.removeEventListener('abort', followCaller);
    }
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);

    const ok =
      spec.okStatuses === undefined ? status >= 200 && status < 300 : spec.okStatuses.includes(status);
    const body = parseJson(text);
    if (!ok) {
      const classified = classifyErrorResponse({ status, body, retryAfter });
      const { retryAfterMs, cappedFromMs } = boundRetryAfter(classified.retryAfterMs, this.#retryAfterMaxMs);
      if (cappedFromMs !== undefined) {
        this.#observer?.retryAfterCapped?.({
          operation: spec.operation,
          statedMs: cappedFromMs,
          honouredMs: retryAfterMs ?? 0,
        });
        this.#logger?.warn(
          { endpoint: spec.endpoint, httpStatus: status, statedMs: cappedFromMs, honouredMs: retryAfterMs },
          'exchange asked for a longer wait than EXCHANGE_RETRY_AFTER_MAX_MS; waiting the cap',
        );
      }
      if (classified.globalThrottle) await this.#budget.penalize(budgetKey, retryAfterMs ?? 1_000);
      // A request with a side effect answered by a server error or a request timeout may have taken effect
      // before the server failed to answer: that is not a "no", whatever the body says.
      const inDoubt = spec.outcomeUnknownWhenLost && answerLeavesOutcomeUnknown(status);
      throw new ExchangeError({
        code: classified.code,
        action: inDoubt ? 'unknown_outcome' : classified.action,
        message: inDoubt
          ? `${classified.message} (HTTP ${status}); the order may have been created, look it up`
          : classified.message,
        endpoint: spec.endpoint,
        httpStatus: status,
        retryAfterMs,
      });
    }
    const parsed = spec.schema.safeParse(body);
    if (parsed.success) return { status, data: parsed.data };
    const issue = parsed.error.issues[0];
    const field =
      issue === undefined || issue.path.length === 0 ? '(body)' : issue.path.map(String).join('.');
    throw new ExchangeError({
      code: 'invalid_response',
      // A created order we cannot read is still created: the caller must look it up, not create again.
      action: spec.outcomeUnknownWhenLost ? 'unknown_outcome' : 'fatal',
      message: `response field "${field}": ${issue?.message ?? 'invalid'} (HTTP ${status})`,
      endpoint: spec.endpoint,
      httpStatus: status,
    });
  }
}
