// Document sections "Endpoints" (currency, network, pair, pair/random) and "Resources and their fields" (v2 Pair).
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { BTC_ADDRESS, call, EVM_ADDRESS, startTestSandbox } from './helpers.ts';

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

  it('tells which networks a currency is on, with the contract address on each', async () => {
    const sandbox = await startTestSandbox();
    const usdt = await call(sandbox.url, '/currency/USDT/');
    expect(usdt.body.networks).toEqual([
      { name: 'ETH', contract_address: '0xdAC17F958D2ee523a2206206994597C13D831ec7' },
    ]);
    expect((await call(sandbox.url, '/currency/BTC/')).body.networks).toEqual([
      { name: 'BTC', contract_address: '' },
    ]);
    const list = await call(sandbox.url, '/currency/');
    for (const currency of list.body) {
      expect(currency.networks.length).toBeGreaterThan(0);
      expect(currency.networks.map((n: { name: string }) => n.name)).toContain(currency.network);
    }
  });

  it("gives each network its address format: a family name and a shape pattern the network's addresses match", async () => {
    const sandbox = await startTestSandbox();
    const networks = (await call(sandbox.url, '/network/')).body as {
      name: string;
      address_format: string;
      address_regex: string;
      has_extra_id: boolean;
    }[];
    const byName = new Map(networks.map((n) => [n.name, n]));
    expect(byName.get('ETH')).toMatchObject({ address_format: 'evm', is_evm: true, has_extra_id: false });
    expect(byName.get('BTC')).toMatchObject({ address_format: 'bitcoin', is_evm: false });
    expect(byName.get('XRP')).toMatchObject({ address_format: 'regex', has_extra_id: true });
    expect(byName.get('SEPA')).toMatchObject({ address_format: 'iban' });
    const valid: Record<string, string[]> = {
      ETH: [EVM_ADDRESS, EVM_ADDRESS.toLowerCase()],
      BTC: [BTC_ADDRESS, '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy'],
      LTC: ['LVg2kJoFNg45Nbpy53h7Fe1wKyeXVRhMH9', 'MGxNPPB7eBoWPUaprtX9v9CXJZoD2465zN'],
      DOGE: ['DBXu2kgc3xtvCUWFcxFE3r9hEYgmuaaCyD'],
      TRX: ['TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL'],
      XRP: ['rDsbeomae4FXwgQTJp9Rs64Qg9vDiTCdBv'],
      SEPA: ['DE89370400440532013000'],
    };
    for (const [name, addresses] of Object.entries(valid)) {
      const pattern = new RegExp(byName.get(name)!.address_regex);
      for (const address of addresses) expect(pattern.test(address), `${name} ${address}`).toBe(true);
    }
    // every network's pattern refuses another family's addresses
    expect(new RegExp(byName.get('ETH')!.address_regex).test(BTC_ADDRESS)).toBe(false);
    expect(new RegExp(byName.get('BTC')!.address_regex).test(EVM_ADDRESS)).toBe(false);
    expect(new RegExp(byName.get('TRX')!.address_regex).test('DBXu2kgc3xtvCUWFcxFE3r9hEYgmuaaCyD')).toBe(
      false,
    );
    const one = await call(sandbox.url, '/network/ETH/');
    expect(one.body).toMatchObject({ address_format: 'evm', address_regex: '^0x[0-9a-fA-F]{40}$' });
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
