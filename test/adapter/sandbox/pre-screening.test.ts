// Document section "POST /pre_screening/" (v2) and the v1 pre-screening row.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { call, demoKeys, demoReferral, startTestSandbox } from './helpers.ts';

const trusted = { 'x-referral-token': demoReferral.token };

describe('POST /pre_screening/', () => {
  it('passes with {status: success}', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/pre_screening/', {
      headers: trusted,
      body: { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1' },
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'success', message: expect.any(String) });
  });

  it('answers a compliance rejection as HTTP 200 with status failed', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/pre_screening/', {
      headers: trusted,
      body: { ip: '203.0.113.66', pair: 'ETHBTC', withdraw_amount: '1' },
    });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('failed');
    expect(response.body.message).toBeTypeOf('string');
  });

  it('answers 404 without a trusted referral token', async () => {
    const sandbox = await startTestSandbox();
    const body = { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1' };
    expect((await call(sandbox.url, '/pre_screening/', { body })).status).toBe(404);
    const untrusted = await call(sandbox.url, '/pre_screening/', {
      body,
      headers: { 'x-referral-token': demoReferral.defiToken },
    });
    expect(untrusted.status).toBe(404);
  });

  it('answers 403 when access is refused at access level', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/pre_screening/', {
      key: demoKeys.otherPartnerCefi,
      headers: { 'x-referral-token': demoReferral.refusedToken },
      body: { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1' },
    });
    expect(response.status).toBe(403);
  });

  it('refuses both amounts with 400 in the {status, message} envelope', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/pre_screening/', {
      headers: trusted,
      body: { ip: '198.51.100.7', pair: 'ETHBTC', deposit_amount: '0.1', withdraw_amount: '1' },
    });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      status: 'failed',
      message: 'Only one of deposit_amount or withdraw_amount can be provided',
    });
  });

  it('answers 401 in the {status, message} envelope too', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/pre_screening/', {
      key: null,
      headers: trusted,
      body: { ip: '198.51.100.7', pair: 'ETHBTC' },
    });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({
      status: 'failed',
      message: 'Authentication credentials were not provided.',
    });
  });

  it('validates ip and pair', async () => {
    const sandbox = await startTestSandbox();
    const badIp = await call(sandbox.url, '/pre_screening/', {
      headers: trusted,
      body: { ip: 'nope', pair: 'ETHBTC', deposit_amount: '1' },
    });
    expect(badIp.status).toBe(400);
    expect(badIp.body.status).toBe('failed');
    const badPair = await call(sandbox.url, '/pre_screening/', {
      headers: trusted,
      body: { ip: '198.51.100.7', pair: 'NOPE', deposit_amount: '1' },
    });
    expect(badPair.status).toBe(400);
  });

  it('answers v1 pre-screening (ip, pair, amount_quote) with {detail}', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.v1Url, '/pre_screening/', {
      key: null,
      headers: trusted,
      body: { ip: '198.51.100.7', pair: 'ETHBTC', amount_quote: '0.1' },
    });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['detail']);
  });
});
