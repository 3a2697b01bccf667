// ExchangeClient: the worker's only door to the exchange's v2 API, on undici with keep-alive pooling. Every call
// picks the API key of its trading mode, is refused early when the document says it would fail, waits for the
// shared request budget, runs under a per-endpoint timeout and the caller's AbortSignal, and ends in a typed value
// or one ExchangeError from the classification table. Invariants: GET and PATCH are retried on transport and 5xx
// failures; POST is retried only when it provably never left (connect failures); a POST /orders/ that may have
// been received ends in 'unknown_outcome'; keys and tokens never reach logs, spans, errors or the budget store.
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
import {
  exchangeStatusCodes,
  type ExchangeOrderView,
  type ExchangeStatus,
  type TradingMode,
} from '../../machines/domain.ts';
import { classifyErrorResponse } from './error-classification.ts';
import { ExchangeError, type EndpointName } from './errors.ts';
import { toOrderView } from './order-view.ts';
import {
  apiKeyFingerprint,
  exchangeThrottle,
  LocalRequestBudget,
  type RequestBudget,
  type RequestPriority,
} from './request-budget.ts';
import {
  checkCreateOrder,
  checkPreScreening,
  checkRateQuery,
  checkShape,
  checkUpdateOrder,
  defaultFiatCurrencies,
} from './request-rules.ts';
import {
  createOrderRequestSchema,
  currencyListSchema,
  currencySchema,
  networkListSchema,
  networkSchema,
  orderPageSchema,
  orderSchema,
  pairListSchema,
  pairSchema,
  preScreeningRequestSchema,
  preScreeningResultSchema,
  randomPairSchema,
  rateListSchema,
  rateQuerySchema,
  updateOrderRequestSchema,
  type CreateOrderRequest,
  type PreScreeningRequest,
  type PreScreeningResult,
  type RateQuery,
  type WireCurrency,
  type WireNetwork,
  type WirePair,
  type WireRandomPair,
  type WireRate,
} from './schemas.ts';
import { userTimezoneProblem } from './user-timezone.ts';

/** The client's operations; each has its own timeout. */
export type ExchangeOperation =
  | 'listCurrencies'
  | 'getCurrency'
  | 'listNetworks'
  | 'getNetwork'
  | 'listPairs'
  | 'getPair'
  | 'getRandomPair'
  | 'getRates'
  | 'createOrder'
  | 'listOrders'
  | 'getOrder'
  | 'updateOrder'
  | 'submitDepositTransaction'
  | 'preScreen';

/** The document asks for 15 s or more on actionable quotes and DeFi fixed-rate creation; shorter settings are raised. */
export const minimumSlowQuoteTimeoutMs = 15_000;

export const defaultTimeoutsMs: Readonly<Record<ExchangeOperation | 'actionableQuote', number>> = {
  listCurrencies: 10_000,
  getCurrency: 10_000,
  listNetworks: 10_000,
  getNetwork: 10_000,
  listPairs: 10_000,
  getPair: 10_000,
  getRandomPair: 10_000,
  getRates: 10_000,
  actionableQuote: 25_000,
  createOrder: 30_000,
  listOrders: 15_000,
  getOrder: 10_000,
  updateOrder: 15_000,
  submitDepositTransaction: 15_000,
  preScreen: 15_000,
};

/** Money-moving calls first, then quotes and the confirmation read, polling and catalogue reads last. */
export const defaultPriorities: Readonly<Record<ExchangeOperation, RequestPriority>> = {
  listCurrencies: 'low',
  getCurrency: 'low',
  listNetworks: 'low',
  getNetwork: 'low',
  listPairs: 'low',
  getPair: 'low',
  getRandomPair: 'low',
  getRates: 'normal',
  createOrder: 'high',
  listOrders: 'low',
  getOrder: 'low',
  updateOrder: 'high',
  submitDepositTransaction: 'high',
  preScreen: 'normal',
};

