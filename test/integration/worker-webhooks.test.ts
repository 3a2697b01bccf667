// The webhook receiver of a real worker process: signatures checked on the raw bytes, deliveries deduplicated on
// (unique_reference, status), hints routed to the owning replica, KYC notifications published.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
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
  const text = await (await fetch(`http://127.0.0.1:${cluster.webhookPort}/metrics`)).text();
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

  it('answers 2xx for a correctly signed webhook of an unknown order and 400 for an unreadable body', async () => {
    const someOrder = cluster.sandbox.orders.list()[0]?.order ?? {};
    const unknown = JSON.stringify({ ...someOrder, unique_reference: 'NOPE1', status: 'PAID', id: 'x' });
    expect((await post(unknown, sign(unknown, Math.floor(Date.now() / 1000)))).status).toBe(202);
    const garbage = '{"unique_reference": ';
    expect((await post(garbage, sign(garbage, Math.floor(Date.now() / 1000)))).status).toBe(400);
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
