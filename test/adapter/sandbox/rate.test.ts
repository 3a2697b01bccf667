// Document sections "GET /rate/", "v2 Rate (quote)" and the quote errors of GET /rate/.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { call, demoKeys, demoReferral, startTestSandbox } from './helpers.ts';

describe('GET /rate/', () => {
  it('answers an array of v2 Rate records with rate_id and expiration_time_unix', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC');
    expect(response.status).toBe(200);
    expect(response.body).toHaveLength(1);
    const rate = response.body[0];
    expect(Object.keys(rate).sort()).toEqual(
      [
        'pair',
        'from',
        'to',
        'withdrawal_fee',
        'rate',
        'rate_id',
        'max_withdraw_amount',
        'min_withdraw_amount',
        'max_deposit_amount',
        'min_deposit_amount',
        'expiration_time_unix',
      ].sort(),
    );
    expect(rate).toMatchObject({
      pair: 'ETHBTC',
      from: 'BTC',
      to: 'ETH',
      rate: '30.00000000',
      min_deposit_amount: '0.00100000',
    });
    expect(rate.expiration_time_unix).toMatch(/^\d+$/);
    expect(Number(rate.expiration_time_unix)).toBeGreaterThan(sandbox.now() / 1000);
  });

  it('returns the exact withdraw_amount preview when deposit_amount is supplied', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC&deposit_amount=0.1');
    // 0.1 BTC * 30 - 0.005 ETH fee
    expect(response.body[0].withdraw_amount).toBe('2.99500000');
  });

  it('filters fiat_only and crypto_only, and adds ETA information on include_eta', async () => {
    const sandbox = await startTestSandbox();
    const fiat = await call(sandbox.url, '/rate/?fiat_only=true');
    expect(fiat.body.map((r: { pair: string }) => r.pair).sort()).toEqual(['BTCEUR', 'EURBTC']);
    const crypto = await call(sandbox.url, '/rate/?crypto_only=true');
    expect(crypto.body.some((r: { pair: string }) => r.pair === 'BTCEUR')).toBe(false);
    const eta = await call(sandbox.url, '/rate/?pairs=ETHBTC&include_eta=true');
    expect(eta.body[0].eta_seconds).toBeTypeOf('number');
  });

  it('selects pairs by contract address and network (empty contract address = the native currency)', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(
      sandbox.url,
      '/rate/?from_contract_address=&from_network=ETH&to_contract_address=0xdac17f958d2ee523a2206206994597c13d831ec7&to_network=ETH',
    );
    expect(response.status).toBe(200);
    expect(response.body.map((r: { pair: string }) => r.pair)).toEqual(['USDTETH']);
  });

  it('answers 404 when no quotable pairs exist', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, '/rate/?pairs=DOGEBTC')).status).toBe(404);
    expect((await call(sandbox.url, '/rate/?pairs=NOPE')).status).toBe(404);
  });

  it('applies markup in basis points to the rate', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC&markup=100');
    expect(response.body[0].rate).toBe('29.70000000');
  });

  it('refuses markup together with referral_rate', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC&markup=10&referral_rate=0.001');
    expect(response.status).toBe(400);
    expect(response.text).toContain(
      'Provide either markup (basis points, preferred) or the legacy referral_rate (decimal fraction), not both.',
    );
  });

  it('caps markup at N basis points and interpolates N', async () => {
    const sandbox = await startTestSandbox({ limits: { markupCapBps: 250 } });
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC&markup=251');
    expect(response.status).toBe(400);
    expect(response.body.errors.markup).toEqual([
      'Must not exceed 250 basis points (absolute cap on dynamic referral rates).',
    ]);
  });

  it('allows referral_rate only for referral codes allowed to use it', async () => {
    const sandbox = await startTestSandbox();
    const refused = await call(sandbox.url, '/rate/?pairs=ETHBTC&referral_rate=0.001', {
      headers: { 'x-referral-token': demoReferral.defiToken },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('referral_rate is not allowed for this referral code');
    const allowed = await call(sandbox.url, '/rate/?pairs=ETHBTC&referral_rate=0.001', {
      headers: { 'x-referral-token': demoReferral.token },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.body[0].rate).toBe('29.97000000');
  });

  it('answers malformed parameters with field errors', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC&deposit_amount=abc&markup=x');
    expect(response.status).toBe(400);
    expect(response.body.errors).toMatchObject({
      deposit_amount: ['A valid number is required.'],
      markup: ['A valid integer is required.'],
    });
  });

  it('produces actionable DeFi quotes only after the configured production delay', async () => {
    const sandbox = await startTestSandbox({ quotes: { actionableDelayMs: 300 } });
    const started = Date.now();
    const response = await call(sandbox.url, '/rate/?pairs=USDTETH&deposit_amount=1&actionable_quote=true', {
      key: demoKeys.defi,
    });
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(response.body[0].withdraw_amount).toBe('2995.00000000');
  });

  it('refuses actionable quotes for non-DeFi keys and without deposit_amount', async () => {
    const sandbox = await startTestSandbox();
    expect(
      (await call(sandbox.url, '/rate/?pairs=USDTETH&deposit_amount=1&actionable_quote=true')).status,
    ).toBe(400);
    const noAmount = await call(sandbox.url, '/rate/?pairs=USDTETH&actionable_quote=true', {
      key: demoKeys.defi,
    });
    expect(noAmount.status).toBe(400);
    expect(noAmount.body.errors.deposit_amount).toEqual(['This field is required.']);
  });

  it('answers a failing actionable same-chain quote with the documented retry message', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /rate/',
      kind: 'quote_fetch_failure',
      times: 1,
    });
    const response = await call(sandbox.url, '/rate/?pairs=USDTETH&deposit_amount=1&actionable_quote=true', {
      key: demoKeys.defi,
    });
    expect(response.status).toBe(400);
    expect(response.body.detail).toBe(
      'Unable to fetch actionable same-chain DeFi fixed-rate quote for the provided deposit_amount. Please retry.',
    );
  });

  it('expires rate_ids on the sandbox clock', async () => {
    const sandbox = await startTestSandbox({ quotes: { ttlSeconds: 30 } });
    const rate = (await call(sandbox.url, '/rate/?pairs=ETHBTC')).body[0];
    expect(Number(rate.expiration_time_unix)).toBe(Math.floor((sandbox.now() + 30_000) / 1000));
  });
});
