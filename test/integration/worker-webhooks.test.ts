// The webhook receiver of a real worker process: signatures checked on the raw bytes against every configured
// secret (one per webhook configuration), deliveries deduplicated on (unique_reference, status), hints routed to
// the owning replica, KYC notifications published, every signed delivery answered 2xx, and health and metrics on
// their own port.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';
import { freePort } from '../../dev/services/index.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';

/** The secret of a second, legacy (v1 payload) webhook configuration of the same partner. */
const v1WebhookSecret = 'test-webhook-secret-v1-config-42';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({
    workers: 1,
    partitions: 2,
    env: { WEBHOOK_SECRETS: v1WebhookSecret },
    sandbox: (config) => ({
      ...config,
      partners: config.partners.map((partner) =>
        partner.id === 'demo'
          ? {
              ...partner,
              webhooks: [
                ...(partner.webhooks ?? []),
                {
                  id: 'worker-v1',
                  url: partner.webhooks?.[0]?.url ?? '',
                  categories: ['order_status'],
                  payloadVersion: 'v1',
                  secret: v1WebhookSecret,
                },
              ],
            }
          : partner,
      ),
    }),
  });
});
afterAll(async () => {
  await cluster?.stop();
});

function sign(body: string, timestamp: number, secret = webhookSecret): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return {
    'content-type': 'application/json',
    'x-webhook-timestamp': String(timestamp),
    'x-webhook-signature': `sha256=${signature}`,
  };
}

