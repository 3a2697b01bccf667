// The v2 endpoints the worker never calls (single currency, network and pair reads, the pair list and random pair,
// the referral-code PATCH), for tests and benchmarks that exercise the transport on them. They live here, not in
// src/: the worker's ExchangeClient declares only the calls it makes.
import type { z } from 'zod';
import type { ExchangeOrderView, TradingMode } from '../../../machines/domain.ts';
import {
  ExchangeClient,
  type ExchangeClientOptions,
  type ExchangeOperation,
} from '../../../src/exchange/client.ts';
import type { EndpointName } from '../../../src/exchange/errors.ts';
import {
  currencySchema,
  networkSchema,
  pairListSchema,
  pairSchema,
  randomPairSchema,
} from '../../../src/exchange/schemas.ts';
import type { CallOptions } from '../../../src/exchange/call-spec.ts';

type TestOperation = 'getCurrency' | 'getNetwork' | 'listPairs' | 'getPair' | 'getRandomPair' | 'updateOrder';

const testTimeoutsMs: Readonly<Record<TestOperation, number>> = {
  getCurrency: 10_000,
  getNetwork: 10_000,
  listPairs: 10_000,
  getPair: 10_000,
  getRandomPair: 10_000,
  updateOrder: 15_000,
};

export interface FullExchangeClientOptions extends Omit<ExchangeClientOptions, 'timeouts'> {
  readonly timeouts?: Partial<Record<ExchangeOperation | TestOperation | 'actionableQuote', number>>;
}

/** The worker's ExchangeClient plus every other v2 call of the document, on the same transport. */
export class FullExchangeClient extends ExchangeClient {
  readonly #timeouts: Readonly<Record<TestOperation, number>>;

  constructor(options: FullExchangeClientOptions) {
    super(options);
    this.#timeouts = { ...testTimeoutsMs, ...options.timeouts };
  }

  /** Budget key of a mode: a fingerprint of its API key. */
  budgetKey(mode: TradingMode): string | undefined {
    return this.transport.budgetKey(mode);
  }

  getCurrency(mode: TradingMode, params: { readonly code: string }, options: CallOptions = {}) {
    return this.#get('getCurrency', 'GET /currency/{code}/', mode, currencySchema, options, params.code);
  }

  getNetwork(mode: TradingMode, params: { readonly name: string }, options: CallOptions = {}) {
    return this.#get('getNetwork', 'GET /network/{name}/', mode, networkSchema, options, params.name);
  }

  listPairs(mode: TradingMode, options: CallOptions = {}) {
    return this.#get('listPairs', 'GET /pair/', mode, pairListSchema, options);
  }

  getPair(mode: TradingMode, params: { readonly name: string }, options: CallOptions = {}) {
    return this.#get('getPair', 'GET /pair/{name}/', mode, pairSchema, options, params.name);
  }

  /** GET /pair/random/; a 417 (attempts exhausted) surfaces as a 'backoff' failure. */
  getRandomPair(mode: TradingMode, options: CallOptions = {}) {
    return this.#get('getRandomPair', 'GET /pair/random/', mode, randomPairSchema, options);
  }

  /** PATCH /orders/{unique_reference}/ with a referral code. */
  async updateOrder(
    mode: TradingMode,
    params: { readonly uniqueReference: string; readonly referral_code: string },
    options: CallOptions = {},
  ): Promise<{ order: ExchangeOrderView | undefined }> {
    const { uniqueReference } = params;
    const timeoutMs = this.#timeouts.updateOrder;
    const call = { operation: 'updateOrder', mode, uniqueReference, timeoutMs, priority: 'high' as const };
    return { order: await this.patchOrder(call, { referral_code: params.referral_code }, options) };
  }

  /** A catalogue read (low priority: it waits behind everything the worker does with orders). */
  async #get<S extends z.ZodType>(
    operation: TestOperation,
    endpoint: EndpointName,
    mode: TradingMode,
    schema: S,
    options: CallOptions,
    name?: string,
  ): Promise<z.output<S>> {
    const template = endpoint.slice('GET '.length);
    const path = name === undefined ? template : template.replace(/\{\w+\}/, encodeURIComponent(name));
    const timeoutMs = this.#timeouts[operation];
    return (await this.read({ operation, endpoint, mode, path, schema, timeoutMs, priority: 'low' }, options))
      .data;
  }
}