/** Pino-compatible subset: structured fields first, then the message. */
export interface ExchangeLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What the client reports for metrics; label values are operations, modes and error codes, never secrets. */
export interface ExchangeCallObserver {
  /** outcome: 'ok' or the final error code. */
  callFinished(call: {
    operation: ExchangeOperation;
    mode: TradingMode;
    outcome: string;
    seconds: number;
  }): void;
  attemptFailed(attempt: { operation: ExchangeOperation; errorType: string; action: string }): void;
  budgetWaited(wait: { mode: TradingMode; priority: RequestPriority; seconds: number }): void;
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

export interface RetryOptions {
  /** Attempts of a retryable call, the first included. Default 3. */
  readonly maxAttempts?: number;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export interface ExchangeClientOptions {
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
  readonly timeouts?: Partial<Record<ExchangeOperation | 'actionableQuote', number>>;
  readonly retry?: RetryOptions;
  readonly tracer?: Tracer;
  /** Told of every finished call, failed attempt and budget wait (metrics). */
  readonly observer?: ExchangeCallObserver;
  readonly logger?: ExchangeLogger;
  /** Fiat codes for the "SELL only on fiat pairs" rule. */
  readonly fiatCurrencies?: ReadonlySet<string>;
}

/**
 * Statuses that do not say "not done" for a request with a side effect: 408 (the server gave up waiting, possibly
 * after acting) and every 5xx (it may have failed after the order was written). Everything else in 4xx refuses.
 */
export function answerLeavesOutcomeUnknown(status: number): boolean {
  return status === 408 || status >= 500;
}

export interface CallOptions {
  readonly signal?: AbortSignal;
  readonly priority?: RequestPriority;
  /** `X-User-Timezone`: "GMT +HH:MM (Area/City)"; a value the exchange could not use is dropped with a warning. */
  readonly userTimezone?: string;
  /**
   * Called after the request budget is granted, immediately before each attempt leaves the process; throwing
   * stops the call unsent. The worker checks its order lease here (fencing a money-moving request).
   */
  readonly beforeSend?: () => void | Promise<void>;
}

export interface OrderPage {
  readonly results: ExchangeOrderView[];
  /** A URL or an opaque cursor, as the exchange gives it; pass it back as `cursor`. */
  readonly next: string | null;
  readonly previous: string | null;
}

export interface ListOrdersParams {
  /** Numeric v1 code or status name; the filter takes the code. */
  readonly status?: number | ExchangeStatus;
  /** `next`/`previous` of an earlier page. */
  readonly cursor?: string;
}

type RetryPolicy = 'idempotent' | 'unsent_only';
type QueryValue = string | number | boolean | undefined;

interface CallSpec<S extends z.ZodType> {
  readonly operation: ExchangeOperation;
  readonly endpoint: EndpointName;
  readonly mode: TradingMode;
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>> | undefined;
  readonly body?: unknown;
  readonly schema: S;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  /** A POST /orders/ that may have been received cannot be repeated blindly. */
  readonly outcomeUnknownWhenLost: boolean;
  /** Status codes whose body is a successful result (default: 2xx). */
  readonly okStatuses?: readonly number[];
  /** `GET /rate/` also accepts the referral token alone. */
  readonly referralTokenAuthorizes?: boolean;
}

interface CallResult<T> {
  readonly status: number;
  readonly data: T;
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

export class ExchangeClient {
  readonly #base: URL;
  readonly #basePath: string;
  readonly #keys = new Map<TradingMode, { readonly secret: string; readonly fingerprint: string }>();
  readonly #referrals = new Map<TradingMode, { readonly secret: string; readonly fingerprint: string }>();
  readonly #budget: RequestBudget;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #timeouts: Readonly<Record<ExchangeOperation | 'actionableQuote', number>>;
  readonly #maxAttempts: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #tracer: Tracer;
  readonly #observer: ExchangeCallObserver | undefined;
  readonly #logger: ExchangeLogger | undefined;
  readonly #fiat: ReadonlySet<string>;

