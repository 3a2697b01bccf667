// Document section "Limits": the global throttle, the tighter fixed-rate quote throttles, the actionable cooldown.
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { call, demoKeys, startTestSandbox } from './helpers.ts';

const actionable = (pair: string, amount: string) =>
  `/rate/?pairs=${pair}&deposit_amount=${amount}&actionable_quote=true`;

describe('Limits', () => {
  it('throttles at the global limit per API key with 429, Retry-After and a seconds-to-wait detail', async () => {
    const sandbox = await startTestSandbox({ limits: { globalRequestsPerMinute: 5 } });
    for (let i = 0; i < 5; i++) expect((await call(sandbox.url, '/pair/')).status).toBe(200);
    const throttled = await call(sandbox.url, '/pair/');
    expect(throttled.status).toBe(429);
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(throttled.body.detail).toBe(`Request was throttled. Expected available in ${retryAfter} seconds.`);
    // Another key has its own budget; the window frees after a minute on the sandbox clock.
    expect((await call(sandbox.url, '/pair/', { key: demoKeys.cefiFixed })).status).toBe(200);
    sandbox.advanceClock(60_001);
    expect((await call(sandbox.url, '/pair/')).status).toBe(200);
  });

  it('defaults to 2500 requests per minute per key', async () => {
    const sandbox = await startTestSandbox();
    expect(sandbox.config.limits.globalRequestsPerMinute).toBe(2500);
  });

  it('throttles per IP for referral-token-only access', async () => {
    const sandbox = await startTestSandbox({ limits: { globalRequestsPerMinute: 2 } });
    const headers = { 'x-referral-token': 'sandbox-demo-ref-token' };
    await call(sandbox.url, '/rate/?pairs=ETHBTC', { key: null, headers });
    await call(sandbox.url, '/rate/?pairs=ETHBTC', { key: null, headers });
    expect((await call(sandbox.url, '/rate/?pairs=ETHBTC', { key: null, headers })).status).toBe(429);
  });

  it('refuses an identical actionable request (same pair and amount) within the ~15 s cooldown', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, actionable('USDTETH', '1'), { key: demoKeys.defi })).status).toBe(200);
    const again = await call(sandbox.url, actionable('USDTETH', '1'), { key: demoKeys.defi });
    expect(again.status).toBe(429);
    expect(again.body.detail).toMatch(/^Too many same-chain fixed-rate quote requests/);
    // A different amount is not identical.
    expect((await call(sandbox.url, actionable('USDTETH', '2'), { key: demoKeys.defi })).status).toBe(200);
    sandbox.advanceClock(15_000);
    expect((await call(sandbox.url, actionable('USDTETH', '1'), { key: demoKeys.defi })).status).toBe(200);
  });

  it('throttles same-chain fixed-rate quoting with the documented prefix and no Retry-After', async () => {
    const sandbox = await startTestSandbox({ limits: { sameChainFixedRateQuotesPerMinute: 2 } });
    await call(sandbox.url, actionable('USDTETH', '1'), { key: demoKeys.defi });
    await call(sandbox.url, actionable('USDTETH', '2'), { key: demoKeys.defi });
    const throttled = await call(sandbox.url, actionable('USDTETH', '3'), { key: demoKeys.defi });
    expect(throttled.status).toBe(429);
    expect(throttled.body.detail).toMatch(/^Too many same-chain fixed-rate quote requests/);
    expect(throttled.headers.get('retry-after')).toBeNull();
  });

  it('throttles cross-chain fixed-rate quoting separately, Retry-After when configured', async () => {
    const sandbox = await startTestSandbox({
      limits: { crossChainFixedRateQuotesPerMinute: 1, fixedRateThrottleRetryAfter: true },
    });
    expect((await call(sandbox.url, actionable('ETHBTC', '0.1'), { key: demoKeys.defi })).status).toBe(200);
    const throttled = await call(sandbox.url, actionable('ETHBTC', '0.2'), { key: demoKeys.defi });
    expect(throttled.status).toBe(429);
    expect(throttled.body.detail).toMatch(/^Too many cross-chain fixed-rate quote requests/);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    // Same-chain budget is untouched.
    expect((await call(sandbox.url, actionable('USDTETH', '1'), { key: demoKeys.defi })).status).toBe(200);
  });

  it('counts DeFi order creation without rate_id against the fixed-rate throttle', async () => {
    const sandbox = await startTestSandbox({ limits: { sameChainFixedRateQuotesPerMinute: 1 } });
    const body = {
      deposit_currency: 'ETH',
      withdraw_currency: 'USDT',
      deposit_amount: '1',
      withdraw_address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    };
    expect((await call(sandbox.url, '/orders/', { key: demoKeys.defi, body })).status).toBe(201);
    const second = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(second.status).toBe(429);
    expect(second.body.detail).toMatch(/^Too many same-chain fixed-rate quote requests/);
  });
});
