// "Bad requests get the exchange's own 400s, never a crash or a hang": malformed input of every kind.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { btcToEthOrder, call, demoKeys, startTestSandbox } from './helpers.ts';

/** Speaks raw HTTP/1.1, for requests fetch refuses to send (a malformed Host header). */
function rawRequest(url: string, text: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('Robustness', () => {
  it('answers malformed percent-encoding with 404', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, '/orders/%E0%A4%A/')).status).toBe(404);
  });

  it('answers an oversized body with 400', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', {
      rawBody: 'x'.repeat(1_100_000),
      headers: { 'Content-Type': 'application/json' },
    });
    expect(response.status).toBe(400);
  });

  it('answers wrongly typed fields with field errors', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({
        deposit_currency: ['BTC'],
        limit_ttl: 'soon',
        markup: 1.5,
        referral_code: 42,
        withdraw_address: null,
      }),
    });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.errors).sort()).toEqual(['deposit_currency', 'limit_ttl', 'markup']);
  });

  it('answers an empty PATCH body and JSON scalars without crashing', async () => {
    const sandbox = await startTestSandbox();
    const order = (await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).body;
    expect(
      (await call(sandbox.url, `/orders/${order.unique_reference}/`, { method: 'PATCH', rawBody: '' }))
        .status,
    ).toBe(200);
    const scalar = await call(sandbox.url, `/orders/${order.unique_reference}/`, {
      method: 'PATCH',
      body: 'hello',
    });
    expect(scalar.status).toBe(400);
    expect(scalar.text).toContain('Expected a dictionary, but got str.');
  });

  it('survives a malformed Host header and keeps serving', async () => {
    const sandbox = await startTestSandbox();
    const answer = await rawRequest(
      sandbox.url,
      `GET /api/v2/pair/ HTTP/1.1\r\nHost: bad host\r\nAuthorization: ApiKey ${demoKeys.cefi}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 (200|400)/);
    expect((await call(sandbox.url, '/pair/')).status).toBe(200);
  });
});
