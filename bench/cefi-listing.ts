// API economy of the CeFi listing: the largest number of open CeFi orders one API key keeps confirmed within 60 s
// without a 429. Real worker processes, a real Kafka and Redis, the sandbox behind the timing pass-through (both in
// a process of their own, bench/lib/exchange-process.ts).
//
// Per rung of N: a first worker (budget unlimited) creates N CeFi orders and stops (SIGTERM: its orders are stored
// and their leases released); the pass-through then enforces the document's throttle (2500 requests per minute per
// key, 429 with Retry-After) and a second worker with API_BUDGET_PER_MINUTE=2500 restores the N open orders. After a
// settling period (at least 20 s, and until the polls of orders restored with their poll already due have drained),
// over a window of at least 60 s: exchange calls by kind (listing pages, per-order GETs, other)
// from the pass-through's log, 429s, the most requests in any 60 s, and - sampled every 5 s from the worker's
// gauges - the fraction of open orders whose status was last confirmed (by a GET, or a listing of the same status)
// less than 60 s before.
//
//   BENCH_LISTING_ORDERS=2000,5000,10000 node bench/cefi-listing.ts
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { orderCreateCommand } from '../test/support/order-specs.ts';
import { startWorker, type WorkerProcess } from '../test/support/worker-process.ts';
import {
  batchProducer,
  benchServices,
  labelledMetric,
  round,
  saveResult,
  TimedCollector,
  type TimedCall,
} from './lib/harness.ts';
import { startBenchSystem, type BenchSystem } from './worker-throughput.ts';

/** The document's global throttle, and the worker's budget under test. */
const perMinute = 2_500;

export interface ListingResult {
  orders: number;
  created: number;
  /** Open exchange orders the measuring worker drove during the window (its gauge, last sample). */
  open: number;
  windowMs: number;
  createMs: number;
  restoreMs: number;
  /** From restored to the window: its length and the calls made meanwhile (overdue polls of restored orders). */
  settling: { ms: number; listPages: number; orderGets: number };
  calls: { listPages: number; orderGets: number; other: number; total: number; perMinute: number };
  throttled: { inWindow: number; sinceRestore: number };
  /** The most requests the pass-through admitted in any 60 s since the measuring worker started. */
  maxInAnyMinute: number;
  /** Fraction of open orders confirmed within the last 60 s, over the window's samples. */
  confirmedWithin60s: { min: number; last: number; samples: number };
  /** The worker's own counters over the window. */
  listing: { pages: number; confirmed: number; differed: number; walksFailed: number };
  /** Within 60 s, every sample, and not a single 429 (the rung's verdict). */
  kept: boolean;
}

const isListPage = (c: TimedCall): boolean => c.method === 'GET' && c.path === '/orders/';
const isOrderGet = (c: TimedCall): boolean => c.method === 'GET' && /^\/orders\/[^/]+\/$/.test(c.path);

const metric = labelledMetric;

/**
 * N open orders made by a first worker of the system (its budget is not the one measured), which then stops
 * (SIGTERM: its orders are stored and their leases released): how many were created, in how long, and its name.
 */
export async function createThenStop(
  system: BenchSystem,
  commands: Array<Record<string, unknown>>,
): Promise<{ created: number; createMs: number; creatorName: string | undefined }> {
  const { env } = system;
  const producer = await batchProducer(system.kafka, env.topics.commands);
  const collector = await TimedCollector.start(system.kafka, env.topics.events);
  const createStart = Date.now();
  await producer.sendAll(commands);
  const created = await collector.waitForCount(
    'order.created',
    commands.length,
    Math.max(120_000, commands.length * 50),
  );
  const createMs = Date.now() - createStart;
  await producer.close();
  await collector.stop();
  const creator = env.workers[0];
  await creator?.kill('SIGTERM');
  return { created, createMs, creatorName: creator?.name };
}

/**
 * The worker a benchmark measures, once the creator stopped: the system's environment with one key's request
 * budget (`perMinute`), pushed to the system's workers (stopped with it), ready (its orders restored).
 */
export async function startMeasuredWorker(
  system: BenchSystem,
  name: string,
  perMinute: number,
): Promise<WorkerProcess> {
  const { env } = system;
  const worker = await startWorker(
    name,
    { ...env.env, API_BUDGET_PER_MINUTE: String(perMinute) },
    env.webhookPort,
  );
  env.workers.push(worker);
  await worker.ready(300_000);
  return worker;
}

