// `npm run bench`: every benchmark in turn, each printing its figures and writing JSON under bench/results/, then
// the figures beside the targets of issue 12 (bench/results/summary.json). BENCH_SCALE=small for a quick check
// (about 4 minutes), full by default (bounded to under 20 minutes on 2 cores: a phase that overruns its cap stops
// and reports how far it got). BENCH_ONLY=throughput|restore|webhooks|cefi-listing|request-budget runs one part;
// BENCH_ONLY=parked-lookups runs the one part a whole run leaves out (it would not fit the 20 minutes).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import {
  benchDir,
  benchServices,
  machine,
  printVerdicts,
  profile,
  reported,
  round,
  saveResult,
  summaryName,
  verdict,
  type Verdict,
} from './lib/harness.ts';
import {
  naivePollerCalls,
  printEconomy,
  printLatency,
  runEconomy,
  runLatency,
  type EconomyResult,
  type LatencyResult,
} from './webhooks.ts';
import {
  describeCeiling,
  describeCores,
  printThroughput,
  runThroughput,
  type ThroughputResult,
} from './worker-throughput.ts';
import { runListingLadder } from './cefi-listing.ts';
import { runParkedLookups } from './parked-lookups.ts';
import { printRestore, runRestore, type RestoreResult } from './restore-at-scale.ts';
import { restoreVerdicts } from './lib/restore-figures.ts';

const only = process.env['BENCH_ONLY'];
const wanted = (name: string): boolean => !only || only === name;
const plan = profile();
const startedAt = new Date();
const services = await benchServices();
const common = { kafkaBrokers: services.kafkaBrokers, redisUrl: services.redisUrl };
const summary: Record<string, unknown> = {
  profile: plan.name,
  startedAt: startedAt.toISOString(),
  machine: machine(),
};
const verdicts: Verdict[] = [];
console.log(`bench profile ${plan.name}; machine ${JSON.stringify(summary['machine'])}`);

// ---- throughput, memory, restore: the floor and the worker side by side, per size --------------------------------
const throughput: { floor: ThroughputResult; workers: ThroughputResult[] }[] = [];
if (wanted('throughput')) {
  for (const orders of plan.sizes) {
    const capMs = plan.phaseCapMs(orders);
    console.log(
      `\n=== throughput: ${orders} orders (1/3 DeFi, 1/3 CeFi, 1/3 CeFi fixed), 6 partitions, phase cap ${capMs / 1000} s`,
    );
    // The floor's completion (one GET per webhook, unbounded) is measured over at most a minute: its rate is all
    // the ratio needs.
    const floor = await runThroughput({
      ...common,
      system: 'floor',
      workers: 1,
      orders,
      capMs,
      completeCapMs: Math.min(capMs, 60_000),
    });
    printThroughput(floor);
    const workers: ThroughputResult[] = [];
    for (const count of plan.workerCounts) {
      const r = await runThroughput({
        ...common,
        system: 'worker',
        workers: count,
        orders,
        capMs,
        restore: count === 1,
      });
      printThroughput(r, floor);
      workers.push(r);
    }
    throughput.push({ floor, workers });
    await saveResult(`throughput-${orders}`, { floor, workers });
  }
  const largest = throughput.at(-1);
  const one = largest?.workers.find((w) => w.workers === 1);
  if (largest && one) {
    const at = `at ${one.orders} orders${one.capped.length ? ', capped' : ''}`;
    verdicts.push(
      verdict(
        'created/s, 1 worker',
        one.createdPerSecond,
        'orders/s',
        { op: '>=', bound: 300 },
        `${at}; target is at 10k`,
      ),
      verdict(
        'created/s vs floor',
        one.createdPerSecond / largest.floor.createdPerSecond,
        'x floor',
        { op: '>=', bound: 0.5 },
        `floor ${largest.floor.createdPerSecond}/s; cores busy creating: floor's ${describeCores(largest.floor.createCores, 1)}; worker's ${describeCores(one.createCores, 1)}; ${describeCeiling(one, largest.floor)}`,
      ),
      // Measured 2 s after a creation burst, not at rest: what the burst left behind counts. The target (< 5 KB per
      // open order at 100k) is judged on the restore's orders at rest, in the rows below.
      reported(
        'RSS per open order, after the burst',
        one.openOrders?.rssKiBPerOrder ?? null,
        'KiB',
        `${one.openOrders?.count} open, 1 replica, 2 s after the last created; the target is judged at 100k at rest below`,
      ),
    );
    const three = largest.workers.find((w) => w.workers === 3);
    if (three?.openOrders)
      verdicts.push(
        reported(
          'RSS per open order, 3 replicas, after the burst',
          three.openOrders.rssKiBPerOrder,
          'KiB',
          `${three.openOrders.count} open, summed over replicas, 2 s after the last created; judged at 100k at rest below`,
        ),
      );
  }
}

