// Parked CeFi creates against one key's budget (issue 50, defect 6): with 50 parked CeFi orders whose lookups can
// never finish, how much of the key's 2500 requests a minute do the key's other orders still get, and does the
// exchange throttle anything? Real worker process, real Kafka and Redis, the sandbox behind the timing pass-through
// (in this process: the benchmark arms the sandbox's faults and seeds its listing).
//
// Two phases, each on a fresh system (worker, topics, sandbox), one after the other in the same run:
//   baseline: the other orders alone;
//   parked:   the same, with 50 parked CeFi orders re-checking.
// Each phase: the pass-through enforces the document's throttle (2500 requests a minute per key, 429 beyond) and the
// worker runs with API_BUDGET_PER_MINUTE=2500. The sandbox's listing is made deeper than the worker's lookup can
// walk (1,000 pages): 20,100 orders of the same key, canceled, created behind the worker's back (straight to the
// sandbox, not through the pass-through, webhooks off). In the parked phase, 50 CeFi creates lose their answer
// (lost_response) while GET /orders/ answers 503, so their lookups fail fast and they park (order.parked); then the
// 503 goes and every re-check of a parked order walks the deep listing and stops at the page cap, inconclusive.
// Then, over the window, the other orders: CeFi creates offered at more than the budget can carry (BENCH_PARKED_OFFER
// per second, 25 by default: about 3,000 requests a minute with their confirming GETs). From the pass-through's log:
// the parked orders' lookup pages (GET /orders/ without a status filter: the listing reconciler always sends one),
// every other admitted call, and the 429s. The figure: the other orders' calls over the window's budget.
//
//   node bench/parked-lookups.ts                # window 90 s
//   BENCH_SCALE=small node bench/parked-lookups.ts   # window 60 s
//
// Worker settings of the benchmark (its own, documented in docs/benchmarks.md): CREATE_SETTLE_MS=5000 and
// PARKED_RECHECK_MS=10000, so that parking takes about two minutes and every parked order is re-checking during the
// window; LIST_RECONCILE_INTERVAL_MS=30000 and POLL_INTERVAL_MS=60000 as in the CeFi listing benchmark.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { demoKeys, type SandboxHandle } from '../sandbox/index.ts';
import { addresses } from '../test/support/addresses.ts';
import { orderCreateCommand } from '../test/support/order-specs.ts';
import {
  batchProducer,
  benchServices,
  machine,
  profile,
  round,
  saveResult,
  TimedCollector,
  verdict,
  type TimedCall,
  type Verdict,
} from './lib/harness.ts';
import { startBenchSystem } from './worker-throughput.ts';

/** The document's global throttle, and the worker's budget under test. */
const perMinute = 2_500;
/** The worker's lookup walks at most this many pages (src/worker/exchange-actors.ts, maxLookupPages). */
const lookupPageCap = 1_000;
const parkedOrders = 50;

export interface ParkedLookupsPhase {
  name: 'baseline' | 'parked';
  /** order.parked events seen before the window (0 in the baseline). */
  parked: number;
  /** How long parking took (the parked phase), ms. */
  parkMs: number;
  /** Orders of the key created behind the worker's back, so that a lookup cannot reach the end of the listing. */
  background: number;
  seedMs: number;
  windowMs: number;
  offeredPerSecond: number;
  offered: number;
  /** Of the window's offered orders, how many were created (order.created) by the window's end. */
  createdInWindow: number;
  calls: {
    /** GET /orders/ without a status filter: the parked orders' lookups. */
    lookupPages: number;
    /** Every other call the exchange admitted (creates, confirming GETs, status walks, polls). */
    other: number;
    throttled429: number;
    /** 429s from the phase's first call to the window's end. */
    throttled429InPhase: number;
  };
  /** The other orders' calls over the budget of the window (perMinute × window). */
  otherShare: number;
  lookupShare: number;
}

export interface ParkedLookupsResult {
  /** The machine and its load average when the run started: a loaded machine caps the baseline itself. */
  machine: Record<string, unknown>;
  perMinute: number;
  parkedOrders: number;
  baseline: ParkedLookupsPhase;
  parked: ParkedLookupsPhase;
  /** The parked phase's other calls against the baseline's. */
  otherVsBaseline: number;
  verdicts: Verdict[];
}

const isLookupPage = (c: TimedCall): boolean =>
  c.method === 'GET' && c.path === '/orders/' && !/[?&]status=/.test(c.query);

