// An undici MockAgent standing in for the exchange (net connect disabled), recording every request it receives,
// plus fixtures of the v2 resources. Used for what the sandbox cannot produce on demand.
import { MockAgent } from 'undici';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { RequestBudget, RequestPriority, RequestShare } from '../../../src/exchange/request-budget.ts';
import { FullExchangeClient, type FullExchangeClientOptions } from './full-client.ts';

export const origin = 'http://exchange.test';
export const basePath = '/en/api/v2';
export const secrets = {
  defi: 'defi-SECRET-key-0001',
  cefi: 'cefi-SECRET-key-0002',
  cefi_fixed: 'fixed-SECRET-key-0003',
};
export const referralToken = 'ref-SECRET-token-0004';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export function orderFixture(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    unique_reference: 'ORD123ABC',
    created_on: '2026-11-22T06:00:00.000000Z',
    side: 'BUY',
    status: 'INITIAL',
    deposit_amount: '0.10000000',
    withdraw_amount: '1.23456789',
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    deposit_address: 'bc1qdeposit',
    deposit_address_extra_id: '',
    withdraw_address: '0xwithdraw',
    withdraw_address_extra_id: '',
    refund_address: '',
    refund_address_extra_id: '',
    payment_window_minutes: 60,
    fixed_rate_deadline: '2026-11-22T07:00:00Z',
    rate: '12.34567890',
    deposit_transaction: '',
    withdraw_transaction: '',
    refund_transaction: '',
    ...overrides,
  };
}

export function rateFixture(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    pair: 'ETHBTC',
    from: 'BTC',
    to: 'ETH',
    withdrawal_fee: '0.00100000',
    rate: '12.34567890',
    rate_id: 'rate_abc',
    max_withdraw_amount: '100.00000000',
    min_withdraw_amount: '0.01000000',
    max_deposit_amount: '8.00000000',
    min_deposit_amount: '0.00100000',
    expiration_time_unix: '1795000000',
    ...overrides,
  };
}

function normaliseHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return out;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      out[String(headers[i]).toLowerCase()] = String(headers[i + 1]);
  } else if (
    typeof (headers as Headers).forEach === 'function' &&
    !(headers instanceof Object && Object.getPrototypeOf(headers) === Object.prototype)
  ) {
    (headers as Headers).forEach((value, key) => (out[key.toLowerCase()] = value));
  } else {
    for (const [key, value] of Object.entries(headers as Record<string, unknown>))
      out[key.toLowerCase()] = String(value);
  }
  return out;
}

export interface MockExchange {
  readonly agent: MockAgent;
  readonly requests: RecordedRequest[];
  /** Answer `times` requests matching method and path (path relative to the v2 base, query included). */
  reply(
    method: string,
    path: string | ((path: string) => boolean),
    status: number,
    body: unknown,
    options?: { headers?: Record<string, string>; times?: number; delayMs?: number },
  ): void;
  replyWithError(method: string, path: string, error: Error, times?: number): void;
}

export function mockExchange(): MockExchange {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(origin);
  const requests: RecordedRequest[] = [];
  const matches = (path: string | ((path: string) => boolean)) => (actual: string) => {
    const relative = actual.startsWith(basePath) ? actual.slice(basePath.length) : actual;
    return typeof path === 'string' ? relative === path : path(relative);
  };
  return {
    agent,
    requests,
    reply(method, path, status, body, options = {}) {
      const scope = pool.intercept({ method, path: matches(path) }).reply((opts) => {
        requests.push({
          method: opts.method,
          path: opts.path.slice(basePath.length),
          headers: normaliseHeaders(opts.headers),
          body: typeof opts.body === 'string' ? opts.body : undefined,
        });
        return {
          statusCode: status,
          data: typeof body === 'string' ? body : JSON.stringify(body),
          responseOptions: { headers: { 'content-type': 'application/json', ...options.headers } },
        };
      });
      scope.times(options.times ?? 1);
      if (options.delayMs !== undefined) scope.delay(options.delayMs);
    },
    replyWithError(method, path, error, times = 1) {
      pool
        .intercept({ method, path: matches(path) })
        .replyWithError(error)
        .times(times);
    },
  };
}

/** A budget that admits everything and records what it was asked. */
export class RecordingBudget implements RequestBudget {
  readonly acquired: { key: string; priority: RequestPriority; share?: RequestShare }[] = [];
  readonly penalties: { key: string; retryAfterMs: number }[] = [];
  acquire(
    key: string,
    priority: RequestPriority,
    _signal?: AbortSignal,
    share?: RequestShare,
  ): Promise<void> {
    this.acquired.push(share === undefined ? { key, priority } : { key, priority, share });
    return Promise.resolve();
  }
  penalize(key: string, retryAfterMs: number): Promise<void> {
    this.penalties.push({ key, retryAfterMs });
    return Promise.resolve();
  }
}

export function spanRecorder(): { exporter: InMemorySpanExporter; provider: BasicTracerProvider } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider };
}

export function mockedClient(
  exchange: MockExchange,
  overrides: Partial<FullExchangeClientOptions> = {},
): FullExchangeClient {
  return new FullExchangeClient({
    baseUrl: `${origin}${basePath}`,
    credentials: secrets,
    referralToken,
    dispatcher: exchange.agent,
    budget: new RecordingBudget(),
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    ...overrides,
  });
}
