// An exchange outage over N resting orders: what riding it out costs a replica, and how it recovers. Real worker
// processes, a real Kafka and Redis, the sandbox behind the timing pass-through (a process of their own).
//
// A first worker (budget unlimited) creates N DeFi orders (open at the exchange, awaiting their deposit) and stops
// (SIGTERM: its orders are stored and their leases released). A second worker with API_BUDGET_PER_MINUTE=2500 (one
// key's budget) restores them, at rest. BENCH_OUTAGE_SETTLE_MS after it is ready, every endpoint of the exchange
// answers 503 for BENCH_OUTAGE_MS; then the exchange is back. Sampled every 2 s from the measured worker: exchange
// calls in flight (budget wait included), live orders (driven here with their actor: active - passivated), RSS and
// heap, and open orders whose status was last confirmed more than 60 s ago; counted from the pass-through: the calls
// that reached the exchange during the outage; from the worker: polls put off at capacity and status reads refused.
// Recovery: from the exchange's return until no more open orders are unconfirmed for 60 s than before the outage
// (one key cannot confirm every one of thousands of DeFi orders every 60 s: the count before is the steady state),
// and the calls in flight and the live orders are back to what they were before (each within a tenth, or 10; capped).
//
//   BENCH_OUTAGE_ORDERS=5000 node bench/exchange-outage.ts
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { orderCreateCommand } from '../test/support/order-specs.ts';
import { benchServices, heapUsed, labelledMetric, procSample, round, saveResult } from './lib/harness.ts';
import { createThenStop, startMeasuredWorker } from './cefi-listing.ts';
import { startBenchSystem } from './worker-throughput.ts';

const perMinute = 2_500;

export interface OutageResult {
  orders: number;
  created: number;
  outageMs: number;
  /** The measured worker before the outage (its last sample). */
  before: { inflight: number; liveOrders: number; rssMiB: number; heapMiB: number; unconfirmed60s: number };
  /** The most seen in any sample during the outage and the recovery. */
  peak: { inflight: number; liveOrders: number; rssMiB: number; heapMiB: number };
  /** Calls that reached the exchange (the pass-through) during the outage, all answered 503. */
  callsDuringOutage: number;
  /** The worker's counters over the outage and the recovery. */
  pollsDeferredAtCapacity: number;
  statusReadsRefused: number;
  pollsAtRestFailed: number;
  /** From the exchange's return until back to the state before the outage (null: not within the cap). */
  recoveryMs: number | null;
  samples: Array<{
    t: number;
    inflight: number;
    liveOrders: number;
    rssMiB: number;
    heapMiB: number;
    unconfirmed60s: number;
  }>;
}

const metric = labelledMetric;