/** `count` orders of the key straight to the sandbox (not through the pass-through), then canceled, webhooks off. */
async function seedListing(sandbox: SandboxHandle, count: number): Promise<number> {
  const started = Date.now();
  sandbox.setWebhookEnabled('worker', false);
  const references: string[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const response = await fetch(`${sandbox.url}/orders/`, {
        method: 'POST',
        headers: {
          Authorization: `ApiKey ${demoKeys.cefi}`,
          'Content-Type': 'application/json',
          Accept: 'application/json',
        },
        body: JSON.stringify({
          deposit_currency: 'ETH',
          withdraw_currency: 'BTC',
          deposit_amount: (3 + i / 100_000).toFixed(5),
          withdraw_address: addresses.btc,
        }),
      });
      const body = (await response.json()) as { unique_reference?: unknown };
      if (response.status !== 201 || typeof body.unique_reference !== 'string')
        throw new Error(`seeding the listing: POST /orders/ answered ${response.status}`);
      references.push(body.unique_reference);
    }
  };
  await Promise.all(Array.from({ length: 16 }, lane));
  for (const reference of references) sandbox.advanceOrder(reference, 'canceled');
  await sandbox.webhooksIdle();
  sandbox.setWebhookEnabled('worker', true);
  return Date.now() - started;
}

export async function runParkedLookupsPhase(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  name: 'baseline' | 'parked';
  windowMs: number;
  offeredPerSecond: number;
}): Promise<ParkedLookupsPhase> {
  const system = await startBenchSystem({
    kafkaBrokers: opts.kafkaBrokers,
    redisUrl: opts.redisUrl,
    system: 'worker',
    workers: 1,
    exchange: 'in-process',
    env: {
      API_BUDGET_PER_MINUTE: String(perMinute),
      CREATE_SETTLE_MS: '5000',
      PARKED_RECHECK_MS: '10000',
      LIST_RECONCILE_INTERVAL_MS: '30000',
      POLL_INTERVAL_MS: '60000',
      WEBHOOK_POLL_INTERVAL_MS: '60000',
    },
  });
  const { env, exchange } = system;
  const sandbox = env.sandbox;
  const run = randomBytes(3).toString('hex');
  const producer = await batchProducer(system.kafka, env.topics.commands);
  const collector = await TimedCollector.start(system.kafka, env.topics.events);
  try {
    await exchange.throttle(perMinute);
    const firstCall = await exchange.callCount();
    let parkMs = 0;
    const background = (lookupPageCap + 5) * sandbox.config.orders.v2PageSize;
    let seedMs: number;
    if (opts.name === 'parked') {
      // Lost answers, and lookups that fail fast until every one of the orders has parked.
      const lost = sandbox.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'lost_response',
        times: parkedOrders,
      });
      sandbox.injectFault({ target: 'endpoint', endpoint: 'GET /orders/', kind: 'http_error', status: 503 });
      const parkStart = Date.now();
      await producer.sendAll(
        Array.from({ length: parkedOrders }, (_, i) =>
          orderCreateCommand('cefi', (2 + i / 1_000).toFixed(3), `parked-${run}-${i}`),
        ),
      );
      const deadline = Date.now() + 120_000;
      while ((sandbox.listFaults().find((f) => f.id === lost)?.fired ?? 0) < parkedOrders) {
        if (Date.now() > deadline) throw new Error('the parked orders never reached the exchange');
        await sleep(100);
      }
      // The listing is deepened behind the parked orders: every one of them is in its lookup's window.
      seedMs = await seedListing(sandbox, background);
      const parked = await collector.waitForCount('order.parked', parkedOrders, 400_000);
      if (parked < parkedOrders) throw new Error(`only ${parked} of ${parkedOrders} orders parked`);
      parkMs = Date.now() - parkStart;
      sandbox.clearFaults();
      // Every parked order is due for a re-check within PARKED_RECHECK_MS: let them start walking.
      await sleep(15_000);
    } else {
      seedMs = await seedListing(sandbox, background);
    }
    const parked = collector.count('order.parked');

    // ---- the window: the key's other orders, offered at more than the budget carries
    const windowStart = Date.now();
    const windowCallsFrom = await exchange.callCount();
    let offered = 0;
    const loadIds = new Set<string>();
    for (let second = 0; Date.now() - windowStart < opts.windowMs; second++) {
      const due = windowStart + second * 1_000;
      if (Date.now() < due) await sleep(due - Date.now());
      if (Date.now() - windowStart >= opts.windowMs) break;
      const batch = Array.from({ length: opts.offeredPerSecond }, (_, i) => {
        const index = offered + i;
        const orderId = `other-${run}-${index}`;
        loadIds.add(orderId);
        return orderCreateCommand('cefi', (1 + index / 100_000).toFixed(5), orderId);
      });
      offered += batch.length;
      await producer.sendAll(batch);
    }
    const windowEnd = windowStart + opts.windowMs;
    if (Date.now() < windowEnd) await sleep(windowEnd - Date.now());
    const windowMs = windowEnd - windowStart;
    // The pass-through records a call as it starts; let the last ones of the window finish.
    await sleep(2_000);
    const inWindow = (await exchange.calls(windowCallsFrom)).filter(
      (c) => c.startedAt >= windowStart && c.startedAt < windowEnd,
    );
    const inPhase = (await exchange.calls(firstCall)).filter((c) => c.startedAt < windowEnd);
    const createdInWindow = collector.events.filter(
      (e) =>
        e.type === 'order.created' &&
        typeof e.order_id === 'string' &&
        loadIds.has(e.order_id) &&
        e.receivedAt < windowEnd,
    ).length;
    const lookupPages = inWindow.filter((c) => c.status !== 429 && isLookupPage(c)).length;
    const other = inWindow.filter((c) => c.status !== 429 && !isLookupPage(c)).length;
    const budget = (perMinute * windowMs) / 60_000;
    return {
      name: opts.name,
      parked,
      parkMs,
      background,
      seedMs,
      windowMs,
      offeredPerSecond: opts.offeredPerSecond,
      offered,
      createdInWindow,
      calls: {
        lookupPages,
        other,
        throttled429: inWindow.filter((c) => c.status === 429).length,
        throttled429InPhase: inPhase.filter((c) => c.status === 429).length,
      },
      otherShare: round(other / budget, 4),
      lookupShare: round(lookupPages / budget, 4),
    };
  } finally {
    await producer.close();
    await collector.stop();
    await system.stop();
  }
}

