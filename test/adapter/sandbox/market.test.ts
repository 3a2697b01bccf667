// Document sections "Endpoints" (currency, network, pair, pair/random) and "Resources and their fields" (v2 Pair).
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { call, startTestSandbox } from './helpers.ts';

describe('Market data endpoints', () => {
  it('lists currencies and answers one currency by code, 404 for unknown codes', async () => {
    const sandbox = await startTestSandbox();
    const list = await call(sandbox.url, '/currency/');
    expect(list.status).toBe(200);
    expect(list.body.map((c: { code: string }) => c.code)).toContain('BTC');
    const one = await call(sandbox.url, '/currency/USDT/');
    expect(one.body).toMatchObject({
      code: 'USDT',
      network: 'ETH',
      contract_address: '0xdAC17F958D2ee523a2206206994597C13D831ec7',
    });
    const missing = await call(sandbox.url, '/currency/NOPE/');
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toBeTypeOf('string');
  });

  it('lists networks and answers one network by name', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, '/network/')).body.length).toBeGreaterThan(1);
    const eth = await call(sandbox.url, '/network/ETH/');
    expect(eth.body).toMatchObject({ name: 'ETH', native_currency: 'ETH' });
    expect(eth.body.currencies).toEqual(expect.arrayContaining(['ETH', 'USDT']));
    expect((await call(sandbox.url, '/network/NOPE/')).status).toBe(404);
  });

  it('lists pairs as v2 Pair records (name, to, from, disabled) and answers one pair', async () => {
    const sandbox = await startTestSandbox();
    const list = await call(sandbox.url, '/pair/');
    expect(list.body).toContainEqual({ name: 'ETHBTC', to: 'ETH', from: 'BTC', disabled: false });
    expect(list.body).toContainEqual({ name: 'DOGEBTC', to: 'DOGE', from: 'BTC', disabled: true });
    expect((await call(sandbox.url, '/pair/ETHBTC/')).body).toEqual({
      name: 'ETHBTC',
      to: 'ETH',
      from: 'BTC',
      disabled: false,
    });
    expect((await call(sandbox.url, '/pair/NOPE/')).status).toBe(404);
  });

  it('answers /pair/random/ with an enabled pair, reproducibly for one seed', async () => {
    const first = await startTestSandbox({}, { seed: 42 });
    const second = await startTestSandbox({}, { seed: 42 });
    const a = [];
    const b = [];
    for (let i = 0; i < 5; i++) {
      a.push((await call(first.url, '/pair/random/')).body);
      b.push((await call(second.url, '/pair/random/')).body);
    }
    expect(a).toEqual(b);
    for (const pair of a) expect(pair.disabled).toBe(false);
  });

  it('answers 417 when /pair/random/ exhausts its attempts', async () => {
    const sandbox = await startTestSandbox({
      pairs: [
        {
          from: 'BTC',
          to: 'ETH',
          rate: '30',
          minDepositAmount: '0.001',
          maxDepositAmount: '5',
          disabled: true,
        },
      ],
    });
    const response = await call(sandbox.url, '/pair/random/');
    expect(response.status).toBe(417);
    expect(response.body.detail).toContain('attempts');
  });

  it('answers unknown paths with 404 and unsupported methods with 405, in JSON', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, '/nothing-here/')).status).toBe(404);
    const deleted = await call(sandbox.url, '/pair/', { method: 'DELETE' });
    expect(deleted.status).toBe(405);
    expect(deleted.body.detail).toBe('Method "DELETE" not allowed.');
  });
});
