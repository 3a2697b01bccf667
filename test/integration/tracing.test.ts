// Traces that follow an order end to end, exported by a real worker process over OTLP/HTTP (JSON) to a stand-in
// collector: a command continues its caller's trace, the exchange calls and the Kafka transaction sit under it
// and the published events carry it on; a webhook, its hint and the GET it triggers form one trace; a poll is a
// trace of its own linked to the command that created the order. Nothing secret is exported or logged.
import { createHmac, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoKeys, demoReferral } from '../../sandbox/index.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import {
  isUnder,
  spanKind,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../support/otlp-receiver.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  cluster = await startCluster({
    workers: 1,
    partitions: 2,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_SERVICE_NAME: 'eow-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=it',
      LOG_LEVEL: 'debug',
      // The webhook test below makes the order "informed by webhooks"; keep its routine poll at 30 s for the poll test.
      WEBHOOK_POLL_INTERVAL_MS: '30000',
      // The order is CeFi: the listing would confirm it in place of its routine poll, whose trace is tested here.
      LIST_RECONCILE_INTERVAL_MS: '0',
    },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await receiver?.close();
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

async function waitForSpan(
  what: string,
  predicate: (span: ReceivedSpan) => boolean,
  timeoutMs = 30_000,
): Promise<ReceivedSpan> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = receiver.spans.find(predicate);
    if (found) return found;
    if (Date.now() > deadline) {
      const names = [...new Set(receiver.spans.map((s) => s.name))].join(', ');
      throw new Error(`no span ${what} after ${timeoutMs} ms; span names seen: ${names}`);
    }
    await sleep(200);
  }
}

function sign(body: string): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', webhookSecret).update(`${timestamp}.${body}`).digest('hex');
  return {
    'content-type': 'application/json',
    'x-webhook-timestamp': String(timestamp),
    'x-webhook-signature': `sha256=${signature}`,
  };
}

