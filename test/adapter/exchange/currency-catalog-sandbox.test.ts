// The currency catalogue through the real client: against the sandbox (records, caching, refresh, stale use when a
// refresh fails, nothing to serve when the first fetch fails) and, for a malformed record, against undici's
// MockAgent. The pairing check then runs on what the exchange actually published.
import { afterEach, describe, expect, it } from 'vitest';
import { checkAddressPairing } from '../../../src/exchange/address-pairing.ts';
import type { ExchangeClient } from '../../../src/exchange/client.ts';
import type { ExchangeLogger } from '../../../src/exchange/transport.ts';
import { CurrencyCatalog } from '../../../src/exchange/currency-catalog.ts';
import { mintAddress } from '../../../sandbox/addresses/address-formats.ts';
import { demoConfig } from '../../../sandbox/index.ts';
import { mockedClient, mockExchange, RecordingBudget } from '../../support/exchange/mock-exchange.ts';
import { exchangeFailure, sandboxClient } from '../../support/exchange/sandbox-client.ts';
import { BTC_ADDRESS, EVM_ADDRESS, startTestSandbox } from '../sandbox/helpers.ts';

const clients: ExchangeClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

interface LogLine {
  level: 'debug' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

function recordingLogger(): ExchangeLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    debug: (fields, message) => lines.push({ level: 'debug', fields, message }),
    warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
  };
}

async function setup(options: { refreshIntervalMs?: number; retryAfterFailureMs?: number } = {}) {
  const sandbox = await startTestSandbox();
  const budget = new RecordingBudget();
  const client = sandboxClient(sandbox, { budget, retry: { maxAttempts: 1 } });
  clients.push(client);
  let now = 1_000_000;
  const logger = recordingLogger();
  const catalog = new CurrencyCatalog({
    source: client,
    mode: 'cefi',
    refreshIntervalMs: options.refreshIntervalMs ?? 60_000,
    ...(options.retryAfterFailureMs === undefined
      ? {}
      : { retryAfterFailureMs: options.retryAfterFailureMs }),
    now: () => now,
    logger,
  });
  return {
    sandbox,
    budget,
    catalog,
    logger,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('CurrencyCatalog against the sandbox', () => {
  it('reads currencies and networks at low priority and checks pairings against them', async () => {
    const { catalog, budget } = await setup();
    const snapshot = await catalog.snapshot();
    expect(budget.acquired.map((a) => a.priority)).toEqual(['low', 'low']);
    expect(snapshot.currency('usdt')).toEqual({
      code: 'USDT',
      networks: [{ network: 'ETH', contractAddress: '0xdAC17F958D2ee523a2206206994597C13D831ec7' }],
    });
    expect(snapshot.network('eth')).toMatchObject({ name: 'ETH', isEvm: true, addressFormat: 'evm' });
    const order = { deposit_currency: 'BTC', withdraw_currency: 'USDT', withdraw_address: EVM_ADDRESS };
    expect(checkAddressPairing({ ...order, withdraw_network: 'ETH' }, snapshot)).toMatchObject({ ok: true });
    expect(checkAddressPairing({ ...order, withdraw_network: 'TRX' }, snapshot)).toMatchObject({
      ok: false,
      reason: 'withdraw_network_mismatch',
      message: 'USDT is not on network TRX (withdraw_network); the exchange has it on ETH',
    });
    expect(checkAddressPairing({ ...order, withdraw_network: 'BSC' }, snapshot)).toMatchObject({
      ok: false,
      reason: 'withdraw_network_unknown',
    });
    expect(
      checkAddressPairing({ ...order, refund_address: EVM_ADDRESS, refund_network: 'BTC' }, snapshot),
    ).toMatchObject({ ok: false, reason: 'refund_address_invalid' });
    expect(checkAddressPairing({ ...order, refund_address: BTC_ADDRESS }, snapshot)).toMatchObject({
      ok: true,
      withdrawNetwork: 'ETH',
      refundNetwork: 'BTC',
    });
  });

  it("accepts an address of every sandbox currency's own format on its own network", async () => {
    const { catalog } = await setup();
    const snapshot = await catalog.snapshot();
    for (const currency of demoConfig.currencies) {
      if (typeof currency.addressFormat === 'object') continue; // the sandbox mints no real address for a bare pattern
      const address = mintAddress(currency.addressFormat);
      const result = checkAddressPairing(
        {
          deposit_currency: currency.code === 'BTC' ? 'ETH' : 'BTC',
          withdraw_currency: currency.code,
          withdraw_address: address,
          withdraw_network: currency.network,
        },
        snapshot,
      );
      expect(result, `${currency.code} ${address}`).toMatchObject({ ok: true, unchecked: [] });
    }
  });

  it('serves the cached snapshot within the refresh interval and refreshes after it', async () => {
    const { catalog, budget, advance } = await setup({ refreshIntervalMs: 60_000 });
    const first = await catalog.snapshot();
    advance(59_000);
    expect(await catalog.snapshot()).toBe(first);
    expect(budget.acquired).toHaveLength(2);
    advance(1_000);
    const second = await catalog.snapshot();
    expect(second).not.toBe(first);
    expect(budget.acquired).toHaveLength(4);
  });

  it('makes one fetch for concurrent readers', async () => {
    const { catalog, budget } = await setup();
    const snapshots = await Promise.all([catalog.snapshot(), catalog.snapshot(), catalog.snapshot()]);
    expect(new Set(snapshots).size).toBe(1);
    expect(budget.acquired).toHaveLength(2);
  });

  it('lets a reader give up without cancelling the fetch other readers wait for', async () => {
    const { sandbox, catalog, budget } = await setup();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /currency/',
      kind: 'latency',
      latencyMs: 300,
      times: 1,
    });
    const impatient = catalog.snapshot({ signal: AbortSignal.timeout(50) });
    const patient = catalog.snapshot();
    await expect(impatient).rejects.toMatchObject({ name: 'TimeoutError' });
    const snapshot = await patient;
    expect(snapshot.currency('BTC')).toBeDefined();
    expect(budget.acquired).toHaveLength(2);
  });

  it('keeps using the stale snapshot when a refresh fails, and retries after the failure delay', async () => {
    const { sandbox, catalog, budget, logger, advance } = await setup({
      refreshIntervalMs: 60_000,
      retryAfterFailureMs: 10_000,
    });
    const first = await catalog.snapshot();
    sandbox.injectFault({ target: 'endpoint', endpoint: 'GET /currency/', kind: 'http_error', status: 503 });
    advance(61_000);
    expect(await catalog.snapshot()).toBe(first);
    const warning = logger.lines.find((l) => l.level === 'warn');
    expect(warning?.message).toBe('currency catalog refresh failed; using the cached catalog');
    expect(warning?.fields).toMatchObject({ code: 'http_503', ageMs: 61_000 });
    const requestsAfterFailure = budget.acquired.length;
    advance(5_000);
    expect(await catalog.snapshot()).toBe(first);
    expect(budget.acquired).toHaveLength(requestsAfterFailure); // waiting out the failure delay
    sandbox.clearFaults();
    advance(5_000);
    const refreshed = await catalog.snapshot();
    expect(refreshed).not.toBe(first);
    expect(refreshed.currency('BTC')).toBeDefined();
  });

  it('throws a retryable currency_catalog_unavailable when the first fetch fails', async () => {
    const { sandbox, catalog, logger } = await setup();
    sandbox.injectFault({ target: 'endpoint', endpoint: 'GET /network/', kind: 'http_error', status: 502 });
    const failure = await exchangeFailure(catalog.snapshot());
    expect(failure).toMatchObject({
      code: 'currency_catalog_unavailable',
      action: 'backoff',
      retryable: true,
    });
    expect(failure.message).toContain('GET /network/');
    expect(catalog.cached()).toBeUndefined();
    expect(logger.lines.at(-1)?.message).toBe(
      'currency catalog fetch failed; no catalog to check addresses against',
    );
  });
});

