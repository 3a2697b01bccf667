// The client against the real sandbox over HTTP: every v2 endpoint, per-mode keys, decimal strings end to end,
// cursor pagination, idempotent reuse and the deposit "already exists" conflict, pre-screening, and transport
// failures the sandbox injects (hung requests, 5xx, 417).
import { afterEach, describe, expect, it } from 'vitest';
import type { FullExchangeClient } from '../../support/exchange/full-client.ts';
import { RecordingBudget, spanRecorder } from '../../support/exchange/mock-exchange.ts';
import { exchangeFailure, sandboxClient } from '../../support/exchange/sandbox-client.ts';
import { BTC_ADDRESS, EVM_ADDRESS, demoKeys, demoReferral, startTestSandbox } from '../sandbox/helpers.ts';

const clients: FullExchangeClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
function track(client: FullExchangeClient): FullExchangeClient {
  clients.push(client);
  return client;
}

const cefiOrder = {
  deposit_currency: 'BTC',
  withdraw_currency: 'ETH',
  deposit_amount: '0.1',
  withdraw_address: EVM_ADDRESS,
};

describe('market data', () => {
  it('lists and reads currencies, networks and pairs, and draws a random pair', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const currencies = await client.listCurrencies('cefi');
    expect(currencies.map((c) => c['code'])).toContain('BTC');
    expect(await client.getCurrency('cefi', { code: 'USDT' })).toMatchObject({
      code: 'USDT',
      network: 'ETH',
    });
    expect((await client.listNetworks('defi')).map((n) => n['name'])).toContain('ETH');
    expect(await client.getNetwork('defi', { name: 'ETH' })).toMatchObject({ name: 'ETH', is_evm: true });
    const pairs = await client.listPairs('cefi');
    expect(pairs).toContainEqual({ name: 'ETHBTC', from: 'BTC', to: 'ETH', disabled: false });
    expect(await client.getPair('cefi', { name: 'ETHBTC' })).toEqual({
      name: 'ETHBTC',
      from: 'BTC',
      to: 'ETH',
      disabled: false,
    });
    expect(typeof (await client.getRandomPair('cefi')).name).toBe('string');
  });

  it('quotes with a withdraw_amount preview, ETA fields, markup and the contract-address selectors', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const [quote] = await client.getRates('cefi', {
      pairs: 'ETHBTC',
      deposit_amount: '0.1',
      include_eta: true,
      markup: 50,
    });
    expect(quote).toMatchObject({ pair: 'ETHBTC', from: 'BTC', to: 'ETH', deposit_amount: '0.10000000' });
    expect(quote?.withdraw_amount).toMatch(/^\d+\.\d{8}$/);
    expect(quote?.['eta_seconds']).toBe(900);
    const [legacy] = await client.getRates('cefi', { pairs: 'ETHBTC', referral_rate: '0.004' });
    expect(legacy?.rate).toMatch(/^\d+\.\d{8}$/);
    const selected = await client.getRates('cefi', {
      from_network: 'ETH',
      from_contract_address: '',
      to_network: 'ETH',
      to_contract_address: '0xdAC17F958D2ee523a2206206994597C13D831ec7',
    });
    expect(selected.map((r) => r.pair)).toEqual(['USDTETH']);
  });

  it('accepts GET /rate/ on the referral token alone', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle, { credentials: {} }));
    expect((await client.getRates('cefi', { pairs: 'ETHBTC' })).length).toBe(1);
  });
});