describe('traces of one order', () => {
  const orderId = uniqueName('traced');
  const caller = { traceId: hex(16), spanId: hex(8) };
  let reference = '';
  let commandSpan: ReceivedSpan;

  it('continues the caller trace: command span, exchange calls, transaction and the events it publishes', async () => {
    await cluster.send(orderCreateCommand('cefi', '1.65', orderId), {
      headers: { traceparent: `00-${caller.traceId}-${caller.spanId}-01`, tracestate: 'caller=it' },
    });
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created');
    reference = String(created['unique_reference']);

    commandSpan = await waitForSpan(
      'process <commands> of the caller',
      (s) => s.traceId === caller.traceId && s.name === `process ${cluster.topics.commands}`,
    );
    expect(commandSpan.parentSpanId).toBe(caller.spanId);
    expect(commandSpan.kind).toBe(spanKind.consumer);
    expect(commandSpan.service).toBe('eow-under-test');
    expect(commandSpan.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.operation.type': 'process',
      'messaging.destination.name': cluster.topics.commands,
      'messaging.consumer.group.name': cluster.env['CONSUMER_GROUP'],
      'messaging.kafka.message.key': orderId,
      'order.id': orderId,
      'command.type': 'order.create',
    });
    expect(commandSpan.attributes['messaging.destination.partition.id']).toMatch(/^[01]$/);
    expect(commandSpan.attributes['messaging.kafka.offset']).toBeTypeOf('number');

    const post = await waitForSpan(
      'POST /orders/ in the caller trace',
      (s) => s.traceId === caller.traceId && s.name === 'POST /orders/',
    );
    expect(post.kind).toBe(spanKind.client);
    expect(isUnder(receiver.spans, post, commandSpan)).toBe(true);
    expect(post.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.full': `${cluster.sandbox.url}/orders/`,
      'server.address': '127.0.0.1',
      'http.response.status_code': 201,
    });
    expect(post.attributes['server.port']).toBe(Number(new URL(cluster.sandbox.url).port));
    const operation = receiver.spans.find((s) => s.spanId === post.parentSpanId);
    expect(operation?.name).toBe('exchange createOrder');
    expect(operation?.attributes['exchange.unique_reference']).toBe(reference);
    const budgetWait = receiver.spans.find(
      (s) => s.name === 'exchange budget wait' && s.parentSpanId === operation?.spanId,
    );
    expect(budgetWait, 'the budget wait is inside the exchange call').toBeDefined();

    const redisUnderCommand = receiver.spans.filter(
      (s) => s.attributes['db.system.name'] === 'redis' && isUnder(receiver.spans, s, commandSpan),
    );
    expect(redisUnderCommand.length, 'the lease and budget Redis calls of the command').toBeGreaterThan(0);
    expect(redisUnderCommand.every((s) => s.attributes['db.query.text'] === s.name)).toBe(true);

    const send = await waitForSpan(
      'send <events> in the caller trace',
      (s) => s.traceId === caller.traceId && s.name === `send ${cluster.topics.events}`,
    );
    expect(send.kind).toBe(spanKind.producer);
    expect(isUnder(receiver.spans, send, commandSpan)).toBe(true);
    expect(send.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.operation.type': 'send',
    });

    expect(created.headers['traceparent']).toMatch(new RegExp(`^00-${caller.traceId}-[0-9a-f]{16}-01$`));
    expect(created.headers['tracestate']).toBe('caller=it');
    // A transition is an event of the span that caused it, or a span of its own once that span has ended (the
    // POST's answer arrives after the command's transaction committed).
    const transitions = receiver.spans
      .filter((s) => s.traceId === caller.traceId)
      .flatMap((s) => [
        ...s.events.filter((e) => e.name === 'order.transition').map((e) => e.attributes),
        ...(s.name === 'order transition' ? [s.attributes] : []),
      ]);
    expect(transitions.some((t) => t['order.event.type'] === 'order.created')).toBe(true);
    expect(transitions.every((t) => t['order.id'] === orderId && typeof t['order.state'] === 'string')).toBe(
      true,
    );
  });

  it('makes one trace of a webhook delivery and the hint it hands to the order, linked from the GET that confirms it', async () => {
    const hook = { traceId: hex(16), spanId: hex(8) };
    const order = { ...cluster.sandbox.orders.get(reference)?.order, status: 'PAID', id: 'delivery-t1' };
    const body = JSON.stringify(order);
    const res = await fetch(`http://127.0.0.1:${cluster.webhookPort}/webhooks/exchange`, {
      method: 'POST',
      body,
      headers: { ...sign(body), traceparent: `00-${hook.traceId}-${hook.spanId}-01` },
    });
    expect(res.status).toBe(200);

    const server = await waitForSpan(
      'the webhook server span',
      (s) => s.traceId === hook.traceId && s.name === 'POST /webhooks/exchange',
    );
    expect(server.kind).toBe(spanKind.server);
    expect(server.parentSpanId).toBe(hook.spanId);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/webhooks/exchange',
      'http.response.status_code': 200,
    });
    // The order is driven by the replica that received the webhook: the hint goes to its actor in-process.
    const hint = await waitForSpan(
      'the hint span',
      (s) => s.traceId === hook.traceId && s.name === 'order webhook hint',
    );
    expect(hint.attributes['order.id']).toBeDefined();
    expect(isUnder(receiver.spans, hint, server)).toBe(true);
    // The webhook's trace leads to the order's first trace, as the order's polls do.
    expect(hint.links).toContainEqual({ traceId: caller.traceId, spanId: commandSpan.spanId });
    // PAID is an open status: its GET waits WEBHOOK_COALESCE_MS for the hints after it, then goes out under the
    // machine timer's own trace, which links the hint.
    const timer = await waitForSpan(
      'the timer that sends the GET the hint waited for',
      (s) => s.name === 'order timer' && s.links.some((l) => l.spanId === hint.spanId),
    );
    expect(timer.links).toContainEqual({ traceId: hook.traceId, spanId: hint.spanId });
    const get = await waitForSpan(
      'the GET the hint waited for',
      (s) => s.traceId === timer.traceId && s.name === 'GET /orders/{unique_reference}/',
    );
    expect(isUnder(receiver.spans, get, timer)).toBe(true);
    expect(get.attributes['url.full']).toBe(`${cluster.sandbox.url}/orders/${reference}/`);
  });

  it('writes the webhook trace into the KYC event it publishes', async () => {
    cluster.sandbox.emitKycStatus(reference, 'approved');
    const events = await cluster.collector.waitFor(
      (all) =>
        all.some((e) => e.type === 'exchange.kyc_status_changed' && e['unique_reference'] === reference),
      'the KYC event',
      30_000,
    );
    const kyc = events.find(
      (e) => e.type === 'exchange.kyc_status_changed' && e['unique_reference'] === reference,
    );
    const traceId = /^00-([0-9a-f]{32})-/.exec(kyc?.headers['traceparent'] ?? '')?.[1];
    expect(traceId).toBeDefined();
    const server = await waitForSpan(
      'the KYC webhook server span',
      (s) => s.traceId === traceId && s.name === 'POST /webhooks/exchange',
    );
    const send = await waitForSpan(
      'the KYC send span',
      (s) => s.traceId === traceId && s.name === `send ${cluster.topics.events}`,
    );
    expect(isUnder(receiver.spans, send, server)).toBe(true);
  });

  it('starts a short trace of its own for each poll, linked to the command that created the order', async () => {
    // The machine polls POLL_INTERVAL_MS (30 s, the minimum; WEBHOOK_POLL_INTERVAL_MS is set to it here) after its
    // last confirmation.
    const poll = await waitForSpan(
      'a GET under an order timer linked to the command',
      (s) => {
        if (s.name !== 'GET /orders/{unique_reference}/' || s.traceId === caller.traceId) return false;
        const root = receiver.spans.find((r) => r.traceId === s.traceId && r.parentSpanId === undefined);
        return Boolean(root?.links.some((l) => l.spanId === commandSpan.spanId));
      },
      70_000,
    );
    const root = receiver.spans.find((r) => r.traceId === poll.traceId && r.parentSpanId === undefined);
    expect(root?.name).toBe('order timer');
    expect(root?.links).toContainEqual({ traceId: caller.traceId, spanId: commandSpan.spanId });
    expect(root?.attributes).toMatchObject({ 'order.id': orderId, 'exchange.unique_reference': reference });
  });

  it('exports and logs no key, token or webhook secret, and logs carry the trace and the order', async () => {
    const worker = cluster.workers[0]!;
    const metrics = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
    const everything = [receiver.raw.join('\n'), worker.log(), metrics].join('\n');
    for (const secret of [
      demoKeys.defi,
      demoKeys.cefi,
      demoKeys.cefiFixed,
      demoReferral.token,
      webhookSecret,
    ])
      expect(everything).not.toContain(secret);

    const lines = worker
      .log()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.every((l) => typeof l['level'] === 'string' && l['worker_id'] === worker.name)).toBe(true);
    expect(
      lines.some((l) => l['trace_id'] === caller.traceId && l['order_id'] === orderId && l['span_id']),
      'a log line written while the command was handled names its trace and order',
    ).toBe(true);
  });
});
