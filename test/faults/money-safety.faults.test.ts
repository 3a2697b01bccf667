// Money safety under creation faults (the money-safety issue): orders across the three modes, some of them
// siblings (same mode, pair, address and amount), against an exchange that loses create responses, answers 5xx or
// 408 after creating, times out before or after creating, and says "expired" when a rate_id is repeated; a replica
// is SIGKILLed and another joins (a rebalance) in the middle. Then the one invariant checker: at most one exchange
// order per order_id, no unique_reference shared, every order ending once (terminal or parked), seq gapless.
// Replay: FAULT_SEED=<seed printed on failure> npm run test:faults -- test/faults/money-safety.faults.test.ts
import { afterAll, describe, it } from 'vitest';
import type { AcceptedOrder } from '../support/invariants.ts';
import { planOrders } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { cleanupStack, endingOf, finishFaultRun, startFaultRun } from './harness.ts';
import { faultProfile } from './profile.ts';

const profile = faultProfile();
const cleanups = cleanupStack();
afterAll(cleanups.run);

describe('money safety under creation faults', () => {
  it(`${profile.moneySafetyOrders} orders, creation faults at random, a SIGKILL and a rebalance: one exchange order each`, async () => {
    const run = await startFaultRun({
      name: 'money-safety',
      defer: cleanups.defer,
      workers: 3,
      partitions: 6,
      actionableDelayMs: 1_000,
      // The worker's documented floor (README, CREATE_SETTLE_MS): the create timeout (30 s) plus LEASE_TTL_MS
      // (6 s here). The suite's faults deliver creates up to 32 s late; below the floor a successor's lookup can
      // run before a killed replica's create lands (seed 1909660767 with 8 s: two CeFi orders owned two each).
      env: { CREATE_SETTLE_MS: '40000' },
    });
    const { cluster, seed, random } = run;

    // One in eight orders has a sibling: the same mode, pair, withdraw address and amount under another order_id.
    const total = profile.moneySafetyOrders;
    const siblings = Math.floor(total / 9);
    const planned = planOrders(total - siblings, {
      variant: seed % 97,
      orderId: (i) => uniqueName(`ms${i}`),
    });
    const orders: AcceptedOrder[] = planned.map((p) => ({ orderId: p.orderId, create: p.command }));
    for (let i = 0; i < siblings; i++) {
      const original = planned[(i * 8) % planned.length]!;
      const orderId = uniqueName(`ms-sib${i}`);
      orders.push({
        orderId,
        create: { ...original.command, order_id: orderId, command_id: `${orderId}-create` },
      });
    }
    run.drawOutcomes(orders);

    const create = 'POST /orders/';
    const faults = [
      { kind: 'lost_response', probability: 0.06 },
      { kind: 'create_then_error', probability: 0.04, status: 500 },
      { kind: 'create_then_error', probability: 0.03, status: 408 },
      { kind: 'http_error', probability: 0.04, status: 503 },
      // Held past the client's 30 s timeout, then dropped: not created.
      { kind: 'timeout', probability: 0.02, latencyMs: 33_000 },
      // Delayed past the client's timeout, then created: the order appears after the worker gave up.
      { kind: 'latency', probability: 0.02, latencyMs: 32_000 },
      { kind: 'expired_on_repeat', probability: 1 },
    ] as const;
    for (const fault of faults)
      cluster.sandbox.injectFault({ target: 'endpoint', endpoint: create, ...fault });

    // Interleave the orders so siblings are in flight together.
    const shuffled = [...orders].sort(() => random() - 0.5);
    for (const order of shuffled) await cluster.send(order.create);

    const createdCount = () => cluster.collector.events.filter((e) => e.type === 'order.created').length;
    await cluster.collector.waitFor(
      () => createdCount() >= total / 3,
      'a third of the orders created',
      600_000,
    );
    const victim = cluster.workers[1 + Math.floor(random() * 2)]!;
    console.log(`[money-safety] SIGKILL ${victim.name} with ${createdCount()} orders created`);
    await victim.kill('SIGKILL');
    await cluster.collector.waitFor(() => createdCount() >= (2 * total) / 3, 'two thirds created', 600_000);
    console.log(`[money-safety] a fourth replica joins (rebalance) with ${createdCount()} orders created`);
    await (await cluster.startAnotherWorker(uniqueName('ms-late'))).ready();

    await finishFaultRun(run, orders, {
      test: 'money-safety',
      endingTimeoutMs: profile.name === 'full' ? 900_000 : 420_000,
      figures: () => {
        const endings = orders.map((o) => endingOf(cluster.collector.of(o.orderId))?.type ?? 'none');
        return {
          siblings,
          faultsFired: cluster.sandbox
            .listFaults()
            .map(
              (f) =>
                `${f.spec.kind}${'status' in f.spec && f.spec.status ? `/${f.spec.status}` : ''}: ${f.fired}`,
            ),
          endings: Object.fromEntries(
            [...new Set(endings)].map((t) => [t, endings.filter((e) => e === t).length]),
          ),
        };
      },
    });
  });
});
