// The control surface (admin HTTP API and typed handle): advancing orders (one or a batch), the automatic schedule,
// the sandbox clock, webhook delivery counts, and fault injection per endpoint, reproducible from a seed.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import {
  btcToEthOrder,
  call,
  createOrder,
  demoKeys,
  EVM_ADDRESS,
  partnersWithWebhooks,
  startTestSandbox,
  startWebhookReceiver,
} from './helpers.ts';

describe('Admin HTTP API', () => {
  it('advances an order and moves the clock over HTTP', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    const advanced = await call(sandbox.adminUrl, `/orders/${order.unique_reference}/advance/`, {
      key: null,
      body: { to: 'confirmed' },
    });
    expect(advanced.status).toBe(200);
    expect(advanced.body.passed).toEqual(['UNCONFIRMED PAYMENT', 'PAID']);
    const back = await call(sandbox.adminUrl, `/orders/${order.unique_reference}/advance/`, {
      key: null,
      body: { to: 'deposit_seen' },
    });
    expect(back.status).toBe(409);
    const before = sandbox.now();
    const clock = await call(sandbox.adminUrl, '/clock/advance/', { key: null, body: { ms: 3_600_000 } });
    expect(clock.body.now - before).toBeGreaterThanOrEqual(3_600_000);
    expect(
      (await call(sandbox.adminUrl, '/orders/NOPE/advance/', { key: null, body: { to: 'paid' } })).status,
    ).toBe(404);
  });

  it('advances a batch of orders in one request, each in its place, and reports those that cannot move', async () => {
    const sandbox = await startTestSandbox();
    const first = await createOrder(sandbox);
    const second = await createOrder(sandbox);
    sandbox.advanceOrder(second.unique_reference, 'completed');
    const batch = await call(sandbox.adminUrl, '/orders/advance/', {
      key: null,
      body: { references: [first.unique_reference, 'NOPE', second.unique_reference], to: 'confirmed' },
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toEqual([
      { reference: first.unique_reference, passed: ['UNCONFIRMED PAYMENT', 'PAID'] },
      { reference: 'NOPE', status: 404, detail: expect.stringContaining('NOPE') },
      { reference: second.unique_reference, status: 409, detail: expect.any(String) },
    ]);
    expect(sandbox.orders.get(first.unique_reference)!.order['status']).toBe('PAID');
    expect(sandbox.orders.get(second.unique_reference)!.order['status']).toBe('COMPLETED');
    for (const body of [{ references: [], to: 'completed' }, { references: ['A'] }, { to: 'completed' }])
      expect((await call(sandbox.adminUrl, '/orders/advance/', { key: null, body })).status).toBe(400);
    // The batch route leaves the one-order routes as they were.
    expect((await call(sandbox.adminUrl, '/orders/advance/', { key: null })).status).toBe(404);
  });

  it('counts webhook deliveries by outcome and tells how many are queued or in flight', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2' }]),
      webhooks: { timeoutMs: 1_000 },
    });
    const pending = async (): Promise<unknown> =>
      (await call(sandbox.adminUrl, '/webhooks/pending/', { key: null })).body;
    expect(await pending()).toEqual({ pending: 0 });
    expect((await call(sandbox.adminUrl, '/webhooks/outcomes/', { key: null })).body).toEqual([]);

    const held = await createOrder(sandbox);
    receiver.respondWith = () => 'hang';
    sandbox.advanceOrder(held.unique_reference, 'confirmed');
    // Two status changes of one order: the first in flight (held by the receiver), the second queued behind it.
    expect(await pending()).toEqual({ pending: 2 });
    expect(sandbox.webhooksPending()).toBe(2);
    await sandbox.webhooksIdle();
    receiver.respondWith = () => 200;
    const answered = await createOrder(sandbox);
    sandbox.advanceOrder(answered.unique_reference, 'completed');
    await sandbox.webhooksIdle();
    expect(await pending()).toEqual({ pending: 0 });

    const outcomes = await call(sandbox.adminUrl, '/webhooks/outcomes/', { key: null });
    expect(outcomes.status).toBe(200);
    expect(outcomes.body).toEqual([
      { outcome: 'timeout', httpStatus: null, error: 'no answer within 1000 ms', count: 2 },
      { outcome: 'delivered', httpStatus: 200, error: null, count: 5 },
    ]);
    expect(sandbox.webhookOutcomes()).toEqual(outcomes.body);
    const counted = (outcomes.body as { count: number }[]).reduce((sum, o) => sum + o.count, 0);
    expect(counted).toBe(sandbox.listWebhookDeliveries().length);
  });

  it('runs orders on an automatic schedule driven by the sandbox clock', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.adminUrl, '/schedule/', {
      key: null,
      body: { enabled: true, stepMs: 10_000, outcome: 'completed' },
    });
    expect(response.status).toBe(200);
    const order = await createOrder(sandbox);
    sandbox.advanceClock(10_000);
    expect(sandbox.orders.get(order.unique_reference)!.order['status']).toBe('UNCONFIRMED PAYMENT');
    sandbox.advanceClock(40_000);
    expect((await call(sandbox.url, `/orders/${order.unique_reference}/`)).body.status).toBe('COMPLETED');
  });

  it('schedules one order towards a refund', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    sandbox.setAutoSchedule({ stepMs: 1_000, outcome: 'refunded' }, order.unique_reference);
    sandbox.advanceClock(10_000);
    expect(sandbox.orders.get(order.unique_reference)!.history.map((h) => h.status)).toEqual([
      'INITIAL',
      'UNCONFIRMED PAYMENT',
      'PAID',
      'REFUNDED',
    ]);
  });

  it('arms and clears faults over HTTP', async () => {
    const sandbox = await startTestSandbox();
    const armed = await call(sandbox.adminUrl, '/faults/', {
      key: null,
      body: { target: 'endpoint', endpoint: 'GET /pair/', kind: 'http_error', status: 502 },
    });
    expect(armed.status).toBe(201);
    expect((await call(sandbox.url, '/pair/')).status).toBe(502);
    expect((await call(sandbox.adminUrl, '/faults/', { key: null, method: 'DELETE' })).status).toBe(204);
    expect((await call(sandbox.url, '/pair/')).status).toBe(200);
    const invalid = await call(sandbox.adminUrl, '/faults/', {
      key: null,
      body: { target: 'endpoint', kind: 'nope' },
    });
    expect(invalid.status).toBe(400);
  });
});