describe('orders', () => {
  it('creates a CeFi order (201), reads it back, and keeps amounts as decimal strings', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const { order, reused } = await client.createOrder('cefi', cefiOrder, {
      userTimezone: 'GMT +02:00 (Europe/Berlin)',
    });
    expect(reused).toBe(false);
    expect(order).toMatchObject({
      status: 'INITIAL',
      side: 'BUY',
      depositAmount: '0.10000000',
      depositCurrency: 'BTC',
      withdrawCurrency: 'ETH',
    });
    expect(order.withdrawAmount).toMatch(/^\d+\.\d{8}$/);
    const again = await client.getOrder('cefi', { uniqueReference: order.uniqueReference });
    expect(again).toEqual(order);
  });

  it('binds a DeFi order to an actionable quote and reuses it idempotently (200)', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const [quote] = await client.getRates('defi', {
      pairs: 'USDTETH',
      deposit_amount: '1.5',
      actionable_quote: true,
    });
    expect(quote?.rate_id).toBeTruthy();
    const params = {
      deposit_currency: 'ETH',
      withdraw_currency: 'USDT',
      deposit_amount: '1.5',
      withdraw_address: EVM_ADDRESS,
      rate_id: quote?.rate_id ?? '',
    };
    const first = await client.createOrder('defi', params);
    const second = await client.createOrder('defi', params);
    expect(first.reused).toBe(false);
    expect(second.reused).toBe(true);
    expect(second.order.uniqueReference).toBe(first.order.uniqueReference);
  });

  it('creates a limit order with limit_ttl 600 and a CeFi fixed-rate order with its own key', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const limit = await client.createOrder('cefi', { ...cefiOrder, is_limit_order: true, limit_ttl: 600 });
    expect(limit.order.uniqueReference).toBeTruthy();
    const [quote] = await client.getRates('cefi_fixed', { pairs: 'ETHBTC', deposit_amount: '0.1' });
    const fixed = await client.createOrder('cefi_fixed', { ...cefiOrder, rate_id: quote?.rate_id ?? '' });
    expect(fixed.order.rate).toBe(quote?.rate);
  });

  it('lists CeFi orders with the numeric status filter and follows the cursor both ways', async () => {
    const handle = await startTestSandbox({ orders: { v2PageSize: 2 } });
    const client = track(sandboxClient(handle));
    const refs: string[] = [];
    for (let i = 0; i < 3; i++)
      refs.push((await client.createOrder('cefi', cefiOrder)).order.uniqueReference);
    const first = await client.listOrders('cefi', { status: 'INITIAL' });
    expect(first.results).toHaveLength(2);
    expect(first.next).not.toBeNull();
    const second = await client.listOrders('cefi', { cursor: first.next ?? '' });
    expect(second.results).toHaveLength(1);
    const seen = [...first.results, ...second.results].map((o) => o.uniqueReference).sort();
    expect(seen).toEqual([...refs].sort());
    const back = await client.listOrders('cefi', { cursor: second.previous ?? '' });
    expect(back.results.map((o) => o.uniqueReference)).toEqual(first.results.map((o) => o.uniqueReference));
    expect((await client.listOrders('cefi', { status: 'PAID' })).results).toEqual([]);
  });

  it('patches the referral code and records a deposit once ("already exists" counts as success)', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const { order } = await client.createOrder('cefi', cefiOrder);
    const updated = await client.updateOrder('cefi', {
      uniqueReference: order.uniqueReference,
      referral_code: demoReferral.code,
    });
    expect(updated.order?.uniqueReference).toBe(order.uniqueReference);
    const hash = 'a'.repeat(64);
    const first = await client.submitDepositTransaction('cefi', {
      uniqueReference: order.uniqueReference,
      depositTransaction: hash,
    });
    expect(first.alreadyRecorded).toBe(false);
    expect(first.order?.depositTransaction).toBe(hash);
    const again = await client.submitDepositTransaction('cefi', {
      uniqueReference: order.uniqueReference,
      depositTransaction: hash,
    });
    expect(again).toEqual({ alreadyRecorded: true, order: undefined });
  });
});

describe('referral tokens per trading mode', () => {
  it("fails with referral_code_not_owned when a mode's key belongs to another partner than the shared token, and works with that mode's own token", async () => {
    const handle = await startTestSandbox();
    const credentials = { cefi: demoKeys.otherPartnerCefi, defi: demoKeys.defi };
    const shared = track(sandboxClient(handle, { credentials, retry: { maxAttempts: 1 } }));
    expect(await exchangeFailure(shared.createOrder('cefi', cefiOrder))).toMatchObject({
      code: 'referral_code_not_owned',
      action: 'fatal',
      httpStatus: 401,
    });
    const perMode = track(
      sandboxClient(handle, { credentials, referralTokens: { cefi: demoReferral.otherPartnerToken } }),
    );
    expect((await perMode.createOrder('cefi', cefiOrder)).order.status).toBe('INITIAL');
    expect((await perMode.listPairs('defi')).length).toBeGreaterThan(0);
  });
});

