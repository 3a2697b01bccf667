// The benchmarks' timing pass-through (bench/lib/harness.ts) in front of the sandbox: a client walking cursor pages
// through it stays on it (the exchange builds its links from the Host it was asked on), every call is recorded, and
// the document's throttle, when switched on, answers 429 with Retry-After past the limit of one key.
import { afterEach, describe, expect, it } from 'vitest';
import { startTimedExchange } from '../../../bench/lib/harness.ts';
import type { FullExchangeClient } from '../../support/exchange/full-client.ts';
import { exchangeFailure, sandboxClient } from '../../support/exchange/sandbox-client.ts';
import { EVM_ADDRESS, startTestSandbox } from '../sandbox/helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function passThrough(pageSize: number) {
  const sandbox = await startTestSandbox({ orders: { v2PageSize: pageSize } });
  const exchange = await startTimedExchange();
  cleanups.push(() => exchange.close());
  exchange.setUpstream(sandbox.url);
  const client: FullExchangeClient = sandboxClient(sandbox, {
    baseUrl: exchange.url,
    retry: { maxAttempts: 1, baseDelayMs: 5, maxDelayMs: 20 },
  });
  cleanups.push(() => client.close());
  return { exchange, client };
}

const cefiOrder = {
  deposit_currency: 'BTC',
  withdraw_currency: 'ETH',
  deposit_amount: '0.1',
  withdraw_address: EVM_ADDRESS,
};

describe('timing pass-through', () => {
  it('keeps a client that follows pagination.next on the pass-through, and records every page', async () => {
    const { exchange, client } = await passThrough(2);
    for (let i = 0; i < 3; i++) await client.createOrder('cefi', cefiOrder);
    const first = await client.listOrders('cefi', { status: 'INITIAL' });
    expect(first.next).toContain(exchange.url);
    const second = await client.listOrders('cefi', { status: 'INITIAL', cursor: first.next ?? '' });
    expect(second.results).toHaveLength(1);
    expect(exchange.calls.filter((c) => c.method === 'GET' && c.path === '/orders/')).toHaveLength(2);
  });

  it('answers 429 with Retry-After past the throttle of one key, and forwards again once it is off', async () => {
    const { exchange, client } = await passThrough(20);
    exchange.throttle(2);
    await client.listOrders('cefi', {});
    await client.listOrders('cefi', {});
    const refused = await exchangeFailure(client.listOrders('cefi', {}));
    expect(refused).toMatchObject({ action: 'throttled', httpStatus: 429 });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(exchange.calls.map((c) => c.status)).toEqual([200, 200, 429]);
    // Off again: forwarded (the client's own budget now holds the key for Retry-After, so ask directly).
    exchange.throttle(null);
    const again = await fetch(`${exchange.url}/orders/`, { headers: { authorization: 'ApiKey any' } });
    expect(again.status).not.toBe(429);
    await again.body?.cancel();
  });
});
