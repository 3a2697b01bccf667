// Document section "Authentication".
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { btcToEthOrder, call, demoKeys, demoReferral, startTestSandbox } from './helpers.ts';

const NOT_PROVIDED = 'Authentication credentials were not provided.';

describe('Authentication', () => {
  it('requires an API key on every v2 endpoint, market data included', async () => {
    const sandbox = await startTestSandbox();
    for (const path of [
      '/currency/',
      '/currency/BTC/',
      '/network/',
      '/network/ETH/',
      '/pair/',
      '/pair/ETHBTC/',
      '/pair/random/',
      '/rate/',
      '/orders/',
    ]) {
      const response = await call(sandbox.url, path, { key: null });
      expect(response.status, path).toBe(401);
      expect(response.body.detail).toBe(NOT_PROVIDED);
    }
    const post = await call(sandbox.url, '/orders/', { key: null, body: btcToEthOrder() });
    expect(post.status).toBe(401);
  });

  it('accepts the ApiKey scheme and refuses Bearer with the credentials-not-provided 401', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, '/pair/')).status).toBe(200);
    const bearer = await call(sandbox.url, '/pair/', {
      key: null,
      headers: { Authorization: `Bearer ${demoKeys.cefi}` },
    });
    expect(bearer.status).toBe(401);
    expect(bearer.body).toEqual({ detail: NOT_PROVIDED });
  });

  it('answers an unknown key with 401 and detail', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/pair/', { key: 'not-a-real-key' });
    expect(response.status).toBe(401);
    expect(response.body.detail).toBe(NOT_PROVIDED);
  });

  it('accepts a referral token alone on GET /rate/ but nowhere else', async () => {
    const sandbox = await startTestSandbox();
    const headers = { 'x-referral-token': demoReferral.token };
    expect((await call(sandbox.url, '/rate/?pairs=ETHBTC', { key: null, headers })).status).toBe(200);
    expect((await call(sandbox.url, '/pair/', { key: null, headers })).status).toBe(401);
  });

  it('rejects a referral token owned by another partner than the key owner with 401', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/rate/?pairs=ETHBTC', {
      headers: { 'x-referral-token': demoReferral.otherPartnerToken },
    });
    expect(response.status).toBe(401);
    expect(response.body.detail).toMatch(/referral code/i);
  });

  it('applies the ownership rule to the ref query parameter and the referral_code body field', async () => {
    const sandbox = await startTestSandbox();
    const viaRef = await call(sandbox.url, `/orders/?ref=${demoReferral.otherPartnerCode}`, {
      body: btcToEthOrder(),
    });
    expect(viaRef.status).toBe(401);
    const viaBody = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ referral_code: demoReferral.otherPartnerCode }),
    });
    expect(viaBody.status).toBe(401);
    const owned = await call(sandbox.url, `/orders/?ref=${demoReferral.code}`, {
      body: btcToEthOrder(),
      headers: { 'x-referral-token': demoReferral.token },
    });
    expect(owned.status).toBe(201);
  });

  it('takes an empty x-referral-token header for none supplied, as v1 does', async () => {
    // EdgeApp's exchange plugin always sends the header, empty when its partner has no referral code: the document
    // asks that every code "supplied by any mechanism" belong to the key's owner, and an empty header supplies none.
    const sandbox = await startTestSandbox();
    for (const token of ['', '  ']) {
      const rate = await call(sandbox.url, '/rate/?pairs=ETHBTC', { headers: { 'x-referral-token': token } });
      expect(rate.status, JSON.stringify(token)).toBe(200);
      const order = await call(sandbox.url, '/orders/', {
        body: btcToEthOrder(),
        headers: { 'x-referral-token': token },
      });
      expect(order.status, JSON.stringify(token)).toBe(201);
    }
    // Alone it is no credential either.
    const alone = await call(sandbox.url, '/rate/?pairs=ETHBTC', {
      key: null,
      headers: { 'x-referral-token': '' },
    });
    expect(alone.status).toBe(401);
    expect(alone.body).toEqual({ detail: NOT_PROVIDED });
  });

  it('accepts X-User-Timezone, and never fails a request for it', async () => {
    const sandbox = await startTestSandbox();
    const good = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder(),
      headers: { 'X-User-Timezone': 'GMT +02:00 (Europe/Berlin)' },
    });
    expect(good.status).toBe(201);
    const odd = await call(sandbox.url, '/pair/', { headers: { 'X-User-Timezone': 'garbage' } });
    expect(odd.status).toBe(200);
  });

  it('scopes keys to a trading mode: a DeFi rate_id cannot create a CeFi order', async () => {
    const sandbox = await startTestSandbox();
    const quote = await call(sandbox.url, '/rate/?pairs=ETHBTC&deposit_amount=0.1&actionable_quote=true', {
      key: demoKeys.defi,
    });
    expect(quote.status).toBe(200);
    const order = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ rate_id: quote.body[0].rate_id }),
    });
    expect(order.status).toBe(400);
    expect(order.text).toContain(
      'This rate_id was issued for a DeFi quote and cannot be used to create a standard (CeFi) order.',
    );
  });
});