describe('pre-screening', () => {
  it('passes, fails on compliance (a result, not an error), and is refused without a trusted token', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const ok = await client.preScreen('cefi', { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1' });
    expect(ok.status).toBe('success');
    const risky = await client.preScreen('cefi', {
      ip: '203.0.113.66',
      pair: 'ETHBTC',
      withdraw_amount: '1',
    });
    expect(risky.status).toBe('failed');
    const untrusted = track(sandboxClient(handle, { referralToken: demoReferral.defiToken }));
    expect(
      await exchangeFailure(
        untrusted.preScreen('cefi', { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1' }),
      ),
    ).toMatchObject({
      code: 'http_404',
      action: 'fatal',
    });
    const refused = track(
      sandboxClient(handle, {
        credentials: { cefi: demoKeys.otherPartnerCefi },
        referralToken: demoReferral.refusedToken,
      }),
    );
    expect(
      await exchangeFailure(
        refused.preScreen('cefi', { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1' }),
      ),
    ).toMatchObject({
      code: 'http_403',
      action: 'fatal',
    });
  });
});

describe('transport failures injected by the sandbox', () => {
  it('retries a GET whose request hung past its timeout, and a GET answered 503', async () => {
    const handle = await startTestSandbox();
    const { exporter, provider } = spanRecorder();
    const client = track(
      sandboxClient(handle, { timeouts: { getPair: 200 }, tracer: provider.getTracer('t') }),
    );
    handle.injectFault({
      target: 'endpoint',
      endpoint: 'GET /pair/{name}/',
      kind: 'timeout',
      latencyMs: 1_000,
      times: 1,
    });
    handle.injectFault({
      target: 'endpoint',
      endpoint: 'GET /pair/{name}/',
      kind: 'http_error',
      status: 503,
      times: 1,
      skip: 1,
    });
    expect((await client.getPair('cefi', { name: 'ETHBTC' })).name).toBe('ETHBTC');
    const attempts = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'GET /pair/{name}/')
      .map((s) => [s.attributes['exchange.attempt'], s.attributes['error.type'] ?? 'ok']);
    expect(attempts).toEqual([
      [1, 'timeout'],
      [2, 'http_503'],
      [3, 'ok'],
    ]);
    await provider.shutdown();
  });

  it('never repeats a POST /orders/ that hung: unknown_outcome, one request', async () => {
    const handle = await startTestSandbox();
    const budget = new RecordingBudget();
    const client = track(sandboxClient(handle, { timeouts: { createOrder: 300 }, budget }));
    handle.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'timeout',
      latencyMs: 2_000,
      times: 1,
    });
    const err = await exchangeFailure(client.createOrder('cefi', cefiOrder));
    expect(err).toMatchObject({ code: 'timeout', action: 'unknown_outcome' });
    expect(budget.acquired).toHaveLength(1);
  });

  it('reports a POST /orders/ whose connection was dropped as unknown_outcome', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    handle.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'timeout',
      latencyMs: 50,
      times: 1,
    });
    const err = await exchangeFailure(client.createOrder('cefi', cefiOrder));
    expect(err).toMatchObject({ code: 'connection_lost', action: 'unknown_outcome' });
  });

  it('surfaces an exhausted random pair draw (417) as backoff', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    handle.injectFault({
      target: 'endpoint',
      endpoint: 'GET /pair/random/',
      kind: 'random_pair_exhausted',
      times: 1,
    });
    expect(await exchangeFailure(client.getRandomPair('cefi'))).toMatchObject({
      code: 'http_417',
      action: 'backoff',
      httpStatus: 417,
    });
  });

  it('refuses an invalid address on creation and names it', async () => {
    const handle = await startTestSandbox();
    const client = track(sandboxClient(handle));
    const err = await exchangeFailure(
      client.createOrder('cefi', { ...cefiOrder, withdraw_address: BTC_ADDRESS }),
    );
    expect(err).toMatchObject({ code: 'address_invalid', action: 'fatal', httpStatus: 400 });
    expect(err.message).toContain('withdraw_address');
  });
});