async function post(
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${cluster.webhookPort}/webhooks/exchange`, {
    method: 'POST',
    body,
    headers,
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${cluster.workers[0]?.metricsPort ?? 0}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('webhook receiver', () => {
  it('refuses unsigned, wrongly signed, stale and tampered webhooks, and deduplicates redeliveries', async () => {
    const orderId = uniqueName('order');
    await cluster.send(orderCreateCommand('cefi', '1.75', orderId));
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created');
    const reference = String(created['unique_reference']);
    const order = { ...cluster.sandbox.orders.get(reference)?.order, status: 'PAID', id: 'delivery-1' };
    const body = JSON.stringify(order);
    const now = Math.floor(Date.now() / 1000);

    expect((await post(body, { 'content-type': 'application/json' })).status).toBe(401);
    expect((await post(body, sign(body, now, 'not-the-secret'))).status).toBe(401);
    expect((await post(body, sign(body, now - 3600))).status).toBe(401);
    expect((await post(body.replace('PAID', 'PAIDX'), sign(body, now))).status).toBe(401);
    expect(await metric('worker_webhooks_total{result="refused"}')).toBe(4);

    const first = await post(body, sign(body, now));
    const again = await post(body, sign(body, now + 1));
    expect(first).toMatchObject({ status: 200, json: { accepted: true } });
    expect(again).toMatchObject({ status: 200, json: { accepted: true, duplicate: true } });
    expect(await metric('worker_webhooks_total{result="duplicate"}')).toBeGreaterThanOrEqual(1);
    expect(await metric('worker_webhooks_total{result="routed"}')).toBeGreaterThanOrEqual(1);

    // A hint alone changes nothing: the exchange still says INITIAL, so no status change is published.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(cluster.collector.of(orderId).some((e) => e.type === 'order.status_changed')).toBe(false);
    // When the exchange really moves, the sandbox's own signed webhook leads to a confirmed status change.
    cluster.sandbox.advanceOrder(reference, 'deposit_seen');
    const changed = await cluster.collector.waitForOrderEvent(orderId, 'order.status_changed', 30_000);
    expect(changed['status']).toBe('UNCONFIRMED PAYMENT');
  });

  it('answers 2xx, quickly, to every correctly signed webhook: unknown order, unreadable body, unknown shape', async () => {
    const someOrder = cluster.sandbox.orders.list()[0]?.order ?? {};
    const now = Math.floor(Date.now() / 1000);
    const unknown = JSON.stringify({ ...someOrder, unique_reference: 'NOPE1', status: 'PAID', id: 'x' });
    expect((await post(unknown, sign(unknown, now))).status).toBe(202);
    const before = (await metric('worker_webhooks_total{result="unreadable"}')) || 0;
    for (const body of [
      '{"unique_reference": ',
      '{"hello":"world"}',
      '[1,2]',
      JSON.stringify({ status: 7 }),
    ]) {
      const started = performance.now();
      const answer = await post(body, sign(body, now, v1WebhookSecret));
      expect(answer, body).toMatchObject({ status: 202, json: { accepted: false } });
      expect(performance.now() - started).toBeLessThan(1_000);
    }
    expect(await metric('worker_webhooks_total{result="unreadable"}')).toBe(before + 4);
    expect(cluster.workers[0]?.log()).toContain('signed webhook could not be read');
  });

  it('verifies deliveries of two webhook configurations signed with different secrets, and answers each 2xx', async () => {
    const orderId = uniqueName('order');
    await cluster.send(orderCreateCommand('cefi', '1.95', orderId));
    const reference = String(
      (await cluster.collector.waitForOrderEvent(orderId, 'order.created'))['unique_reference'],
    );
    cluster.sandbox.advanceOrder(reference, 'deposit_seen');
    await cluster.sandbox.webhooksIdle();
    const deliveries = cluster.sandbox
      .listWebhookDeliveries()
      .filter((delivery) => delivery.orderReference === reference);
    expect(new Set(deliveries.map((delivery) => delivery.webhookId))).toEqual(
      new Set(['worker', 'worker-v1']),
    );
    expect(
      deliveries.map((d) => ({ id: d.webhookId, outcome: d.outcome, ok: (d.httpStatus ?? 0) < 300 })),
    ).toEqual(deliveries.map((d) => ({ id: d.webhookId, outcome: 'delivered', ok: true })));
    expect(await metric('worker_webhooks_verified_total{secret="0"}')).toBeGreaterThan(0);
    expect(await metric('worker_webhooks_verified_total{secret="1"}')).toBeGreaterThan(0);
    const changed = await cluster.collector.waitForOrderEvent(orderId, 'order.status_changed', 30_000);
    expect(changed['status']).toBe('UNCONFIRMED PAYMENT');
  });

  it('serves only the webhook on HTTP_PORT; health, readiness and metrics on METRICS_PORT', async () => {
    const webhookBase = `http://127.0.0.1:${cluster.webhookPort}`;
    const metricsBase = `http://127.0.0.1:${cluster.workers[0]?.metricsPort ?? 0}`;
    for (const path of ['/metrics', '/readyz', '/healthz'])
      expect((await fetch(`${webhookBase}${path}`)).status, path).toBe(404);
    expect((await fetch(`${metricsBase}/healthz`)).status).toBe(200);
    expect((await fetch(`${metricsBase}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${metricsBase}/startupz`)).json()).toMatchObject({ status: 'started' });
    expect((await fetch(`${metricsBase}/readyz/webhooks`)).status).toBe(200);
    const metrics = await (await fetch(`${metricsBase}/metrics`)).text();
    expect(metrics).toContain('worker_webhooks_total{result=');
    // Every request to the webhook server is timed, the 404s above included (HTTP semantic conventions).
    const timed = (...labels: string[]): number =>
      metrics
        .split('\n')
        .filter(
          (line) =>
            line.startsWith('http_server_request_duration_seconds_count{') &&
            labels.every((label) => line.includes(label)),
        )
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    expect(
      timed('http_request_method="GET"', 'http_response_status_code="404"', 'url_scheme="http"'),
    ).toBeGreaterThan(0);
    expect(timed('http_request_method="POST"', 'http_route="/webhooks/exchange"')).toBeGreaterThan(0);
  });

  it('records a KYC notification from the exchange and publishes it', async () => {
    const orderId = uniqueName('order');
    await cluster.send(orderCreateCommand('cefi', '1.85', orderId));
    const reference = String(
      (await cluster.collector.waitForOrderEvent(orderId, 'order.created'))['unique_reference'],
    );
    cluster.sandbox.emitKycStatus(reference, 'approved');
    const kyc = await cluster.collector.waitFor(
      (events) =>
        events.some((e) => e.type === 'exchange.kyc_status_changed' && e['unique_reference'] === reference),
      'the KYC event',
      30_000,
    );
    const event = kyc.find(
      (e) => e.type === 'exchange.kyc_status_changed' && e['unique_reference'] === reference,
    );
    expect(event).toMatchObject({ order_id: orderId, seq: 0, payload: { kyc_status: 'approved' } });
  });
});