  constructor(options: ExchangeClientOptions) {
    this.#base = new URL(options.baseUrl);
    this.#basePath = this.#base.pathname.replace(/\/+$/, '');
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
    this.#timeouts = { ...defaultTimeoutsMs, ...options.timeouts };
    this.#maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 3);
    this.#baseDelayMs = options.retry?.baseDelayMs ?? 200;
    this.#maxDelayMs = options.retry?.maxDelayMs ?? 5_000;
    this.#tracer = options.tracer ?? trace.getTracer('exchange-client');
    this.#observer = options.observer;
    this.#logger = options.logger;
    this.#fiat = options.fiatCurrencies ?? defaultFiatCurrencies;
  }

  /** Budget key of a mode: a fingerprint of its API key (the key itself never leaves this object). */
  budgetKey(mode: TradingMode): string | undefined {
    return this.#keys.get(mode)?.fingerprint;
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  // -------------------------------------------------------------------------------------------------------------
  // Market data

  async listCurrencies(mode: TradingMode, options: CallOptions = {}): Promise<WireCurrency[]> {
    return (
      await this.#get('listCurrencies', 'GET /currency/', mode, '/currency/', currencyListSchema, options)
    ).data;
  }

  async getCurrency(
    mode: TradingMode,
    params: { readonly code: string },
    options: CallOptions = {},
  ): Promise<WireCurrency> {
    const path = `/currency/${encodeURIComponent(params.code)}/`;
    return (await this.#get('getCurrency', 'GET /currency/{code}/', mode, path, currencySchema, options))
      .data;
  }

  async listNetworks(mode: TradingMode, options: CallOptions = {}): Promise<WireNetwork[]> {
    return (await this.#get('listNetworks', 'GET /network/', mode, '/network/', networkListSchema, options))
      .data;
  }

  async getNetwork(
    mode: TradingMode,
    params: { readonly name: string },
    options: CallOptions = {},
  ): Promise<WireNetwork> {
    const path = `/network/${encodeURIComponent(params.name)}/`;
    return (await this.#get('getNetwork', 'GET /network/{name}/', mode, path, networkSchema, options)).data;
  }

  async listPairs(mode: TradingMode, options: CallOptions = {}): Promise<WirePair[]> {
    return (await this.#get('listPairs', 'GET /pair/', mode, '/pair/', pairListSchema, options)).data;
  }

  async getPair(
    mode: TradingMode,
    params: { readonly name: string },
    options: CallOptions = {},
  ): Promise<WirePair> {
    const path = `/pair/${encodeURIComponent(params.name)}/`;
    return (await this.#get('getPair', 'GET /pair/{name}/', mode, path, pairSchema, options)).data;
  }

  /** GET /pair/random/; a 417 (attempts exhausted) surfaces as a 'backoff' failure. */
  async getRandomPair(mode: TradingMode, options: CallOptions = {}): Promise<WireRandomPair> {
    return (
      await this.#get('getRandomPair', 'GET /pair/random/', mode, '/pair/random/', randomPairSchema, options)
    ).data;
  }

  /**
   * GET /rate/: rates or a quote. `actionable_quote: true` requests an actionable DeFi fixed-rate quote and gets the
   * slow-quote timeout. `markup` and `referral_rate` are exclusive and refused together.
   */
  async getRates(mode: TradingMode, params: RateQuery = {}, options: CallOptions = {}): Promise<WireRate[]> {
    const endpoint: EndpointName = 'GET /rate/';
    const query = checkShape(endpoint, rateQuerySchema, params);
    checkRateQuery(endpoint, query);
    const timeoutMs =
      query.actionable_quote === true
        ? Math.max(minimumSlowQuoteTimeoutMs, this.#timeouts.actionableQuote)
        : this.#timeouts.getRates;
    const result = await this.#call(
      {
        operation: 'getRates',
        endpoint,
        mode,
        path: '/rate/',
        query,
        schema: rateListSchema,
        // An actionable quote is never repeated here: identical requests must be ~15 s apart as the exchange sees
        // them, so a retry goes back through the caller's cooldown.
        retry: query.actionable_quote === true ? 'unsent_only' : 'idempotent',
        timeoutMs,
        outcomeUnknownWhenLost: false,
        referralTokenAuthorizes: true,
      },
      options,
    );
    return result.data;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Orders

  /**
   * POST /orders/. `reused` is true when the exchange answered 200 (an existing DeFi order reused idempotently)
   * rather than 201. Never repeated after it may have been received: such a loss is an 'unknown_outcome' failure.
   */
  async createOrder(
    mode: TradingMode,
    params: CreateOrderRequest,
    options: CallOptions = {},
  ): Promise<{ order: ExchangeOrderView; reused: boolean }> {
    const endpoint: EndpointName = 'POST /orders/';
    const body = checkShape(endpoint, createOrderRequestSchema, params);
    checkCreateOrder(endpoint, mode, body, this.#fiat);
    const timeoutMs =
      mode === 'cefi'
        ? this.#timeouts.createOrder
        : Math.max(minimumSlowQuoteTimeoutMs, this.#timeouts.createOrder);
    const result = await this.#call(
      {
        operation: 'createOrder',
        endpoint,
        mode,
        path: '/orders/',
        body,
        schema: orderSchema,
        retry: 'unsent_only',
        timeoutMs,
        outcomeUnknownWhenLost: true,
      },
      options,
    );
    return { order: toOrderView(result.data), reused: result.status === 200 };
  }

  /** GET /orders/ (CeFi orders only), cursor pagination. */
  async listOrders(
    mode: TradingMode,
    params: ListOrdersParams = {},
    options: CallOptions = {},
  ): Promise<OrderPage> {
    const endpoint: EndpointName = 'GET /orders/';
    let path = '/orders/';
    let query: Record<string, QueryValue> = {};
    if (params.cursor !== undefined) {
      const followed = this.#followCursor(endpoint, params.cursor);
      path = followed.path;
      query = followed.query;
    }
    if (params.status !== undefined)
      query['status'] =
        typeof params.status === 'number' ? params.status : exchangeStatusCodes[params.status];
    const result = await this.#call(
      {
        operation: 'listOrders',
        endpoint,
        mode,
        path,
        query,
        schema: orderPageSchema,
        retry: 'idempotent',
        timeoutMs: this.#timeouts.listOrders,
        outcomeUnknownWhenLost: false,
      },
      options,
    );
    const page = result.data;
    return {
      results: page.results.map(toOrderView),
      next: page.pagination?.next ?? page.next,
      previous: page.pagination?.previous ?? page.previous,
    };
  }

  async getOrder(
    mode: TradingMode,
    params: { readonly uniqueReference: string },
    options: CallOptions = {},
  ): Promise<ExchangeOrderView> {
    const path = `/orders/${encodeURIComponent(params.uniqueReference)}/`;
    const result = await this.#get(
      'getOrder',
      'GET /orders/{unique_reference}/',
      mode,
      path,
      orderSchema,
      options,
    );
    // An answer about another order is not an answer about this one (a proxy or cache mix-up, or an exchange bug).
    if (result.data.unique_reference !== params.uniqueReference) {
      throw new ExchangeError({
        code: 'invalid_response',
        action: 'fatal',
        message: `the answer describes order ${result.data.unique_reference.slice(0, 64)}, not the one requested`,
        endpoint: 'GET /orders/{unique_reference}/',
        httpStatus: result.status,
      });
    }
    return toOrderView(result.data);
  }

  /**
   * PATCH /orders/{unique_reference}/ with a referral code. The PATCH response is not shown in the document:
   * the order is returned when the body is a v2 order, else undefined.
   */
  async updateOrder(
    mode: TradingMode,
    params: { readonly uniqueReference: string; readonly referral_code: string },
    options: CallOptions = {},
  ): Promise<{ order: ExchangeOrderView | undefined }> {
    const endpoint: EndpointName = 'PATCH /orders/{unique_reference}/';
    const body = checkShape(endpoint, updateOrderRequestSchema, { referral_code: params.referral_code });
    checkUpdateOrder(endpoint, body);
    const result = await this.#patchOrder('updateOrder', mode, params.uniqueReference, body, options);
    return { order: result.data };
  }

  /**
   * PATCH /orders/{unique_reference}/ with `deposit_transaction`. A hash the exchange already recorded ("External
   * deposit notification with tx_id <hash>already exists") is a success with `alreadyRecorded: true`.
   */
  async submitDepositTransaction(
    mode: TradingMode,
    params: { readonly uniqueReference: string; readonly depositTransaction: string },
    options: CallOptions = {},
  ): Promise<{ alreadyRecorded: boolean; order: ExchangeOrderView | undefined }> {
    const endpoint: EndpointName = 'PATCH /orders/{unique_reference}/';
    const body = checkShape(endpoint, updateOrderRequestSchema, {
      deposit_transaction: params.depositTransaction,
    });
    checkUpdateOrder(endpoint, body);
    try {
      const result = await this.#patchOrder(
        'submitDepositTransaction',
        mode,
        params.uniqueReference,
        body,
        options,
      );
      return { alreadyRecorded: false, order: result.data };
    } catch (err) {
      if (err instanceof ExchangeError && err.action === 'idempotent_success')
        return { alreadyRecorded: true, order: undefined };
      throw err;
    }
  }

  /**
   * POST /pre_screening/ (trusted referral token required). A compliance rejection is a result
   * (`status: 'failed'`), not an error; 400/401 carry the same envelope and become ExchangeErrors.
   */
  async preScreen(
    mode: TradingMode,
    params: PreScreeningRequest,
    options: CallOptions = {},
  ): Promise<PreScreeningResult> {
    const endpoint: EndpointName = 'POST /pre_screening/';
    const body = checkShape(endpoint, preScreeningRequestSchema, params);
    checkPreScreening(endpoint, body, this.#referrals.has(mode));
    const result = await this.#call(
      {
        operation: 'preScreen',
        endpoint,
        mode,
        path: '/pre_screening/',
        body,
        schema: preScreeningResultSchema,
        retry: 'unsent_only',
        timeoutMs: this.#timeouts.preScreen,
        outcomeUnknownWhenLost: false,
      },
      options,
    );
    return result.data;
  }

  // -------------------------------------------------------------------------------------------------------------
  // The request pipeline

  #get<S extends z.ZodType>(
    operation: ExchangeOperation,
    endpoint: EndpointName,
    mode: TradingMode,
    path: string,
    schema: S,
    options: CallOptions,
  ): Promise<CallResult<z.output<S>>> {
    return this.#call(
      {
        operation,
        endpoint,
        mode,
        path,
        schema,
        retry: 'idempotent',
        timeoutMs: this.#timeouts[operation],
        outcomeUnknownWhenLost: false,
      },
      options,
    );
  }

  async #patchOrder(
    operation: 'updateOrder' | 'submitDepositTransaction',
    mode: TradingMode,
    uniqueReference: string,
    body: Record<string, unknown>,
    options: CallOptions,
  ): Promise<CallResult<ExchangeOrderView | undefined>> {
    // Both PATCH forms are idempotent (same referral code; a known hash is a recognised conflict), so they retry.
    const result = await this.#call(
      {
        operation,
        endpoint: 'PATCH /orders/{unique_reference}/',
        mode,
        path: `/orders/${encodeURIComponent(uniqueReference)}/`,
        body,
        schema: orderSchema.optional().catch(undefined),
        retry: 'idempotent',
        timeoutMs: this.#timeouts[operation],
        outcomeUnknownWhenLost: false,
      },
      options,
    );
    return { status: result.status, data: result.data === undefined ? undefined : toOrderView(result.data) };
  }

  /** A `next`/`previous` link: an absolute URL must stay on the exchange's origin and v2 prefix (it gets our key). */
  #followCursor(endpoint: EndpointName, cursor: string): { path: string; query: Record<string, QueryValue> } {
    if (!/^https?:\/\//i.test(cursor) && !cursor.startsWith('/'))
      return { path: '/orders/', query: { cursor } };
    const url = new URL(cursor, this.#base);
    if (url.origin !== this.#base.origin || !url.pathname.startsWith(`${this.#basePath}/`)) {
      throw new ExchangeError({
        code: 'invalid_cursor',
        action: 'fatal',
        message: 'refused before sending: the pagination link points outside the exchange base URL',
        endpoint,
      });
    }
    return { path: url.pathname.slice(this.#basePath.length), query: Object.fromEntries(url.searchParams) };
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

  /**
   * One exchange operation in its own span (`exchange <operation>`): the budget wait and every HTTP attempt are
   * its children, so a slow call shows whether it waited for the budget or for the exchange.
   */
  #call<S extends z.ZodType>(spec: CallSpec<S>, options: CallOptions): Promise<CallResult<z.output<S>>> {
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
        if (typeof reference === 'string') operationSpan.setAttribute('exchange.unique_reference', reference);
        return result;
      } catch (err) {
        outcome = err instanceof ExchangeError ? err.code : 'aborted';
        operationSpan.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        operationSpan.setAttribute('error.type', outcome);
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

  /** Waits for the shared request budget inside a span of its own (the wait is part of the call's latency). */
  async #waitForBudget(
    spec: CallSpec<z.ZodType>,
    budgetKey: string,
    priority: RequestPriority,
    signal: AbortSignal | undefined,
    parent: Context,
  ): Promise<void> {
    const startedAt = performance.now();
    const span = this.#tracer.startSpan(
      'exchange budget wait',
      { attributes: { 'exchange.trading_mode': spec.mode, 'exchange.priority': priority } },
      parent,
    );
    try {
      await this.#budget.acquire(budgetKey, priority, signal);
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
    const target = new URL(url);
    return this.#tracer.startSpan(
      spec.endpoint,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'url.full': urlWithoutSecrets(target),
          'url.template': spec.endpoint.slice(spec.endpoint.indexOf(' ') + 1),
          'server.address': target.hostname,
          'server.port': Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
          ...(attempt > 1 ? { 'http.request.resend_count': attempt - 1 } : {}),
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
    const priority = options.priority ?? defaultPriorities[spec.operation];

    for (let attempt = 1; ; attempt++) {
      await this.#waitForBudget(spec, credential.budgetKey, priority, options.signal, parent);
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
        );
        span.setStatus({ code: SpanStatusCode.OK });
        return result;
      } catch (err) {
        const failure = err instanceof ExchangeError ? err : undefined;
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure?.code ?? 'aborted' });
        span.setAttribute('error.type', failure?.code ?? 'aborted');
        if (failure !== undefined) {
          span.setAttribute('exchange.failure_action', failure.action);
          this.#observer?.attemptFailed({
            operation: spec.operation,
            errorType: failure.code,
            action: failure.action,
          });
        }
        if (failure === undefined || !this.#shouldRetry(spec, failure) || attempt >= this.#maxAttempts)
          throw err;
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

  #shouldRetry(spec: CallSpec<z.ZodType>, failure: ExchangeError): boolean {
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

  async #attempt<S extends z.ZodType>(
    spec: CallSpec<S>,
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    headers: Record<string, string>,
    payload: string | undefined,
    budgetKey: string,
    span: Span,
    callerSignal: AbortSignal | undefined,
  ): Promise<CallResult<z.output<S>>> {
    const timeout = AbortSignal.timeout(spec.timeoutMs);
    // A request that may have a side effect is not abandoned once it has left: its answer is worth more than the
    // time saved (the caller's signal still stops it before it is sent). It ends by its own timeout.
    const signal =
      callerSignal === undefined || spec.outcomeUnknownWhenLost
        ? timeout
        : AbortSignal.any([callerSignal, timeout]);
    let status: number;
    let text: string;
    let retryAfter: string | undefined;
    try {
      const response = await request(url, {
        dispatcher: this.#dispatcher,
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
      throw this.#transportFailure(spec, err, timeout.aborted, callerSignal);
    }
    span.setAttribute('http.response.status_code', status);

    const ok =
      spec.okStatuses === undefined ? status >= 200 && status < 300 : spec.okStatuses.includes(status);
    const body = parseJson(text);
    if (!ok) {
      const classified = classifyErrorResponse({ status, body, retryAfter });
      if (classified.globalThrottle) await this.#budget.penalize(budgetKey, classified.retryAfterMs ?? 1_000);
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
        retryAfterMs: classified.retryAfterMs,
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

  #transportFailure(
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
}
