// Every row of the classification table, produced by the real sandbox over HTTP. Through the client where the
// client would send the request; as a raw request (then classified by the same table) where the client refuses
// it before sending, which is the point of those rows.
import { describe, expect, it } from 'vitest';
import { classificationTable, classifyErrorResponse } from '../../../src/exchange/error-classification.ts';
import type { ExchangeError } from '../../../src/exchange/errors.ts';
import type { SandboxHandle } from '../../../sandbox/index.ts';
import type { FullExchangeClient } from '../../support/exchange/full-client.ts';
import { RecordingBudget } from '../../support/exchange/mock-exchange.ts';
import { exchangeFailure, sandboxClient } from '../../support/exchange/sandbox-client.ts';
import {
  EVM_ADDRESS,
  call,
  demoKeys,
  demoReferral,
  startTestSandbox,
  type ConfigPatch,
} from '../sandbox/helpers.ts';

interface Produced {
  readonly code: string;
  readonly action: string;
  readonly httpStatus: number | undefined;
  readonly retryAfterMs?: number | undefined;
}

const sameChain = { deposit_currency: 'ETH', withdraw_currency: 'USDT', withdraw_address: EVM_ADDRESS };
const crossChain = { deposit_currency: 'BTC', withdraw_currency: 'ETH', withdraw_address: EVM_ADDRESS };

async function viaClient(promise: Promise<unknown>): Promise<Produced> {
  const err: ExchangeError = await exchangeFailure(promise);
  return { code: err.code, action: err.action, httpStatus: err.httpStatus, retryAfterMs: err.retryAfterMs };
}

async function viaRaw(
  handle: SandboxHandle,
  path: string,
  options: Parameters<typeof call>[2],
): Promise<Produced> {
  const response = await call(handle.url, path, options);
  const result = classifyErrorResponse({
    status: response.status,
    body: response.body,
    retryAfter: response.headers.get('retry-after') ?? undefined,
  });
  return {
    code: result.code,
    action: result.action,
    httpStatus: response.status,
    retryAfterMs: result.retryAfterMs,
  };
}

async function defiQuote(client: FullExchangeClient, pairs: string, amount: string): Promise<string> {
  const [quote] = await client.getRates('defi', { pairs, deposit_amount: amount, actionable_quote: true });
  return quote?.rate_id ?? '';
}

type Scenario = (handle: SandboxHandle, client: FullExchangeClient) => Promise<Produced>;