export function printParkedLookupsPhase(p: ParkedLookupsPhase): void {
  console.log(
    `  ${p.name}: ${p.parked} parked${p.name === 'parked' ? ` (in ${round(p.parkMs / 1000, 1)} s)` : ''}, listing deepened by ${p.background} orders in ${round(p.seedMs / 1000, 1)} s; window ${round(p.windowMs / 1000, 0)} s, ${p.offered} orders offered (${p.offeredPerSecond}/s), ${p.createdInWindow} created in it`,
  );
  console.log(
    `    calls admitted: ${p.calls.other} for the other orders (${round(p.otherShare * 100, 1)} % of the budget), ${p.calls.lookupPages} lookup pages of parked orders (${round(p.lookupShare * 100, 1)} %); 429s: ${p.calls.throttled429} in the window, ${p.calls.throttled429InPhase} in the phase`,
  );
}

export async function runParkedLookups(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  windowMs: number;
  offeredPerSecond?: number;
}): Promise<ParkedLookupsResult> {
  const offeredPerSecond = opts.offeredPerSecond ?? Number(process.env['BENCH_PARKED_OFFER'] ?? 25);
  const startedOn = machine();
  const phase = (name: 'baseline' | 'parked') =>
    runParkedLookupsPhase({ ...opts, name, windowMs: opts.windowMs, offeredPerSecond });
  const baseline = await phase('baseline');
  printParkedLookupsPhase(baseline);
  const parked = await phase('parked');
  printParkedLookupsPhase(parked);
  const otherVsBaseline = baseline.calls.other === 0 ? 0 : parked.calls.other / baseline.calls.other;
  const verdicts = [
    verdict(
      `other orders' share of the key's budget, ${parkedOrders} parked CeFi lookups`,
      parked.otherShare,
      'x budget',
      { op: '>=', bound: 0.85 },
      `${parked.calls.other} of ${Math.round((perMinute * parked.windowMs) / 60_000)} in ${round(parked.windowMs / 1000, 0)} s; lookup pages ${parked.calls.lookupPages} (${round(parked.lookupShare * 100, 1)} %); baseline without parked orders ${baseline.otherShare} (${baseline.calls.other} calls); against the baseline ${round(otherVsBaseline, 3)}x`,
    ),
    verdict(
      `429s with ${parkedOrders} parked CeFi lookups`,
      parked.calls.throttled429InPhase,
      '429s',
      { op: '<', bound: 1 },
      `${parked.calls.throttled429} in the window; the baseline's phase ${baseline.calls.throttled429InPhase}`,
    ),
  ];
  const result: ParkedLookupsResult = {
    machine: startedOn,
    perMinute,
    parkedOrders,
    baseline,
    parked,
    otherVsBaseline: round(otherVsBaseline, 4),
    verdicts,
  };
  await saveResult('parked-lookups', result);
  return result;
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  const windowMs = profile().name === 'small' ? 60_000 : 90_000;
  console.log(
    `=== parked-lookups: ${parkedOrders} parked CeFi orders whose lookups cannot finish, one key at ${perMinute}/min, window ${windowMs / 1000} s`,
  );
  const result = await runParkedLookups({
    kafkaBrokers: services.kafkaBrokers,
    redisUrl: services.redisUrl,
    windowMs,
  });
  for (const v of result.verdicts)
    console.log(
      `  ${v.figure}: ${v.value} ${v.unit}, target ${v.target}: ${v.verdict.toUpperCase()} (${v.note})`,
    );
  await services.stop();
}