/** The most calls (429s excluded) that started in any 60 s span. */
function maxInAnyMinute(calls: TimedCall[]): number {
  const starts = calls
    .filter((c) => c.status !== 429)
    .map((c) => c.startedAt)
    .sort((a, b) => a - b);
  let best = 0;
  for (let lo = 0, hi = 0; hi < starts.length; hi++) {
    while ((starts[hi] ?? 0) - (starts[lo] ?? 0) >= 60_000) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

export async function runListing(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  orders: number;
  /** At least 60 s. */
  windowMs?: number;
  settleMs?: number;
  /** Longest wait for the restore's overdue polls to drain before the window starts anyway. */
  settleCapMs?: number;
}): Promise<ListingResult> {
  const windowMs = Math.max(60_000, opts.windowMs ?? 70_000);
  const settleMs = opts.settleMs ?? 20_000;
  const settleCapMs = Math.max(settleMs, opts.settleCapMs ?? 300_000);
  const system = await startBenchSystem({
    ...opts,
    system: 'worker',
    workers: 1,
    env: {
      LIST_RECONCILE_INTERVAL_MS: '30000',
      POLL_INTERVAL_MS: '60000',
      WEBHOOK_POLL_INTERVAL_MS: '60000',
    },
  });
  const { exchange } = system;
  try {
    // ---- N open CeFi orders, made by a worker whose budget is not the one measured
    const run = randomBytes(3).toString('hex');
    const { created, createMs, creatorName } = await createThenStop(
      system,
      Array.from({ length: opts.orders }, (_, i) =>
        orderCreateCommand('cefi', (1 + i / 100_000).toFixed(5), `listed-${run}-${i}`),
      ),
    );

    // ---- one key, 2500 requests per minute: the exchange's throttle at the pass-through, the worker's budget
    await exchange.throttle(perMinute);
    const restoreStart = Date.now();
    const firstCall = await exchange.callCount();
    const worker = await startMeasuredWorker(system, `${creatorName ?? 'listing'}-measured`, perMinute);
    const openNow = () => metric(worker.metricsPort, 'worker_exchange_orders_open');
    while ((await openNow()) < created && Date.now() - restoreStart < 300_000) await sleep(1_000);
    const restoreMs = Date.now() - restoreStart;
    // Settling: at least settleMs, and until the polls of orders restored overdue (their fallback poll passed during
    // the handoff) have drained and every open order is confirmed - the window measures the steady state.
    const settleStart = Date.now();
    const settleCallsFrom = await exchange.callCount();
    await sleep(settleMs);
    while (Date.now() - settleStart < settleCapMs) {
      const overdue = await metric(worker.metricsPort, 'worker_exchange_orders_unconfirmed_60s');
      const inflight = await metric(worker.metricsPort, 'worker_exchange_calls_inflight');
      if (overdue === 0 && inflight < 5) break;
      await sleep(2_000);
    }
    const settle = await exchange.calls(settleCallsFrom);
    const settling = {
      ms: Date.now() - settleStart,
      listPages: settle.filter(isListPage).length,
      orderGets: settle.filter(isOrderGet).length,
    };

    // ---- the window
    const counters = async () => ({
      pages: await metric(worker.metricsPort, 'worker_listing_pages_total'),
      confirmed: await metric(worker.metricsPort, 'worker_listing_orders_total', { outcome: 'confirmed' }),
      differed: await metric(worker.metricsPort, 'worker_listing_orders_total', { outcome: 'differed' }),
      walksFailed: await metric(worker.metricsPort, 'worker_listing_walks_failed_total'),
    });
    const before = await counters();
    const windowStart = Date.now();
    const fractions: number[] = [];
    let open = 0;
    while (Date.now() - windowStart < windowMs) {
      open = await openNow();
      const overdue = await metric(worker.metricsPort, 'worker_exchange_orders_unconfirmed_60s');
      fractions.push(open === 0 ? 0 : (open - overdue) / open);
      await sleep(5_000);
    }
    const windowEnd = Date.now();
    const after = await counters();

    const sinceRestore = await exchange.calls(firstCall);
    const inWindow = sinceRestore.filter((c) => c.startedAt >= windowStart && c.startedAt < windowEnd);
    const listPages = inWindow.filter(isListPage).length;
    const orderGets = inWindow.filter(isOrderGet).length;
    const throttledInWindow = inWindow.filter((c) => c.status === 429).length;
    const throttledSinceRestore = sinceRestore.filter((c) => c.status === 429).length;
    const min = fractions.length ? Math.min(...fractions) : 0;
    return {
      orders: opts.orders,
      created,
      open,
      windowMs: windowEnd - windowStart,
      createMs,
      restoreMs,
      settling,
      calls: {
        listPages,
        orderGets,
        other: inWindow.length - listPages - orderGets,
        total: inWindow.length,
        perMinute: round((inWindow.length * 60_000) / (windowEnd - windowStart), 0),
      },
      throttled: { inWindow: throttledInWindow, sinceRestore: throttledSinceRestore },
      maxInAnyMinute: maxInAnyMinute(sinceRestore),
      confirmedWithin60s: {
        min: round(min, 4),
        last: round(fractions.at(-1) ?? 0, 4),
        samples: fractions.length,
      },
      listing: {
        pages: after.pages - before.pages,
        confirmed: after.confirmed - before.confirmed,
        differed: after.differed - before.differed,
        walksFailed: after.walksFailed - before.walksFailed,
      },
      kept: created === opts.orders && open >= created && min === 1 && throttledSinceRestore === 0,
    };
  } finally {
    await system.stop();
  }
}

export function printListing(r: ListingResult): void {
  console.log(
    `  ${r.orders} open CeFi orders (${r.created} created in ${round(r.createMs / 1000, 1)} s, restored by the measured worker in ${round(r.restoreMs / 1000, 1)} s), window ${round(r.windowMs / 1000, 0)} s:`,
  );
  console.log(
    `    settling ${round(r.settling.ms / 1000, 1)} s: ${r.settling.listPages} listing pages, ${r.settling.orderGets} order GETs (orders restored with their poll due)`,
  );
  console.log(
    `    calls ${r.calls.total} (${r.calls.perMinute}/min): ${r.calls.listPages} listing pages, ${r.calls.orderGets} order GETs, ${r.calls.other} other; most in any 60 s ${r.maxInAnyMinute} of ${perMinute}`,
  );
  console.log(
    `    429s: ${r.throttled.inWindow} in the window, ${r.throttled.sinceRestore} since the measured worker started`,
  );
  console.log(
    `    confirmed within 60 s: min ${r.confirmedWithin60s.min}, last ${r.confirmedWithin60s.last} of ${r.open} open (${r.confirmedWithin60s.samples} samples); listing confirmed ${r.listing.confirmed}, differed ${r.listing.differed}, walks failed ${r.listing.walksFailed}`,
  );
  console.log(`    ${r.kept ? 'KEPT' : 'NOT KEPT'}: every order confirmed within 60 s and no 429`);
}

/** The rungs, each saved as it finishes; the largest kept N is the figure. */
export async function runListingLadder(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  ladder: number[];
}): Promise<{ rungs: ListingResult[]; largestKept: number | null }> {
  const rungs: ListingResult[] = [];
  for (const orders of opts.ladder) {
    console.log(`\n--- cefi-listing: ${orders} open CeFi orders, one key, ${perMinute} requests/min`);
    const result = await runListing({ ...opts, orders });
    printListing(result);
    rungs.push(result);
    await saveResult(`cefi-listing-${orders}`, result);
  }
  const kept = rungs.filter((r) => r.kept).map((r) => r.orders);
  const largestKept = kept.length ? Math.max(...kept) : null;
  await saveResult('cefi-listing', { perMinute, rungs, largestKept });
  return { rungs, largestKept };
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  const ladder = (process.env['BENCH_LISTING_ORDERS'] ?? '500')
    .split(',')
    .map((n) => Number(n.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
  const { largestKept } = await runListingLadder({
    kafkaBrokers: services.kafkaBrokers,
    redisUrl: services.redisUrl,
    ladder,
  });
  console.log(`\nlargest N kept confirmed within 60 s without a 429: ${largestKept ?? 'none'}`);
  await services.stop();
}
