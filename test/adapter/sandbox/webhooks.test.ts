// Document section "Events": setup, delivery, payload, signature, auto-disable. Signatures are checked here by an
// independent HMAC computation with node:crypto.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  call,
  createOrder,
  partnersWithWebhooks,
  startTestSandbox,
  startWebhookReceiver,
  type ReceivedWebhook,
} from './helpers.ts';

const SECRET = 'whsec-test-secret';

function verify(webhook: ReceivedWebhook, secret: string): boolean {
  const timestamp = String(webhook.headers['x-webhook-timestamp']);
  const header = String(webhook.headers['x-webhook-signature']);
  if (!header.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${webhook.rawBody}`).digest();
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('Webhooks', () => {
  it('POSTs one v2 payload per status change: the v2 Order plus a stable id, JSON content type', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2', secret: SECRET }]),
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'completed');
    const received = await receiver.waitFor(5);
    await sandbox.webhooksIdle();
    expect(received).toHaveLength(5);
    expect(received.map((w) => w.body.status)).toEqual([
      'UNCONFIRMED PAYMENT',
      'PAID',
      'PRE-RELEASE',
      'RELEASED',
      'COMPLETED',
    ]);
    expect(new Set(received.map((w) => w.body.id)).size).toBe(1);
    for (const webhook of received) {
      expect(webhook.headers['content-type']).toContain('application/json');
      expect(webhook.body.unique_reference).toBe(order.unique_reference);
      expect(webhook.body).toHaveProperty('deposit_transaction');
    }
    const detail = await call(sandbox.url, `/orders/${order.unique_reference}/`);
    const { id: _id, ...lastPayload } = received[4]!.body;
    expect(lastPayload).toEqual(detail.body);
  });

  it('signs with sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>"> and a fresh Unix-seconds timestamp', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2', secret: SECRET }]),
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'deposit_seen');
    const [webhook] = await receiver.waitFor(1);
    expect(verify(webhook!, SECRET)).toBe(true);
    expect(verify(webhook!, 'another-secret')).toBe(false);
    expect(Math.abs(Number(webhook!.headers['x-webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300);
  });

  it('sends no signature headers when no secret is configured', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2' }]),
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'deposit_seen');
    const [webhook] = await receiver.waitFor(1);
    expect(webhook!.headers['x-webhook-signature']).toBeUndefined();
    expect(webhook!.headers['x-webhook-timestamp']).toBeUndefined();
  });

  it('defaults legacy configurations to the v1 payload (status_name pairs, 18-digit amounts)', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({ partners: partnersWithWebhooks([{ url: receiver.url }]) });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'confirmed');
    const received = await receiver.waitFor(2);
    expect(received[1]!.body.status_name).toEqual([[13, 'PAID']]);
    expect(received[1]!.body.amount_quote).toBe('0.100000000000000000');
    expect(received[1]!.body.unique_reference).toBe(order.unique_reference);
  });

  it('keeps id stable per (configuration, order) and distinct across configurations and orders', async () => {
    const a = await startWebhookReceiver();
    const b = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([
        { url: a.url, payloadVersion: 'v2', id: 'alpha' },
        { url: b.url, payloadVersion: 'v2', id: 'beta' },
      ]),
    });
    const first = await createOrder(sandbox);
    const second = await createOrder(sandbox);
    sandbox.advanceOrder(first.unique_reference, 'confirmed');
    sandbox.advanceOrder(second.unique_reference, 'deposit_seen');
    await a.waitFor(3);
    await b.waitFor(3);
    const idsA = a.received
      .filter((w) => w.body.unique_reference === first.unique_reference)
      .map((w) => w.body.id);
    const idsB = b.received
      .filter((w) => w.body.unique_reference === first.unique_reference)
      .map((w) => w.body.id);
    expect(new Set(idsA).size).toBe(1);
    expect(idsA[0]).not.toBe(idsB[0]);
    expect(a.received.find((w) => w.body.unique_reference === second.unique_reference)!.body.id).not.toBe(
      idsA[0],
    );
  });

  it('makes one attempt only: no retry after an error answer', async () => {
    const receiver = await startWebhookReceiver();
    receiver.respondWith = () => 500;
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2' }]),
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'deposit_seen');
    await receiver.waitFor(1);
    await sandbox.webhooksIdle();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.received).toHaveLength(1);
    expect(sandbox.listWebhookDeliveries()[0]).toMatchObject({ outcome: 'failed', httpStatus: 500 });
  });

  it('gives up after the timeout without retrying', async () => {
    const receiver = await startWebhookReceiver();
    receiver.respondWith = () => 'hang';
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2' }]),
      webhooks: { timeoutMs: 200 },
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'deposit_seen');
    await sandbox.webhooksIdle();
    expect(sandbox.listWebhookDeliveries()[0]!.outcome).toBe('timeout');
    expect(receiver.received).toHaveLength(1);
  });

  it('uses a 5-second timeout by default', async () => {
    const sandbox = await startTestSandbox();
    expect(sandbox.config.webhooks.timeoutMs).toBe(5_000);
  });

  it('disables an endpoint whose error rate reaches 50% over the window, until re-enabled', async () => {
    const receiver = await startWebhookReceiver();
    let calls = 0;
    receiver.respondWith = () => (++calls % 2 === 0 ? 500 : 200);
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2', id: 'flaky' }]),
      webhooks: { minDeliveriesInWindow: 4 },
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'pre_release'); // 3 deliveries: ok, error, ok
    await sandbox.webhooksIdle();
    expect(sandbox.webhookStates()[0]!.enabled).toBe(true);
    sandbox.advanceOrder(order.unique_reference, 'released'); // 4th: error -> 2 of 4 failed
    await sandbox.webhooksIdle();
    expect(sandbox.webhookStates()[0]!.enabled).toBe(false);
    sandbox.advanceOrder(order.unique_reference, 'completed');
    await sandbox.webhooksIdle();
    expect(receiver.received).toHaveLength(4);
    sandbox.setWebhookEnabled('flaky', true);
    const next = await createOrder(sandbox);
    sandbox.advanceOrder(next.unique_reference, 'deposit_seen');
    await receiver.waitFor(5);
  });

  it('counts only the outcomes inside the window towards the error rate', async () => {
    const receiver = await startWebhookReceiver();
    let calls = 0;
    receiver.respondWith = () => (++calls <= 4 ? 500 : 200);
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2', id: 'recovering' }]),
      webhooks: { minDeliveriesInWindow: 4, errorWindowMs: 60_000 },
    });
    const first = await createOrder(sandbox);
    sandbox.advanceOrder(first.unique_reference, 'pre_release'); // 3 failures: too few to judge
    await sandbox.webhooksIdle();
    sandbox.advanceClock(61_000); // ... and out of the window
    sandbox.advanceOrder(first.unique_reference, 'completed'); // a failure, then a success
    const second = await createOrder(sandbox);
    sandbox.advanceOrder(second.unique_reference, 'confirmed'); // two successes
    await sandbox.webhooksIdle();
    // 1 failure of 4 in the window (counting every delivery so far: 4 of 7, which would disable it).
    expect(receiver.received).toHaveLength(7);
    expect(sandbox.webhookStates()[0]!.enabled).toBe(true);
  });

  it('delivers only the configured categories (KYC events to KYC configurations)', async () => {
    const orders = await startWebhookReceiver();
    const kyc = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([
        { url: orders.url, payloadVersion: 'v2', categories: ['order_status'] },
        { url: kyc.url, payloadVersion: 'v2', categories: ['kyc_status'] },
      ]),
    });
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'deposit_seen');
    sandbox.emitKycStatus(order.unique_reference, 'APPROVED');
    await sandbox.webhooksIdle();
    expect(orders.received.map((w) => w.body.status)).toEqual(['UNCONFIRMED PAYMENT']);
    expect(kyc.received.map((w) => w.body.kyc_status)).toEqual(['APPROVED']);
  });

  it('injects duplicated, dropped, delayed and reordered deliveries and bad signatures', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2', secret: SECRET }]),
    });
    const order = await createOrder(sandbox);

    sandbox.injectFault({ target: 'webhook', kind: 'duplicate', times: 1 });
    sandbox.advanceOrder(order.unique_reference, 'deposit_seen');
    await sandbox.webhooksIdle();
    expect(receiver.received.map((w) => w.body.status)).toEqual([
      'UNCONFIRMED PAYMENT',
      'UNCONFIRMED PAYMENT',
    ]);
    expect(receiver.received[0]!.body.id).toBe(receiver.received[1]!.body.id);

    sandbox.injectFault({ target: 'webhook', kind: 'drop', times: 1 });
    sandbox.advanceOrder(order.unique_reference, 'confirmed');
    await sandbox.webhooksIdle();
    expect(receiver.received).toHaveLength(2);
    expect(sandbox.listWebhookDeliveries().at(-1)!.outcome).toBe('dropped');

    sandbox.injectFault({ target: 'webhook', kind: 'reorder', times: 1 });
    sandbox.advanceOrder(order.unique_reference, 'released');
    await sandbox.webhooksIdle();
    expect(receiver.received.slice(2).map((w) => w.body.status)).toEqual(['RELEASED', 'PRE-RELEASE']);

    sandbox.injectFault({ target: 'webhook', kind: 'bad_signature', times: 1 });
    sandbox.injectFault({ target: 'webhook', kind: 'delay', delayMs: 150, times: 1 });
    const before = Date.now();
    sandbox.advanceOrder(order.unique_reference, 'completed');
    await sandbox.webhooksIdle();
    const last = receiver.received.at(-1)!;
    expect(last.body.status).toBe('COMPLETED');
    expect(last.receivedAt - before).toBeGreaterThanOrEqual(140);
    expect(verify(last, SECRET)).toBe(false);
    expect(receiver.received.slice(0, -1).every((w) => verify(w, SECRET))).toBe(true);
  });
});