export async function runOutage(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  orders: number;
  outageMs: number;
  settleMs: number;
  recoveryCapMs: number;
}): Promise<OutageResult> {
  const system = await startBenchSystem({ ...opts, system: 'worker', workers: 1 });
  const { env, exchange } = system;
  try {
    const run = randomBytes(3).toString('hex');
    const { created, creatorName } = await createThenStop(
      system,
      Array.from({ length: opts.orders }, (_, i) =>
        orderCreateCommand('defi', (100 + i / 1_000).toFixed(3), `outage-${run}-${i}`),
      ),
    );

    const worker = await startMeasuredWorker(system, `${creatorName ?? 'outage'}-measured`, perMinute);
    const pid = worker.child.pid ?? 0;
    const sample = async (t0: number) => {
      const active = await metric(worker.metricsPort, 'worker_active_orders');
      const passivated = await metric(worker.metricsPort, 'worker_passivated_orders');
      return {
        t: Date.now() - t0,
        inflight: await metric(worker.metricsPort, 'worker_exchange_calls_inflight'),
        liveOrders: active - passivated,
        rssMiB: round((procSample(pid)?.rssBytes ?? NaN) / 2 ** 20, 1),
        heapMiB: round((await heapUsed(worker.metricsPort)) / 2 ** 20, 1),
        unconfirmed60s: await metric(worker.metricsPort, 'worker_exchange_orders_unconfirmed_60s'),
      };
    };
    await sleep(opts.settleMs);
    const before = await sample(Date.now());
    const counters = async () => ({
      deferred: await metric(worker.metricsPort, 'worker_polls_deferred_total', {
        reason: 'calls_at_capacity',
      }),
      refused: await metric(worker.metricsPort, 'worker_exchange_errors_total', {
        error_type: 'status_reads_at_capacity',
      }),
      failedAtRest: await metric(worker.metricsPort, 'worker_polls_at_rest_total', { outcome: 'failed' }),
    });
    const countersBefore = await counters();

    // ---- the outage: every endpoint answers 503
    const adminUrl = env.sandbox.adminUrl;
    const armed = await fetch(`${adminUrl}/faults/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        target: 'endpoint',
        endpoint: '*',
        kind: 'http_error',
        status: 503,
        probability: 1,
      }),
    });
    if (armed.status !== 201)
      throw new Error(`could not arm the outage: ${armed.status} ${await armed.text()}`);
    const outageStart = Date.now();
    const callsFrom = await exchange.callCount();
    const samples: OutageResult['samples'] = [];
    while (Date.now() - outageStart < opts.outageMs) {
      samples.push(await sample(outageStart));
      await sleep(2_000);
    }
    const callsDuringOutage = (await exchange.calls(callsFrom)).length;
    const cleared = await fetch(`${adminUrl}/faults/`, { method: 'DELETE' });
    if (cleared.status !== 204) throw new Error(`could not end the outage: ${cleared.status}`);

    // ---- recovery: back to the state before the outage
    const recoveryStart = Date.now();
    let recoveryMs: number | null = null;
    while (Date.now() - recoveryStart < opts.recoveryCapMs) {
      const now = await sample(outageStart);
      samples.push(now);
      // Back: within a tenth (or 10) of each level before the outage.
      const near = (value: number, was: number): boolean => value <= Math.max(was * 1.1, was + 10);
      if (
        near(now.unconfirmed60s, before.unconfirmed60s) &&
        near(now.inflight, before.inflight) &&
        near(now.liveOrders, before.liveOrders)
      ) {
        recoveryMs = Date.now() - recoveryStart;
        break;
      }
      await sleep(2_000);
    }
    const countersAfter = await counters();
    const peakOf = (key: 'inflight' | 'liveOrders' | 'rssMiB' | 'heapMiB'): number =>
      Math.max(...samples.map((s) => s[key]));
    return {
      orders: opts.orders,
      created,
      outageMs: opts.outageMs,
      before: {
        inflight: before.inflight,
        liveOrders: before.liveOrders,
        rssMiB: before.rssMiB,
        heapMiB: before.heapMiB,
        unconfirmed60s: before.unconfirmed60s,
      },
      peak: {
        inflight: peakOf('inflight'),
        liveOrders: peakOf('liveOrders'),
        rssMiB: peakOf('rssMiB'),
        heapMiB: peakOf('heapMiB'),
      },
      callsDuringOutage,
      pollsDeferredAtCapacity: countersAfter.deferred - countersBefore.deferred,
      statusReadsRefused: countersAfter.refused - countersBefore.refused,
      pollsAtRestFailed: countersAfter.failedAtRest - countersBefore.failedAtRest,
      recoveryMs,
      samples,
    };
  } finally {
    await system.stop();
  }
}

export function printOutage(r: OutageResult): void {
  console.log(
    `exchange outage: ${r.orders} resting DeFi orders (${r.created} created), every endpoint 503 for ${r.outageMs / 1000} s, budget ${perMinute}/min`,
  );
  console.log(
    `  before          calls in flight ${r.before.inflight}, live orders ${r.before.liveOrders}, RSS ${r.before.rssMiB} MiB, heap ${r.before.heapMiB} MiB, unconfirmed for 60 s ${r.before.unconfirmed60s}`,
  );
  console.log(
    `  peak            calls in flight ${r.peak.inflight}, live orders ${r.peak.liveOrders}, RSS ${r.peak.rssMiB} MiB, heap ${r.peak.heapMiB} MiB`,
  );
  console.log(
    `  during          ${r.callsDuringOutage} calls reached the exchange; polls at rest failed ${r.pollsAtRestFailed}, put off at capacity ${r.pollsDeferredAtCapacity}, status reads refused ${r.statusReadsRefused}`,
  );
  console.log(
    `  recovery        ${r.recoveryMs === null ? 'NOT within the cap' : `${round(r.recoveryMs / 1000, 1)} s`} until calls in flight, live orders and orders unconfirmed for 60 s were back to their levels before (last sample: ${JSON.stringify(r.samples.at(-1))})`,
  );
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  try {
    const orders = Number(process.env['BENCH_OUTAGE_ORDERS'] ?? 5_000);
    const result = await runOutage({
      kafkaBrokers: services.kafkaBrokers,
      redisUrl: services.redisUrl,
      orders,
      outageMs: Number(process.env['BENCH_OUTAGE_MS'] ?? 120_000),
      settleMs: Number(process.env['BENCH_OUTAGE_SETTLE_MS'] ?? 30_000),
      recoveryCapMs: Number(process.env['BENCH_OUTAGE_RECOVERY_CAP_MS'] ?? 300_000),
    });
    printOutage(result);
    console.log(`  wrote ${await saveResult(`exchange-outage-${orders}`, result)}`);
  } finally {
    await services.stop();
  }
}