// ---- restore of one partition holding N open orders, and their memory at rest in the restored replica ----------
// Then each N again on 6 partitions, restored by 3 fresh replicas together: what each one holds (judged at the
// largest N; the smaller ones are reported).
if (wanted('restore')) {
  console.log(
    `\n=== restore: ${plan.restoreOrders.join(', ')} open orders on one partition, one fresh replica; then on 6 partitions, 3 replicas`,
  );
  const restores: RestoreResult[] = [];
  for (const orders of plan.restoreOrders) {
    const r = await runRestore({ ...common, orders });
    printRestore(r);
    restores.push(r);
  }
  const shared: RestoreResult[] = [];
  for (const orders of plan.restoreOrders) {
    const r = await runRestore({ ...common, orders, replicas: 3 });
    printRestore(r);
    shared.push(r);
  }
  restores.push(...shared);
  await saveResult('restore-at-scale', restores);
  summary['restore'] = restores;
  verdicts.push(...restoreVerdicts(restores));
}

// ---- webhook latency and API economy -------------------------------------------------------------------------
if (wanted('webhooks')) {
  console.log(
    `\n=== webhooks: latency (${plan.latencyOrders} orders) and API economy (${plan.economyOrders} DeFi orders)`,
  );
  const latency: LatencyResult = await runLatency({ ...common, orders: plan.latencyOrders });
  printLatency(latency);
  const on: EconomyResult = await runEconomy({ ...common, orders: plan.economyOrders, webhooks: true });
  printEconomy(on);
  const off: EconomyResult = await runEconomy({ ...common, orders: plan.economyOrders, webhooks: false });
  printEconomy(off);
  // A naive poller makes the same creation calls (quote, create, deposit) and one GET every 30 s until terminal.
  const naive = {
    atMeasuredLifetime: naivePollerCalls(3, on.lifetimeMs),
    lifetimeMs: on.lifetimeMs,
    atTwentyMinutes: naivePollerCalls(3, 20 * 60_000),
  };
  console.log(
    `  naive 30 s poller: ${naive.atMeasuredLifetime} calls per order at the same lifetime (${naive.lifetimeMs} ms); ${naive.atTwentyMinutes} for an order that lives 20 min`,
  );
  await saveResult('webhooks', { latency, economy: { on, off, naive } });
  verdicts.push(
    verdict(
      'webhook -> event worker overhead p99',
      latency.fromStatusWebhook.overheadMs.p99,
      'ms',
      { op: '<', bound: 20 },
      `from the webhook announcing the status, round trip apart; p50 ${latency.fromStatusWebhook.overheadMs.p50} ms; from the first webhook of the burst p50 ${latency.overheadMs.p50} / p99 ${latency.overheadMs.p99} ms; Kafka's own transaction floor in this run: visible p50 ${latency.kafkaFloorMs.visible.p50} / p99 ${latency.kafkaFloorMs.visible.p99} ms`,
    ),
    verdict(
      'exchange calls per DeFi order, webhooks on',
      on.callsPerOrder,
      'calls',
      { op: '<=', bound: 5 },
      `lifetime ${round(on.lifetimeMs / 1000, 1)} s; webhooks off: ${off.callsPerOrder}; naive poller: ${naive.atMeasuredLifetime}`,
    ),
  );
  summary['webhooks'] = { latency, economy: { on, off, naive } };
}

// ---- API economy of the CeFi listing: open CeFi orders one key keeps confirmed within 60 s, no 429 -------------
if (wanted('cefi-listing')) {
  console.log(`\n=== cefi-listing: ladder ${plan.listingOrders.join(', ')} open CeFi orders, one key`);
  const ladder = await runListingLadder({ ...common, ladder: plan.listingOrders });
  summary['cefiListing'] = ladder;
  const largest = ladder.rungs.at(-1);
  verdicts.push(
    verdict(
      'open CeFi orders confirmed per 60 s, one key',
      ladder.largestKept ?? 0,
      'orders',
      { op: '>=', bound: 10_000 },
      largest
        ? `largest rung kept without a 429; at ${largest.orders}: ${largest.calls.perMinute} calls/min, ${largest.throttled.sinceRestore} × 429, min confirmed ${largest.confirmedWithin60s.min}`
        : 'no rung ran',
    ),
  );
}

// ---- the shared request budget (its own process pair; a 20 s window in the small profile) ----------------------
if (wanted('request-budget')) {
  console.log('\n=== request-budget');
  const args =
    plan.name === 'small' ? ['--limit', '600', '--duration-ms', '20000', '--window-ms', '20000'] : [];
  const result = spawnSync(process.execPath, [join(benchDir, 'request-budget.ts'), ...args], {
    stdio: 'inherit',
    env: { ...process.env, REDIS_URL: services.redisUrl },
  });
  if (result.status !== 0) process.exitCode = 1;
}

// ---- parked CeFi creates against one key's budget: the other orders' share with 50 lookups that cannot finish ----
// Selected only (BENCH_ONLY=parked-lookups): its two phases take about 8 minutes here, and a whole full run already
// uses its 20 minutes.
if (only === 'parked-lookups') {
  const windowMs = plan.name === 'small' ? 60_000 : 90_000;
  console.log(
    `\n=== parked-lookups: 50 parked CeFi orders whose lookups cannot finish, one key at 2500/min, window ${windowMs / 1000} s (baseline, then parked)`,
  );
  const parked = await runParkedLookups({ ...common, windowMs });
  summary['parkedLookups'] = parked;
  verdicts.push(...parked.verdicts);
}