describe('Fault injection', () => {
  it('adds latency to one endpoint', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /pair/',
      kind: 'latency',
      latencyMs: 200,
      times: 1,
    });
    const started = Date.now();
    expect((await call(sandbox.url, '/pair/')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('holds a request without answering (timeout) until the client gives up', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'timeout',
      latencyMs: 5_000,
      times: 1,
    });
    const request = fetch(`${sandbox.url}/orders/ABC/`, {
      headers: { Authorization: `ApiKey ${demoKeys.cefi}` },
      signal: AbortSignal.timeout(200),
    });
    await expect(request).rejects.toThrow();
  });

  it('answers 429 with or without Retry-After', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'throttle',
      retryAfterSeconds: 7,
      times: 1,
    });
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'throttle',
      retryAfterSeconds: null,
      skip: 1,
      times: 1,
    });
    const first = await call(sandbox.url, '/orders/', { body: btcToEthOrder() });
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('7');
    expect(first.body.detail).toContain('7 seconds');
    const second = await call(sandbox.url, '/orders/', { body: btcToEthOrder() });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBeNull();
    expect((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status).toBe(201);
  });

  it('answers "Quote provider is unavailable" and expired or non-actionable rate_ids on demand', async () => {
    const sandbox = await startTestSandbox();
    const body = {
      deposit_currency: 'ETH',
      withdraw_currency: 'USDT',
      deposit_amount: '1',
      withdraw_address: EVM_ADDRESS,
    };
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'quote_provider_unavailable',
      times: 1,
    });
    const unavailable = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(unavailable.body.detail).toBe('Quote provider is unavailable. Please request a new rate.');

    const quote = async (amount: string) =>
      (
        await call(sandbox.url, `/rate/?pairs=USDTETH&deposit_amount=${amount}&actionable_quote=true`, {
          key: demoKeys.defi,
        })
      ).body[0].rate_id;
    sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'expired_rate_id', times: 1 });
    const expired = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: { ...body, rate_id: await quote('1') },
    });
    expect(expired.body.detail).toBe('The quote for this rate_id has expired. Please request a new rate.');
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /rate/',
      kind: 'non_actionable_rate_id',
      times: 1,
    });
    const nonActionable = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: { ...body, rate_id: await quote('2') },
    });
    expect(nonActionable.body.detail).toBe(
      'The provided fixed-rate rate_id is non-actionable for this route.',
    );
  });

  it('fails cross-chain DeFi order quoting with the documented validation error', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'quote_fetch_failure',
      times: 1,
    });
    const response = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: {
        deposit_currency: 'BTC',
        withdraw_currency: 'ETH',
        deposit_amount: '0.1',
        withdraw_address: EVM_ADDRESS,
      },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors.non_field_errors).toEqual([
      'Unable to fetch a cross-chain fixed-rate quote. Please retry.',
    ]);
  });

  it('replays a probabilistic fault sequence identically for one seed', async () => {
    const run = async (seed: number): Promise<number[]> => {
      const sandbox = await startTestSandbox({}, { seed });
      sandbox.injectFault({
        target: 'endpoint',
        endpoint: '*',
        kind: 'http_error',
        status: 503,
        probability: 0.5,
      });
      const statuses = [];
      for (let i = 0; i < 12; i++) statuses.push((await call(sandbox.url, '/pair/')).status);
      return statuses;
    };
    const a = await run(7);
    expect(await run(7)).toEqual(a);
    expect(a).toContain(503);
    expect(a).toContain(200);
  });

  it('applies v1 faults by the "v1 " endpoint prefix', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'v1 GET /pair/',
      kind: 'http_error',
      status: 500,
      times: 1,
    });
    expect((await call(sandbox.v1Url, '/pair/', { key: null })).status).toBe(500);
    expect((await call(sandbox.url, '/pair/')).status).toBe(200);
  });
});