describe('CurrencyCatalog with malformed records', () => {
  it('refuses a currency record without a code, naming the field, and serves nothing', async () => {
    const ex = mockExchange();
    ex.reply('GET', '/currency/', 200, [{ code: 'BTC', network: 'BTC' }, { name: 'no code here' }]);
    ex.reply('GET', '/network/', 200, [{ name: 'BTC' }]);
    const client = mockedClient(ex, { retry: { maxAttempts: 1 } });
    clients.push(client);
    const catalog = new CurrencyCatalog({ source: client, mode: 'cefi', refreshIntervalMs: 60_000 });
    const failure = await exchangeFailure(catalog.snapshot());
    expect(failure.code).toBe('currency_catalog_unavailable');
    expect(failure.message).toContain('response field "1.code"');
  });

  it('reads records with unknown fields and other spellings of the network list', async () => {
    const ex = mockExchange();
    ex.reply('GET', '/currency/', 200, [
      { code: 'usdt', networks: ['eth', { network: 'TRX', contract_address: 'T1' }], icon: 'x.png' },
    ]);
    ex.reply('GET', '/network/', 200, [{ code: 'ETH', is_evm: true, chain_id: 1 }, { name: 'TRX' }]);
    const client = mockedClient(ex, { retry: { maxAttempts: 1 } });
    clients.push(client);
    const snapshot = await new CurrencyCatalog({
      source: client,
      mode: 'cefi',
      refreshIntervalMs: 60_000,
    }).snapshot();
    expect(snapshot.currency('USDT')?.networks).toEqual([
      { network: 'ETH', contractAddress: null },
      { network: 'TRX', contractAddress: 'T1' },
    ]);
    expect(snapshot.network('eth')).toEqual({
      name: 'ETH',
      isEvm: true,
      addressFormat: null,
      addressRegex: null,
    });
  });
});