describe('webhook signing configuration', () => {
  const main = resolve(import.meta.dirname, '..', '..', 'src', 'main.ts');
  const run = (env: Record<string, string>, until: RegExp) =>
    new Promise<{ output: string; code: number | null }>((done) => {
      const { WEBHOOK_SECRET: _secret, WEBHOOK_SECRETS: _secrets, ...unsigned } = cluster.env;
      const child = spawn(process.execPath, [main], {
        env: {
          PATH: process.env['PATH'] ?? '',
          ...unsigned,
          TOPIC_COMMANDS: uniqueName('unsigned'),
          CONSUMER_GROUP: uniqueName('unsigned'),
          HTTP_PORT: '0',
          METRICS_PORT: '0',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const take = (chunk: Buffer): void => {
        output += chunk.toString();
        if (until.test(output)) child.kill('SIGKILL');
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      child.once('exit', (code) => done({ output, code }));
      setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
    });

  it('refuses to start without a signing secret, and warns at start when unsigned webhooks are allowed', async () => {
    const refused = await run({}, /$^/);
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('config: WEBHOOK_SECRET: a webhook signing secret');
    const allowed = await run({ WEBHOOK_ALLOW_UNSIGNED: 'true' }, /accepted UNSIGNED/);
    expect(allowed.output).toMatch(
      /"level":(40|"warn").*webhooks are accepted UNSIGNED \(WEBHOOK_ALLOW_UNSIGNED=true\)/,
    );
  });

  it('answers health and verifies and acknowledges webhooks while it is still starting (Kafka unreachable)', async () => {
    const [webhookPort, metricsPort, deadKafka] = await Promise.all([freePort(), freePort(), freePort()]);
    const child = spawn(process.execPath, [main], {
      env: {
        PATH: process.env['PATH'] ?? '',
        ...cluster.env,
        KAFKA_BROKERS: `127.0.0.1:${deadKafka}`,
        HTTP_PORT: String(webhookPort),
        METRICS_PORT: String(metricsPort),
      },
      stdio: 'ignore',
    });
    try {
      const deadline = Date.now() + 20_000;
      let health = 0;
      while (health !== 200 && Date.now() < deadline) {
        health = await fetch(`http://127.0.0.1:${metricsPort}/healthz`).then(
          (res) => res.status,
          () => 0,
        );
        if (health !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(health).toBe(200);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status).toBe(503);
      // Alive, but not started: the start-up probe holds the pod back until its partitions are restored.
      expect((await fetch(`http://127.0.0.1:${metricsPort}/startupz`)).status).toBe(503);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/readyz/webhooks`)).status).toBe(200);
      const body = JSON.stringify({ unique_reference: 'STARTING1', status: 'PAID', id: 'x' });
      const url = `http://127.0.0.1:${webhookPort}/webhooks/exchange`;
      const signed = await fetch(url, {
        method: 'POST',
        body,
        headers: sign(body, Math.floor(Date.now() / 1000)),
      });
      expect(signed.status).toBe(202);
      expect(await signed.json()).toMatchObject({ accepted: false });
      const unsigned = await fetch(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect(unsigned.status).toBe(401);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
