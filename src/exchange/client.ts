// ExchangeClient: the calls the worker makes to the exchange's v2 API, one method per call with its request rules
// (refused early when the document says it would fail), its response schema, timeout, budget priority and retry
// policy. Carrying a call out (credentials, budget, spans, retries, classification) is the transport's job
// (transport.ts). Invariants: a POST /orders/ is never repeated once it may have been received (its loss is an
// 'unknown_outcome' failure); an actionable quote is never repeated here (the caller's cooldown spaces them).
import type { z } from 'zod';
import {
  exchangeStatusCodes,
  type ExchangeOrderView,
  type ExchangeStatus,
  type TradingMode,
} from '../../machines/domain.ts';
import { ExchangeError, type EndpointName } from './errors.ts';
import { toOrderView } from './order-view.ts';
import type { RequestPriority } from './request-budget.ts';
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
  networkListSchema,
  orderPageSchema,
  orderSchema,
  preScreeningRequestSchema,
  preScreeningResultSchema,
  rateListSchema,
  rateQuerySchema,
  updateOrderRequestSchema,
  type CreateOrderRequest,
  type PreScreeningRequest,
  type PreScreeningResult,
  type RateQuery,
  type UpdateOrderRequest,
  type WireCurrency,
  type WireNetwork,
  type WireRate,
} from './schemas.ts';
import type { CallOptions, CallResult, CallSpec, QueryValue } from './call-spec.ts';
import { ExchangeTransport, type ExchangeTransportOptions } from './transport.ts';

/** The calls the worker makes; each has its own timeout and budget priority. */
export type ExchangeOperation =
  | 'listCurrencies'
  | 'listNetworks'
  | 'getRates'
  | 'createOrder'
  | 'listOrders'
  | 'getOrder'
  | 'submitDepositTransaction'
  | 'preScreen';

/** The document asks for 15 s or more on actionable quotes and DeFi fixed-rate creation; shorter settings are raised. */
export const minimumSlowQuoteTimeoutMs = 15_000;

/** How long POST /orders/ may take before its outcome is unknown (the settle window must outlast it: config). */
export const createOrderTimeoutMs = 30_000;

const defaultTimeoutsMs: Readonly<Record<ExchangeOperation | 'actionableQuote', number>> = {
  listCurrencies: 10_000,
  listNetworks: 10_000,
  getRates: 10_000,
  actionableQuote: 25_000,
  createOrder: createOrderTimeoutMs,
  listOrders: 15_000,
  getOrder: 10_000,
  submitDepositTransaction: 15_000,
  preScreen: 15_000,
};

/** Money-moving calls first, then quotes and the confirmation read, polling and catalogue reads last. */
const defaultPriorities: Readonly<Record<ExchangeOperation, RequestPriority>> = {
  listCurrencies: 'low',
  listNetworks: 'low',
  getRates: 'normal',
  createOrder: 'high',
  listOrders: 'low',
  getOrder: 'low',
  submitDepositTransaction: 'high',
  preScreen: 'normal',
};

export interface ExchangeClientOptions extends ExchangeTransportOptions {
  readonly timeouts?: Partial<Record<ExchangeOperation | 'actionableQuote', number>>;
  /** Fiat codes for the "SELL only on fiat pairs" rule. */
  readonly fiatCurrencies?: ReadonlySet<string>;
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

/** What a GET names; the rest of its CallSpec is the same for every read. */
export type ReadSpec<S extends z.ZodType> = Omit<CallSpec<S>, 'retry' | 'outcomeUnknownWhenLost'>;

export class ExchangeClient {
  /** Subclasses (test support) add endpoints on the same transport. */
  protected readonly transport: ExchangeTransport;
  readonly #timeouts: Readonly<Record<ExchangeOperation | 'actionableQuote', number>>;
  readonly #fiat: ReadonlySet<string>;

  constructor(options: ExchangeClientOptions) {
    this.transport = new ExchangeTransport(options);
    this.#timeouts = { ...defaultTimeoutsMs, ...options.timeouts };
    this.#fiat = options.fiatCurrencies ?? defaultFiatCurrencies;
  }

  close(): Promise<void> {
    return this.transport.close();
  }

  // -------------------------------------------------------------------------------------------------------------
  // Market data (the currency catalogue)

  async listCurrencies(mode: TradingMode, options: CallOptions = {}): Promise<WireCurrency[]> {
    const read = this.#readOf('listCurrencies', 'GET /currency/', mode, '/currency/', currencyListSchema);
    return (await this.read(read, options)).data;
  }

  async listNetworks(mode: TradingMode, options: CallOptions = {}): Promise<WireNetwork[]> {
    const read = this.#readOf('listNetworks', 'GET /network/', mode, '/network/', networkListSchema);
    return (await this.read(read, options)).data;
  }

