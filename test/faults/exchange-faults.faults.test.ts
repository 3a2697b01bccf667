// A misbehaving exchange under a stream of orders (sandbox faults, drawn from the seeded PRNG): latency spikes,
// 5xx bursts, requests held past the client's timeout, 429 storms with and without Retry-After on every endpoint,
// and webhooks dropped, duplicated, reordered, delayed, forged (bad signature) and stale. Every order must still end
// once, as the exchange decides, and the one invariant checker must find nothing.
// Replay: FAULT_SEED=<seed> npm run test:faults -- test/faults/exchange-faults.faults.test.ts
import { afterAll, describe, it } from 'vitest';
import type { AcceptedOrder } from '../support/invariants.ts';
import { planOrders } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { cleanupStack, finishFaultRun, startFaultRun } from './harness.ts';
import { faultProfile } from './profile.ts';

const profile = faultProfile();
const cleanups = cleanupStack();
afterAll(cleanups.run);

describe('exchange faults', () => {
  it('latency spikes, 5xx bursts, timeouts, 429 storms and unreliable webhooks: every order ends once', async () => {
    const run = await startFaultRun({
      name: 'exchange-faults',
      defer: cleanups.defer,
      workers: 2,
      partitions: 4,
    });
    const { cluster, seed } = run;
    const faults = [
      { target: 'endpoint', endpoint: '*', kind: 'latency', latencyMs: 1_500, probability: 0.1 },
      { target: 'endpoint', endpoint: '*', kind: 'http_error', status: 503, probability: 0.06 },
      { target: 'endpoint', endpoint: '*', kind: 'http_error', status: 502, probability: 0.03 },
      {
        target: 'endpoint',
        endpoint: 'GET /orders/{unique_reference}/',
        kind: 'timeout',
        latencyMs: 12_000,
        probability: 0.03,
      },
      { target: 'endpoint', endpoint: '*', kind: 'throttle', retryAfterSeconds: 2, probability: 0.05 },
      { target: 'endpoint', endpoint: '*', kind: 'throttle', retryAfterSeconds: null, probability: 0.03 },
      { target: 'webhook', kind: 'drop', probability: 0.1 },
      { target: 'webhook', kind: 'duplicate', probability: 0.3 },
      { target: 'webhook', kind: 'reorder', probability: 0.3 },
      { target: 'webhook', kind: 'delay', delayMs: 3_000, probability: 0.2 },
      { target: 'webhook', kind: 'bad_signature', probability: 0.1 },
      { target: 'webhook', kind: 'stale_timestamp', probability: 0.1 },
    ] as const;
    for (const fault of faults) cluster.sandbox.injectFault(fault);

    const count = profile.name === 'full' ? 60 : 15;
    const planned = planOrders(count, { variant: 40 + (seed % 50), orderId: (i) => uniqueName(`xf${i}`) });
    const orders: AcceptedOrder[] = planned.map((p) => ({ orderId: p.orderId, create: p.command }));
    run.drawOutcomes(orders);
    for (const order of orders) await cluster.send(order.create);

    await finishFaultRun(run, orders, {
      test: `exchange-faults (${profile.name})`,
      endingTimeoutMs: 600_000,
      figures: () => ({
        faultsFired: cluster.sandbox
          .listFaults()
          .map((f) => `${f.spec.target === 'endpoint' ? f.spec.kind : `webhook ${f.spec.kind}`}: ${f.fired}`),
        webhookDeliveries: cluster.sandbox.listWebhookDeliveries().length,
      }),
    });
  });
});
