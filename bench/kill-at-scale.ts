// The worker's guarantees at scale, under a SIGKILL (issue 12: "re-checked at 10k orders with a SIGKILL in the
// middle"). N order.create commands (default 10,000; a third each DeFi, CeFi, CeFi fixed-rate) go to two workers
// sharing 6 partitions; once a third of the orders are created, one worker is SIGKILLed (no goodbye: its leases
// run out, its transaction is left open) and started again on the same port. Once every order is created, each is
// moved to COMPLETED at the exchange. Then the fault suite's invariant checker (test/support/invariants.ts) reads
// the whole run: the events topic, the state topic, the sandbox's exchange orders and every log line - one ending
// per order, gapless seq, one exchange order per order, no reference shared, state agreeing with events, no
// global throttle, no secret. Prints its figures and writes bench/results/kill-at-scale.json.
//
//   node bench/kill-at-scale.ts                       # 10,000 orders
//   BENCH_ORDERS=1000 node bench/kill-at-scale.ts     # a quick check
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventCollector } from '../test/support/kafka-helpers.ts';
import { checkedInvariants, checkInvariants, type InvariantName } from '../test/support/invariants.ts';
import { recordRun } from '../test/support/run-record.ts';
import { startWorker } from '../test/support/worker-process.ts';
import { batchProducer, benchOrders, benchServices, saveResult } from './lib/harness.ts';
import { startBenchSystem } from './worker-throughput.ts';

export interface KillAtScaleResult {
  orders: number;
  workers: number;
  /** order.created events seen when the SIGKILL was sent. */
  createdAtKill: number;
  /** SIGKILL to the restarted worker's /readyz, ms. */
  restartReadyMs: number;
  created: number;
  createdMs: number;
  completed: number;
  completedMs: number;
  exchangeOrders: number;
  events: number;
  checked: InvariantName[];
  violations: Record<string, number>;
  /** The first few violations, as the checker words them. */
  examples: string[];
  /** Orders without an order.created (or without an order.completed) at the end, with the events they have. */
  unfinished: string[];
  capped: string[];
}