const scenarios: Record<string, { config?: ConfigPatch; produce: Scenario }> = {
  rate_id_invalid_or_expired: {
    produce: (_h, c) =>
      viaClient(c.createOrder('defi', { ...sameChain, deposit_amount: '1', rate_id: 'no-such-quote' })),
  },
  rate_id_quote_expired: {
    produce: async (h, c) => {
      const rateId = await defiQuote(c, 'USDTETH', '1.1');
      h.advanceClock(61_000);
      return viaClient(c.createOrder('defi', { ...sameChain, deposit_amount: '1.1', rate_id: rateId }));
    },
  },
  pair_temporarily_unavailable: {
    produce: (_h, c) =>
      viaClient(c.createOrder('cefi', { ...crossChain, deposit_amount: '0.1', rate_id: 'no-such-quote' })),
  },
  cross_chain_quote_unavailable: {
    produce: (h, c) => {
      h.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'quote_fetch_failure', times: 1 });
      return viaClient(c.createOrder('defi', { ...crossChain, deposit_amount: '0.1' }));
    },
  },
  actionable_quote_unavailable: {
    produce: (h, c) => {
      h.injectFault({ target: 'endpoint', endpoint: 'GET /rate/', kind: 'quote_fetch_failure', times: 1 });
      return viaClient(
        c.getRates('defi', { pairs: 'USDTETH', deposit_amount: '1.2', actionable_quote: true }),
      );
    },
  },
  quote_provider_unavailable: {
    produce: (h, c) => {
      h.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'quote_provider_unavailable',
        times: 1,
      });
      return viaClient(c.createOrder('defi', { ...sameChain, deposit_amount: '1' }));
    },
  },
  rate_id_non_actionable: {
    produce: async (_h, c) => {
      const [cefiQuote] = await c.getRates('cefi', { pairs: 'USDTETH', deposit_amount: '1' });
      return viaClient(
        c.createOrder('defi', { ...sameChain, deposit_amount: '1', rate_id: cefiQuote?.rate_id ?? '' }),
      );
    },
  },
  rate_id_mode_mismatch: {
    produce: async (_h, c) => {
      const rateId = await defiQuote(c, 'USDTETH', '1.3');
      return viaClient(c.createOrder('cefi', { ...sameChain, deposit_amount: '1.3', rate_id: rateId }));
    },
  },
  referral_rate_no_longer_matches: {
    produce: async (h, c) => {
      const rateId = await defiQuote(c, 'USDTETH', '1.4');
      h.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'promised_rate_mismatch',
        times: 1,
      });
      return viaClient(c.createOrder('defi', { ...sameChain, deposit_amount: '1.4', rate_id: rateId }));
    },
  },
  markup_and_referral_rate: {
    produce: (h) => viaRaw(h, '/rate/?pairs=ETHBTC&markup=10&referral_rate=0.001', {}),
  },
  markup_over_cap: {
    produce: (_h, c) => viaClient(c.getRates('cefi', { pairs: 'ETHBTC', markup: 100_000 })),
  },
  ip_risk: {
    produce: async (h, c) => {
      // As EdgeApp's client meets it: on GET /rate/, and on POST /orders/ (where nothing is created).
      h.injectFault({ target: 'endpoint', endpoint: 'GET /rate/', kind: 'ip_risk', times: 1 });
      const onRate = await viaClient(c.getRates('cefi', { pairs: 'ETHBTC' }));
      expect(onRate).toMatchObject({ code: 'ip_risk', action: 'fatal', httpStatus: 400 });
      h.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'ip_risk', times: 1 });
      const onCreate = await viaClient(c.createOrder('cefi', { ...crossChain, deposit_amount: '0.1' }));
      expect(h.orders.list()).toEqual([]);
      return onCreate;
    },
  },
  referral_rate_not_allowed: {
    produce: (h) =>
      viaRaw(h, '/rate/?pairs=ETHBTC&referral_rate=0.001', {
        key: demoKeys.defi,
        headers: { 'x-referral-token': demoReferral.defiToken },
      }),
  },
  rate_id_on_limit_order: {
    produce: (h) =>
      viaRaw(h, '/orders/', {
        body: { ...crossChain, deposit_amount: '0.1', is_limit_order: true, rate_id: 'r1', limit_ttl: 600 },
      }),
  },
  limit_ttl_too_short: {
    produce: (h) =>
      viaRaw(h, '/orders/', {
        body: { ...crossChain, deposit_amount: '0.1', is_limit_order: true, limit_ttl: 599 },
      }),
  },
  deposit_amount_required_cross_chain: {
    produce: (_h, c) => viaClient(c.createOrder('defi', { ...crossChain, withdraw_amount: '1' })),
  },
  address_invalid: {
    produce: (_h, c) =>
      viaClient(
        c.createOrder('cefi', { ...crossChain, deposit_amount: '0.1', withdraw_address: 'not-an-address' }),
      ),
  },
  pre_screening_amounts_exclusive: {
    produce: (h) =>
      viaRaw(h, '/pre_screening/', {
        headers: { 'x-referral-token': demoReferral.token },
        body: { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1', withdraw_amount: '3' },
      }),
  },
  deposit_already_recorded: {
    // the client turns this row into a success (see client-sandbox.test.ts); the raw PATCH shows the classification
    produce: async (h, c) => {
      const { order } = await c.createOrder('cefi', { ...crossChain, deposit_amount: '0.1' });
      await c.submitDepositTransaction('cefi', {
        uniqueReference: order.uniqueReference,
        depositTransaction: 'b'.repeat(64),
      });
      return viaRaw(h, `/orders/${order.uniqueReference}/`, {
        method: 'PATCH',
        body: { deposit_transaction: 'b'.repeat(64) },
      });
    },
  },
  same_chain_quote_throttled: {
    produce: async (_h, c) => {
      await defiQuote(c, 'USDTETH', '2');
      return viaClient(c.getRates('defi', { pairs: 'USDTETH', deposit_amount: '2', actionable_quote: true }));
    },
  },
  cross_chain_quote_throttled: {
    config: { limits: { crossChainFixedRateQuotesPerMinute: 1, fixedRateThrottleRetryAfter: true } },
    produce: async (_h, c) => {
      await defiQuote(c, 'ETHBTC', '0.1');
      return viaClient(
        c.getRates('defi', { pairs: 'ETHBTC', deposit_amount: '0.2', actionable_quote: true }),
      );
    },
  },
  throttled: {
    config: { limits: { globalRequestsPerMinute: 2 } },
    produce: async (_h, c) => {
      await c.listPairs('cefi');
      await c.listPairs('cefi');
      return viaClient(c.listPairs('cefi'));
    },
  },
  credentials_missing: {
    produce: (h) => viaRaw(h, '/pair/', { key: null }),
  },
  referral_code_not_owned: {
    produce: (h) =>
      viaClient(
        sandboxClient(h, {
          retry: { maxAttempts: 1 },
          referralTokens: { cefi: demoReferral.otherPartnerToken },
        }).listPairs('cefi'),
      ),
  },
};