// ---- 50k orders on 1 worker, then on 3: the "no slowdown from 1k to 50k" figures ---------------------------
// One worker creates 50k in about 1.5 to 4 minutes here, three in about 2 to 4: each phase runs only when its
// creation cap still ends the run within its 20 minutes, and moves its orders to COMPLETED only when that too fits
// (at least a minute left; one worker's completion takes about 2 minutes, three workers' about 3), else the summary
// says what was skipped. One worker first: its figures are the target's. Each is judged against the 1k run with the
// same number of workers.
const largeOrders = Number(process.env['BENCH_LARGE_ORDERS'] ?? (plan.name === 'full' ? 50_000 : 0));
const runMs = 20 * 60_000;
/** Kept free at the end of the run: the last phase's teardown, the summary, the services' shutdown. */
const runMarginMs = 45_000;
const largeCapMs = (workers: number): number => (workers === 1 ? 240_000 : 200_000);
const largeCompleteCapMs = 300_000;
if (wanted('throughput') && largeOrders > 0) {
  const larges: (ThroughputResult | { workers: number; skipped: true; elapsedMs: number })[] = [];
  for (const count of plan.workerCounts) {
    const capMs = largeCapMs(count);
    const latestStartMs = runMs - capMs - runMarginMs;
    const elapsedMs = Date.now() - startedAt.getTime();
    const name = `${largeOrders} orders, ${count} worker${count === 1 ? '' : 's'}`;
    if (elapsedMs > latestStartMs) {
      console.log(
        `\n=== throughput: ${name} skipped: ${round(elapsedMs / 60_000, 1)} min elapsed, it needs to start by ${round(latestStartMs / 60_000, 1)}`,
      );
      larges.push({ workers: count, skipped: true, elapsedMs });
      for (const phase of ['created', 'completed'])
        verdicts.push(
          verdict(
            `${phase}/s at ${largeOrders} against ${plan.sizes[0]}, ${count} worker(s)`,
            null,
            'x',
            { op: '>=', bound: 0.9 },
            `skipped: ${round(elapsedMs / 60_000, 1)} min elapsed (the run is bounded to 20 minutes)`,
          ),
        );
      continue;
    }
    console.log(
      `\n=== throughput: ${name}, creation (cap ${capMs / 1000} s), then completion if it fits in the run's 20 minutes`,
    );
    const runEndsAt = startedAt.getTime() + runMs - runMarginMs;
    const large = await runThroughput({
      ...common,
      system: 'worker',
      workers: count,
      orders: largeOrders,
      capMs,
      // Completion is bounded by what is left of the run, not by the creation's cap: three workers complete 50k in
      // about 3.5 minutes here (the 06:27 run of 2026-11-29 stopped at 47,181 of 50,000 under a 200 s cap).
      completeCapMs: largeCompleteCapMs,
      completeWithinMs: () => runEndsAt - Date.now(),
    });
    printThroughput(large);
    larges.push(large);
    await saveResult(`throughput-${largeOrders}`, { workers: larges });
    const small = throughput[0]?.workers.find((w) => w.workers === count);
    const createCapped = large.capped.filter((c) => c.startsWith('created:'));
    if (small)
      verdicts.push(
        verdict(
          `created/s at ${largeOrders} against ${small.orders}, ${count} worker(s)`,
          large.createdPerSecond / small.createdPerSecond,
          'x',
          { op: '>=', bound: 0.9 },
          `${large.created} of ${largeOrders} created, ${large.createdPerSecond}/s at ${largeOrders} (${large.createCpuMsPerOrder} ms CPU per order${createCapped.length ? `; ${createCapped.join('; ')}` : ''}), ${small.createdPerSecond}/s at ${small.orders}; no slowdown means about 1x`,
        ),
        verdict(
          `completed/s at ${largeOrders} against ${small.orders}, ${count} worker(s)`,
          large.completionSkipped ? null : large.completedPerSecond / small.completedPerSecond,
          'x',
          { op: '>=', bound: 0.9 },
          large.completionSkipped
            ? `skipped: ${large.completionSkipped} (the run is bounded to 20 minutes)`
            : `${large.completed} of ${large.created} completed, ${large.completedPerSecond}/s at ${largeOrders} (${large.completeCpuMsPerOrder} ms CPU per order, latency p99 ${large.completeLatencyMs.p99} ms), ${small.completedPerSecond}/s at ${small.orders}`,
        ),
      );
  }
  summary['throughputLarge'] = larges;
}

summary['throughput'] = throughput;
summary['verdicts'] = verdicts;
summary['finishedAt'] = new Date().toISOString();
const elapsedSeconds = round((Date.now() - startedAt.getTime()) / 1000, 0);
summary['elapsedSeconds'] = elapsedSeconds;
console.log(`\n=== targets (issue 12), profile ${plan.name}, ${elapsedSeconds} s`);
printVerdicts(verdicts);
await saveResult(summaryName(plan.name, only), summary);
await services.stop();