export async function runKillAtScale(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  orders: number;
  capMs: number;
}): Promise<KillAtScaleResult> {
  // The sandbox in this process: the invariant checker reads its orders and throttle refusals through its handle.
  const system = await startBenchSystem({ ...opts, system: 'worker', workers: 2, exchange: 'in-process' });
  const { env } = system;
  const capped: string[] = [];
  try {
    const producer = await batchProducer(system.kafka, env.topics.commands);
    const collector = await EventCollector.start(system.kafka, env.topics.events);
    const count = (type: string): number => collector.events.filter((e) => e.type === type).length;
    const waitFor = async (type: string, target: number, capMs: number): Promise<number> => {
      const deadline = Date.now() + capMs;
      let seen = count(type);
      while (seen < target && Date.now() < deadline) {
        await sleep(250);
        seen = count(type);
      }
      return seen;
    };

    const planned = benchOrders(opts.orders, `kill-${randomBytes(3).toString('hex')}`);
    const t0 = Date.now();
    await producer.sendAll(planned.map((p) => p.command));

    // ---- SIGKILL one of the two workers a third of the way through, and start it again.
    await waitFor('order.created', Math.ceil(opts.orders / 3), opts.capMs);
    const createdAtKill = count('order.created');
    const victim = env.workers[0]!;
    const killedAt = Date.now();
    await victim.kill('SIGKILL');
    const restarted = await startWorker(`${victim.name}-restarted`, env.env, victim.port);
    env.workers.push(restarted);
    await restarted.ready(300_000);
    const restartReadyMs = Date.now() - killedAt;

    const created = await waitFor('order.created', opts.orders, opts.capMs);
    if (created < opts.orders) capped.push(`created: ${created} of ${opts.orders} within ${opts.capMs} ms`);
    const createdMs = Date.now() - t0;

    // ---- every order to COMPLETED at the exchange (paced, as in the throughput benchmark)
    const t1 = Date.now();
    const references = collector.events
      .filter((e) => e.type === 'order.created')
      .map((e) => String((e as unknown as Record<string, unknown>)['unique_reference']));
    for (let i = 0; i < references.length; i += 50) {
      for (const reference of references.slice(i, i + 50)) env.sandbox.advanceOrder(reference, 'completed');
      await sleep(100);
    }
    const completed = await waitFor('order.completed', opts.orders, opts.capMs);
    if (completed < opts.orders)
      capped.push(`completed: ${completed} of ${opts.orders} within ${opts.capMs} ms`);
    const completedMs = Date.now() - t1;
    // Late duplicates or stray events would come now: give them a moment before reading the run.
    await sleep(3_000);
    await producer.close();

    const history = await recordRun({
      kafka: system.kafka,
      stateTopic: `${env.topics.commands}.state`,
      sandbox: env.sandbox,
      workers: env.workers,
      orders: planned.map((p) => ({ orderId: p.orderId, create: p.command })),
      events: collector.events,
    });
    await collector.stop();
    const eventsOf = new Map<string, string[]>();
    for (const e of collector.events) {
      const id = String(e.order_id);
      eventsOf.set(id, [...(eventsOf.get(id) ?? []), `${e.seq}:${e.type}`]);
    }
    const unfinished = planned
      .map((p) => p.orderId)
      .filter((id) => !(eventsOf.get(id) ?? []).some((t) => t.endsWith('order.completed')))
      .slice(0, 20)
      .map((id) => `${id} [${(eventsOf.get(id) ?? []).join(', ')}]`);
    const found = checkInvariants(history);
    const violations: Record<string, number> = {};
    for (const v of found) violations[v.invariant] = (violations[v.invariant] ?? 0) + 1;
    return {
      orders: opts.orders,
      workers: 2,
      createdAtKill,
      restartReadyMs,
      created,
      createdMs,
      completed,
      completedMs,
      exchangeOrders: history.exchangeOrders.length,
      events: history.events.length,
      checked: checkedInvariants(history),
      violations,
      examples: found.slice(0, 10).map((v) => `${v.invariant} ${v.orderId ?? ''}: ${v.detail}`),
      unfinished,
      capped,
    };
  } finally {
    await system.stop();
  }
}

export function printKillAtScale(r: KillAtScaleResult): void {
  const total = Object.values(r.violations).reduce((a, b) => a + b, 0);
  console.log(`  ${r.orders} orders on ${r.workers} workers, one SIGKILLed at ${r.createdAtKill} created`);
  console.log(`    restarted replica ready ${r.restartReadyMs} ms after the SIGKILL`);
  console.log(
    `    created ${r.created} in ${r.createdMs} ms; completed ${r.completed} in ${r.completedMs} ms`,
  );
  console.log(`    exchange orders ${r.exchangeOrders} for ${r.orders} orders; ${r.events} events`);
  console.log(
    `    invariants checked: ${r.checked.join(', ')}; violations: ${total}${total ? ` ${JSON.stringify(r.violations)}` : ''}`,
  );
  for (const example of r.examples) console.log(`      ${example}`);
  if (r.capped.length) console.log(`    CAPPED: ${r.capped.join('; ')}`);
  for (const order of r.unfinished) console.log(`      not completed: ${order}`);
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  try {
    const result = await runKillAtScale({
      kafkaBrokers: services.kafkaBrokers,
      redisUrl: services.redisUrl,
      orders: Number(process.env['BENCH_ORDERS'] ?? 10_000),
      capMs: Number(process.env['BENCH_CAP_MS'] ?? 600_000),
    });
    console.log('kill at scale (SIGKILL of one of two workers a third of the way through)');
    printKillAtScale(result);
    console.log(`  wrote ${await saveResult('kill-at-scale', result)}`);
    process.exitCode = Object.keys(result.violations).length || result.capped.length ? 1 : 0;
  } finally {
    await services.stop();
  }
}
