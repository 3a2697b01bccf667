// Webhooks in bulk and off the clock: live orders whose signing timestamps are skewed within the documented
// tolerance (about 5 minutes either way: accepted) and beyond it (refused, 401), then a storm - every status change
// of every live order delivered many times over, thousands of valid signed deliveries at once. The worker must
// answer the skewed deliveries specifically (2xx inside the tolerance, 401 beyond it), never answer the storm with
// a 5xx, and every order must still end once, as the exchange decides.
// Replay: FAULT_SEED=<seed> npm run test:faults -- test/faults/webhook-storm.faults.test.ts
import { afterAll, describe, expect, it } from 'vitest';
import type { AcceptedOrder } from '../support/invariants.ts';
import { planOrders } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import type { Cluster } from '../support/worker-cluster.ts';
import { cleanupStack, finishFaultRun, startFaultRun } from './harness.ts';
import { faultProfile } from './profile.ts';

const profile = faultProfile();
const cleanups = cleanupStack();
afterAll(cleanups.run);

/** The worker's tolerance (docs/exchange-api.md: "about 5 minutes"); skews are chosen well inside or outside it. */
const toleranceSeconds = 300;

/** How the worker answered the deliveries of these orders since `fromSeq`, by HTTP status (or outcome). */
function answers(cluster: Cluster, references: Set<string>, fromSeq: number): Record<string, number> {
  const tally: Record<string, number> = {};
  for (const d of cluster.sandbox.listWebhookDeliveries()) {
    if (d.seq <= fromSeq || !references.has(d.orderReference)) continue;
    const key = d.httpStatus === undefined ? d.outcome : String(d.httpStatus);
    tally[key] = (tally[key] ?? 0) + 1;
  }
  return tally;
}

const lastSeq = (cluster: Cluster) => cluster.sandbox.listWebhookDeliveries().at(-1)?.seq ?? 0;

describe('webhook storm and clock skew', () => {
  it('skewed timestamps are judged by the tolerance, a storm of valid deliveries is absorbed: every order ends once', async () => {
    const run = await startFaultRun({
      name: 'webhook-storm',
      defer: cleanups.defer,
      workers: 2,
      partitions: 4,
    });
    const { cluster, seed, outcomes } = run;
    // This test moves the exchange orders itself, phase by phase.
    await run.driver.stop();

    const count = profile.name === 'full' ? 120 : 24;
    const copies = profile.name === 'full' ? 10 : 5;
    const planned = planOrders(count, { variant: 10 + (seed % 50), orderId: (i) => uniqueName(`ws${i}`) });
    const orders: AcceptedOrder[] = planned.map((p) => ({ orderId: p.orderId, create: p.command }));
    run.drawOutcomes(orders);
    for (const order of orders) await cluster.send(order.create);
    const referenceOf = new Map<string, string>();
    await cluster.collector.waitFor(
      (events) => {
        for (const e of events)
          if (e.type === 'order.created' && e.order_id !== null)
            referenceOf.set(e.order_id, String(e['unique_reference']));
        return orders.every((o) => referenceOf.has(o.orderId));
      },
      `all ${count} orders created`,
      600_000,
    );

    // Clock skew: four groups of live orders, each moved one status on under one skew of its signing timestamps.
    const skews = [240, -240, 420, -420];
    const skewResults: Array<{ skewSeconds: number; answers: Record<string, number> }> = [];
    const problems: string[] = [];
    for (const [g, skewSeconds] of skews.entries()) {
      const group = orders.filter((_, i) => i % skews.length === g).map((o) => referenceOf.get(o.orderId)!);
      const from = lastSeq(cluster);
      cluster.sandbox.clearFaults();
      // The exchange disables an endpoint that refuses half its deliveries: the refused skews would switch it off.
      cluster.sandbox.setWebhookEnabled('worker', true);
      cluster.sandbox.injectFault({ target: 'webhook', kind: 'skew_timestamp', skewSeconds });
      for (const reference of group) cluster.sandbox.advanceOrder(reference, 'deposit_seen');
      await cluster.sandbox.webhooksIdle();
      const got = answers(cluster, new Set(group), from);
      skewResults.push({ skewSeconds, answers: got });
      const within = Math.abs(skewSeconds) < toleranceSeconds;
      const wrong = Object.entries(got).filter(([status]) =>
        within ? !/^2\d\d$/.test(status) : status !== '401',
      );
      if (wrong.length > 0 || Object.values(got).reduce((a, b) => a + b, 0) < group.length)
        problems.push(
          `skew ${skewSeconds} s (${within ? 'within' : 'beyond'} the tolerance): answers ${JSON.stringify(got)}`,
        );
    }
    cluster.sandbox.clearFaults();
    cluster.sandbox.setWebhookEnabled('worker', true);

    // The storm: every status change of every order from here on is delivered `copies` times, all orders at once.
    const stormFrom = lastSeq(cluster);
    cluster.sandbox.injectFault({ target: 'webhook', kind: 'duplicate', copies });
    const stormStarted = Date.now();
    for (const order of orders) {
      const reference = referenceOf.get(order.orderId)!;
      const outcome = outcomes.get(order.orderId) ?? 'completed';
      try {
        if (outcome === 'refunded') cluster.sandbox.advanceOrder(reference, 'confirmed');
        cluster.sandbox.advanceOrder(reference, outcome);
      } catch {
        /* already further along: the exchange decides */
      }
    }
    await cluster.sandbox.webhooksIdle();
    const stormSeconds = (Date.now() - stormStarted) / 1000;
    cluster.sandbox.clearFaults();
    const stormAnswers = answers(cluster, new Set(referenceOf.values()), stormFrom);
    const stormDeliveries = Object.values(stormAnswers).reduce((a, b) => a + b, 0);
    // A 5xx would be the worker failing. On a loaded machine some deliveries find no answer within the exchange's
    // 5 s, or meet the worker's guards (408 for a request body slower than 4 s, connections past its limit):
    // counted, not refused - the exchange does not retry, and the orders must end all the same (by polling).
    const failing = Object.entries(stormAnswers).filter(([status]) => /^5\d\d$/.test(status));
    if (failing.length > 0) problems.push(`storm answers ${JSON.stringify(stormAnswers)}`);

    await finishFaultRun(run, orders, {
      test: `webhook-storm (${profile.name})`,
      endingTimeoutMs: 600_000,
      figures: () => ({
        skews: skewResults,
        stormDeliveries,
        stormCopies: copies,
        stormSeconds,
        stormAnswers,
      }),
    });
    expect(problems.join('\n')).toBe('');
    expect(stormDeliveries).toBeGreaterThanOrEqual(orders.length * copies);
  });
});