describe('the classification table against the sandbox', () => {
  it('has a sandbox scenario for every row', () => {
    expect(Object.keys(scenarios).sort()).toEqual(classificationTable.map((row) => row.code).sort());
  });

  it.each(classificationTable.map((row) => [row.code, row] as const))(
    'produces and classifies "%s"',
    async (code, row) => {
      const scenario = scenarios[code];
      if (scenario === undefined) throw new Error(`no scenario for ${code}`);
      const handle = await startTestSandbox(scenario.config ?? {});
      const budget = new RecordingBudget();
      const client = sandboxClient(handle, { budget, retry: { maxAttempts: 1 } });
      try {
        const produced = await scenario.produce(handle, client);
        expect(produced).toMatchObject({ code, action: row.action });
        if (row.globalThrottle === true) {
          expect(produced.retryAfterMs).toBeGreaterThan(0);
          expect(budget.penalties).toHaveLength(1);
        }
        if (code === 'cross_chain_quote_throttled') expect(produced.retryAfterMs).toBeGreaterThan(0);
        if (code === 'actionable_quote_unavailable') expect(produced.retryAfterMs).toBe(15_000);
      } finally {
        await client.close();
      }
    },
  );

  it('falls back on the HTTP status for what no row names', async () => {
    const handle = await startTestSandbox();
    const client = sandboxClient(handle, { retry: { maxAttempts: 1 } });
    handle.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'http_error',
      status: 502,
      times: 1,
    });
    expect(await viaClient(client.getOrder('cefi', { uniqueReference: 'X' }))).toMatchObject({
      code: 'http_502',
      action: 'backoff',
    });
    expect(await viaClient(client.getOrder('cefi', { uniqueReference: 'NOPE' }))).toMatchObject({
      code: 'http_404',
      action: 'fatal',
    });
    const wrongKey = sandboxClient(handle, {
      credentials: { cefi: 'not-a-real-key-000' },
      referralToken: '',
    });
    expect((await viaClient(wrongKey.listPairs('cefi'))).action).toBe('fatal');
    const notOwned = sandboxClient(handle, { referralToken: demoReferral.otherPartnerToken });
    expect(await viaClient(notOwned.listPairs('cefi'))).toMatchObject({
      code: 'referral_code_not_owned',
      action: 'fatal',
    });
    await Promise.all([client.close(), wrongKey.close(), notOwned.close()]);
  });
});
