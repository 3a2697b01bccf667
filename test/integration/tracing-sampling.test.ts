// With a ratio sampler the decision follows the order: a real worker under parentbased_traceidratio at ratio 0 keeps
// the traces of an order whose create came in a sampled trace - its create, the machine timer's GET after a webhook
// and the webhook hint that completes it - and nothing of an order whose create was not sampled, although the same
// work happens for both and the ratio alone would keep neither's webhook or timer traces.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderCreateCommand } from '../support/order-specs.ts';
import { isUnder, startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

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
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
      LIST_RECONCILE_INTERVAL_MS: '0',
      WEBHOOK_COALESCE_MS: '500',
    },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await receiver?.close();
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

describe('sampling that follows the order', () => {
  it("keeps every trace of a sampled order, webhooks and timers included, and none of an unsampled one's", async () => {
    const kept = { orderId: uniqueName('kept'), traceId: hex(16) };
    const dropped = { orderId: uniqueName('dropped'), traceId: hex(16) };
    for (const [order, flags] of [
      [kept, '01'],
      [dropped, '00'],
    ] as const)
      await cluster.send(orderCreateCommand('cefi', '1.21', order.orderId), {
        headers: { traceparent: `00-${order.traceId}-${hex(8)}-${flags}` },
      });
    const references = new Map<string, string>();
    for (const order of [kept, dropped]) {
      const created = await cluster.collector.waitForOrderEvent(order.orderId, 'order.created');
      references.set(order.orderId, String(created['unique_reference']));
    }
    // The sandbox's webhooks: PAID (an open status: its GET waits WEBHOOK_COALESCE_MS, then goes out under a machine
    // timer's trace of its own), then COMPLETED (its GET goes out at once, in the webhook's trace).
    for (const to of ['PAID', 'completed'] as const) {
      for (const order of [kept, dropped]) cluster.sandbox.advanceOrder(references.get(order.orderId)!, to);
      for (const order of [kept, dropped])
        await cluster.collector.waitForOrderEvent(
          order.orderId,
          to === 'PAID' ? 'order.status_changed' : 'order.completed',
          60_000,
        );
    }
    const ofOrder = (orderId: string) => receiver.spans.filter((s) => s.attributes['order.id'] === orderId);
    const deadline = Date.now() + 20_000;
    const has = (name: string) => ofOrder(kept.orderId).some((s) => s.name === name);
    // The completion's spans are exported in a later batch than the PAID ones (OTEL_BSP_SCHEDULE_DELAY): wait for a
    // hint trace holding the write too, or the check below reads the receiver before that batch came in.
    const writesInTrace = (span: { traceId: string }) =>
      receiver.spans.some((s) => s.traceId === span.traceId && s.name === `send ${cluster.topics.events}`);
    const completes = () =>
      ofOrder(kept.orderId).some((hint) => hint.name === 'order webhook hint' && writesInTrace(hint));
    while (!(has('order timer') && completes()) && Date.now() < deadline) await sleep(200);

    const command = ofOrder(kept.orderId).find(
      (s) => s.traceId === kept.traceId && s.name.startsWith('process '),
    );
    expect(command, 'the create of the sampled order').toBeDefined();
    const timer = ofOrder(kept.orderId).find((s) => s.name === 'order timer');
    expect(timer, 'the timer trace of the sampled order (ratio 0 alone would drop it)').toBeDefined();
    expect(timer!.links).toContainEqual({ traceId: kept.traceId, spanId: command!.spanId });
    const timerGet = receiver.spans.find(
      (s) => s.traceId === timer!.traceId && s.name === 'GET /orders/{unique_reference}/',
    );
    expect(timerGet && isUnder(receiver.spans, timerGet, timer!)).toBe(true);
    // The sandbox sends a webhook for every status on the way; the last one's hint completes the order at once.
    const hints = ofOrder(kept.orderId).filter((s) => s.name === 'order webhook hint');
    expect(
      hints.length,
      "the webhook hints of the sampled order (their webhooks' own traces were not drawn)",
    ).toBeGreaterThan(0);
    for (const hint of hints)
      expect(hint.links).toContainEqual({ traceId: kept.traceId, spanId: command!.spanId });
    const completing = hints.find(writesInTrace);
    expect(completing, 'a hint trace with the GET and the write of the completion').toBeDefined();
    expect(
      receiver.spans.some(
        (s) => s.traceId === completing!.traceId && s.name === 'GET /orders/{unique_reference}/',
      ),
    ).toBe(true);
    // The webhooks' HTTP spans themselves were drawn at ratio 0.
    expect(receiver.spans.filter((s) => s.name === 'POST /webhooks/exchange')).toEqual([]);

    // Give the exporter time for anything of the other order, then: nothing.
    await sleep(1_500);
    expect(ofOrder(dropped.orderId).map((s) => s.name)).toEqual([]);
    expect(receiver.spans.filter((s) => s.traceId === dropped.traceId)).toEqual([]);
  });
});