  /**
   * GET /rate/: rates or a quote. `actionable_quote: true` requests an actionable DeFi fixed-rate quote and gets the
   * slow-quote timeout. `markup` and `referral_rate` are exclusive and refused together.
   */
  async getRates(mode: TradingMode, params: RateQuery = {}, options: CallOptions = {}): Promise<WireRate[]> {
    const endpoint: EndpointName = 'GET /rate/';
    const query = checkShape(endpoint, rateQuerySchema, params);
    checkRateQuery(endpoint, query);
    const actionable = query.actionable_quote === true;
    const result = await this.transport.call(
      {
        operation: 'getRates',
        endpoint,
        mode,
        path: '/rate/',
        query,
        schema: rateListSchema,
        // An actionable quote is never repeated here: identical requests must be ~15 s apart as the exchange sees
        // them, so a retry goes back through the caller's cooldown.
        retry: actionable ? 'unsent_only' : 'idempotent',
        timeoutMs: actionable
          ? Math.max(minimumSlowQuoteTimeoutMs, this.#timeouts.actionableQuote)
          : this.#timeouts.getRates,
        priority: defaultPriorities.getRates,
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
    const result = await this.transport.call(
      {
        operation: 'createOrder',
        endpoint,
        mode,
        path: '/orders/',
        body,
        schema: orderSchema,
        retry: 'unsent_only',
        timeoutMs:
          mode === 'cefi'
            ? this.#timeouts.createOrder
            : Math.max(minimumSlowQuoteTimeoutMs, this.#timeouts.createOrder),
        priority: defaultPriorities.createOrder,
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
    const link =
      params.cursor === undefined
        ? undefined
        : this.transport.resolveCursor(endpoint, '/orders/', params.cursor);
    const path = link?.path ?? '/orders/';
    const query: Record<string, QueryValue> = { ...link?.query };
    if (params.status !== undefined)
      query['status'] =
        typeof params.status === 'number' ? params.status : exchangeStatusCodes[params.status];
    const page = (
      await this.read(
        { ...this.#readOf('listOrders', endpoint, mode, path, orderPageSchema), query },
        options,
      )
    ).data;
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
    const endpoint: EndpointName = 'GET /orders/{unique_reference}/';
    const path = `/orders/${encodeURIComponent(params.uniqueReference)}/`;
    const result = await this.read(this.#readOf('getOrder', endpoint, mode, path, orderSchema), options);
    // An answer about another order is not an answer about this one (a proxy or cache mix-up, or an exchange bug).
    if (result.data.unique_reference !== params.uniqueReference) {
      throw new ExchangeError({
        code: 'invalid_response',
        action: 'fatal',
        message: `the answer describes order ${result.data.unique_reference.slice(0, 64)}, not the one requested`,
        endpoint,
        httpStatus: result.status,
      });
    }
    return toOrderView(result.data);
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
    try {
      const order = await this.patchOrder(
        {
          operation: 'submitDepositTransaction',
          mode,
          uniqueReference: params.uniqueReference,
          timeoutMs: this.#timeouts.submitDepositTransaction,
          priority: defaultPriorities.submitDepositTransaction,
        },
        { deposit_transaction: params.depositTransaction },
        options,
      );
      return { alreadyRecorded: false, order };
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
    checkPreScreening(endpoint, body, this.transport.hasReferralToken(mode));
    const result = await this.transport.call(
      {
        operation: 'preScreen',
        endpoint,
        mode,
        path: '/pre_screening/',
        body,
        schema: preScreeningResultSchema,
        retry: 'unsent_only',
        timeoutMs: this.#timeouts.preScreen,
        priority: defaultPriorities.preScreen,
        outcomeUnknownWhenLost: false,
      },
      options,
    );
    return result.data;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Request shapes shared by endpoints

  /** A GET: repeated after any retryable failure; nothing it does can be in doubt. */
  protected read<S extends z.ZodType>(
    spec: ReadSpec<S>,
    options: CallOptions,
  ): Promise<CallResult<z.output<S>>> {
    return this.transport.call({ ...spec, retry: 'idempotent', outcomeUnknownWhenLost: false }, options);
  }

  /**
   * PATCH /orders/{unique_reference}/. Both documented forms (a referral code, a deposit transaction) are
   * idempotent (same referral code; a known hash is a recognised conflict), so they retry. The PATCH response is
   * not shown in the document: the order is returned when the body is a v2 order, else undefined.
   */
  protected async patchOrder(
    call: {
      readonly operation: string;
      readonly mode: TradingMode;
      readonly uniqueReference: string;
      readonly timeoutMs: number;
      readonly priority: RequestPriority;
    },
    fields: UpdateOrderRequest,
    options: CallOptions,
  ): Promise<ExchangeOrderView | undefined> {
    const endpoint: EndpointName = 'PATCH /orders/{unique_reference}/';
    const body = checkShape(endpoint, updateOrderRequestSchema, fields);
    checkUpdateOrder(endpoint, body);
    const result = await this.transport.call(
      {
        operation: call.operation,
        endpoint,
        mode: call.mode,
        path: `/orders/${encodeURIComponent(call.uniqueReference)}/`,
        body,
        schema: orderSchema.optional().catch(undefined),
        retry: 'idempotent',
        timeoutMs: call.timeoutMs,
        priority: call.priority,
        outcomeUnknownWhenLost: false,
      },
      options,
    );
    return result.data === undefined ? undefined : toOrderView(result.data);
  }

  #readOf<S extends z.ZodType>(
    operation: ExchangeOperation,
    endpoint: EndpointName,
    mode: TradingMode,
    path: string,
    schema: S,
  ): ReadSpec<S> {
    const timeoutMs = this.#timeouts[operation];
    return { operation, endpoint, mode, path, schema, timeoutMs, priority: defaultPriorities[operation] };
  }
}
