// Throughput, CPU, memory per open order and restore time: real worker processes (or the floor, bench/floor.ts)
// on a real Kafka and Redis, the sandbox as exchange (actionable delay 0, throttles off) behind a timing
// pass-through, both in a process of their own (bench/lib/exchange-process.ts). Sends N order.create commands in batches (a third each DeFi, CeFi, CeFi fixed-rate), measures
// order.create -> order.created, then with N orders open their RSS and heap, then (one worker) the time a fresh
// replica takes to restore them, then moves every order to COMPLETED on the exchange and measures exchange
// COMPLETED -> order.completed. A phase that exceeds its cap stops there and reports how far it got.
//
//   node bench/worker-throughput.ts                                  # 300 orders, 1 worker, and the floor
//   BENCH_ORDERS=1000 BENCH_WORKERS=3 node bench/worker-throughput.ts
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import {
  demoConfig,
  demoKeys,
  demoReferral,
  type SandboxConfigInput,
  type SandboxHandle,
  type WebhookOutcomeCount,
} from '../sandbox/index.ts';
import { testKafka } from '../test/support/kafka-helpers.ts';
import {
  startWorkerEnvironment,
  type ExchangeSimulator,
  type SandboxStart,
  type WorkerEnvironment,
} from '../test/support/worker-environment.ts';
import { startWorker } from '../test/support/worker-process.ts';
import { startFloor, type FloorHandle } from './floor.ts';
import {
  ProcessMeter,
  TimedCollector,
  batchProducer,
  benchOrders,
  benchServices,
  cpuSecondsOf,
  heapUsed,
  machineBusySeconds,
  metricSum,
  mib,
  percentile,
  pidServing,
  redisCommandCount,
  round,
  saveResult,
  startTimedExchange,
  timedExchangeView,
  type TimedCall,
  type TimedExchange,
} from './lib/harness.ts';
import { startExchangeProcess, type RemoteSandbox } from './lib/exchange-process.ts';

/** The sandbox for every benchmark: actionable quotes without delay, throttles out of the way. */
export function fastSandbox(config: SandboxConfigInput): SandboxConfigInput {
  return {
    ...config,
    quotes: { ttlSeconds: 600, actionableDelayMs: 0 },
    limits: {
      sameChainFixedRateQuotesPerMinute: 10_000_000,
      crossChainFixedRateQuotesPerMinute: 10_000_000,
      globalRequestsPerMinute: 10_000_000,
    },
  };
}

/**
 * BENCH_WORKER_ENV: worker settings for a comparison run, as a JSON object of strings (for example
 * `{"COMMAND_PIPELINE_DEPTH":"1"}`), laid over every benchmark's own.
 */
function benchWorkerEnv(): Record<string, string> {
  const text = process.env['BENCH_WORKER_ENV'];
  if (!text) return {};
  const parsed = JSON.parse(text) as unknown;
  if (!parsed || typeof parsed !== 'object' || Object.values(parsed).some((v) => typeof v !== 'string'))
    throw new Error('BENCH_WORKER_ENV must be a JSON object of strings');
  return parsed as Record<string, string>;
}

export const workerBenchEnv = {
  API_BUDGET_PER_MINUTE: '100000',
  LOG_LEVEL: 'warn',
  // Open orders are measured 2 s after the last order.created: passivated by then unless this says 0 (off).
  PASSIVATE_IDLE_MS: process.env['BENCH_PASSIVATE_IDLE_MS'] ?? '1000',
};

export interface BenchSystem<S extends ExchangeSimulator = RemoteSandbox> {
  env: WorkerEnvironment<S>;
  /** The timing pass-through in front of the sandbox: its URL, its call records, its throttle. */
  exchange: TimedExchange;
  floor: FloorHandle | undefined;
  kafka: ReturnType<typeof testKafka>;
  /** Worker start (spawn to /readyz) on empty topics, ms. */
  bootMs: number;
  /** The processes metered as the system under test: the workers or the floor (never the exchange's). */
  pids(): number[];
  /** The exchange's process (sandbox and pass-through), when it runs apart from the benchmark's. */
  exchangePid: number | undefined;
  stop(): Promise<void>;
}

export interface BenchSystemOptions {
  kafkaBrokers: string[];
  redisUrl: string;
  system: 'worker' | 'floor';
  workers: number;
  partitions?: number;
  env?: Record<string, string>;
}

/**
 * The one way the benchmarks start a system: the sandbox, the timing pass-through, then workers or the floor. The
 * sandbox and the pass-through run in a process of their own (bench/lib/exchange-process.ts), driven over the
 * sandbox's admin API; `exchange: 'in-process'` keeps them in the benchmark's process instead, for a benchmark that
 * reads the sandbox's own records as it goes (bench/webhooks.ts, bench/kill-at-scale.ts).
 */
export function startBenchSystem(
  opts: BenchSystemOptions & { exchange?: 'own-process' },
): Promise<BenchSystem<RemoteSandbox>>;
export function startBenchSystem(
  opts: BenchSystemOptions & { exchange: 'in-process' },
): Promise<BenchSystem<SandboxHandle>>;
export async function startBenchSystem(
  opts: BenchSystemOptions & { exchange?: 'own-process' | 'in-process' },
): Promise<BenchSystem<ExchangeSimulator>> {
  const environment = {
    kafkaBrokers: opts.kafkaBrokers,
    redisUrl: opts.redisUrl,
    workers: opts.system === 'worker' ? opts.workers : 0,
    partitions: opts.partitions ?? 6,
    sandbox: fastSandbox,
    baseConfig: demoConfig,
  };
  const workerEnv = (exchangeUrl: string): Record<string, string> => ({
    ...workerBenchEnv,
    EXCHANGE_API_URL: exchangeUrl,
    ...opts.env,
    ...benchWorkerEnv(),
  });
  let exchange: TimedExchange;
  let exchangePid: number | undefined;
  let env: WorkerEnvironment<ExchangeSimulator>;
  let started: number;
  if (opts.exchange === 'in-process') {
    const timed = await startTimedExchange();
    exchange = timedExchangeView(timed);
    started = Date.now();
    env = await startWorkerEnvironment({ ...environment, env: workerEnv(timed.url) });
    timed.setUpstream(env.sandbox.url);
  } else {
    const exchangeProcess = await startExchangeProcess();
    exchange = exchangeProcess;
    exchangePid = exchangeProcess.child.pid;
    started = Date.now();
    try {
      env = await startWorkerEnvironment({
        ...environment,
        env: workerEnv(exchangeProcess.url),
        startSandbox: (start: SandboxStart) => exchangeProcess.startSandbox(start),
      });
    } catch (error) {
      await exchangeProcess.close();
      throw error;
    }
  }
  const bootMs = Date.now() - started;
  const kafka = testKafka(opts.kafkaBrokers);
  let floor: FloorHandle | undefined;
  if (opts.system === 'floor') {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [env.topics.commands, env.topics.events].map((topic) => ({
        topic,
        numPartitions: opts.partitions ?? 6,
      })),
      waitForLeaders: true,
    });
    await admin.disconnect();
    floor = await startFloor({
      kafkaBrokers: opts.kafkaBrokers,
      exchangeUrl: exchange.url,
      keys: demoKeys,
      referralToken: demoReferral.token,
      topics: env.topics,
      group: `${env.topics.commands}.floor`,
      webhookPort: env.webhookPort,
    });
  }
  return {
    env,
    exchange,
    floor,
    kafka,
    bootMs,
    exchangePid,
    pids: () =>
      floor
        ? [floor.child.pid ?? 0]
        : env.workers.filter((w) => w.child.exitCode === null).map((w) => w.child.pid ?? 0),
    stop: async () => {
      await floor?.stop();
      await env.stop();
      await exchange.close();
    },
  };
}

export interface OrderMemory {
  count: number;
  rssKiBPerOrder: number;
  heapKiBPerOrder: number | null;
}

export interface ThroughputResult {
  system: 'worker' | 'floor';
  workers: number;
  orders: number;
  created: number;
  createdMs: number;
  createdPerSecond: number;
  createLatencyMs: { p50: number; p99: number; max: number };
  createCpuMsPerOrder: number;
  /** Cores busy while orders were created: what bounds the phase (a process near 1 is bound by its one thread). */
  createCores: PhaseCores;
  completed: number;
  completedMs: number;
  completedPerSecond: number;
  completeCpuMsPerOrder: number;
  completeCores: PhaseCores;
  /** The exchange moved the order to COMPLETED -> order.completed seen, per order. */
  completeLatencyMs: { p50: number; p99: number; max: number };
  rssMiB: { idle: number[]; open: number[]; peak: number[] };
  openOrders: OrderMemory | null;
  /** The same 2 s after the last order.completed: what a finished order still costs (null for the floor). */
  finishedOrders: OrderMemory | null;
  restore: { openOrders: number; readyMs: number; emptyBootMs: number } | null;
  exchangeCallsPerOrder: { create: number; complete: number };
  /** Kafka transactions and Redis commands per order of each phase (the worker's; NaN for the floor's transactions). */
  costs: { create: PhaseCosts; complete: PhaseCosts };
  /** The sandbox's webhook deliveries of the run by outcome (and HTTP status): a timeout is a hint lost. */
  webhookOutcomes: Record<string, number>;
  /** Every exchange call of the run by endpoint, and the exchange orders the sandbox holds (one per order is right). */
  exchangeCallsByEndpoint: Record<string, number>;
  exchangeOrders: number;
  /** Exchange orders beyond one per deposit amount (every order has its own amount): duplicates, should be 0. */
  duplicateExchangeOrders: number;
  capped: string[];
  /** Why nothing was moved to COMPLETED although the phase was asked for (completeWithinMs left too little time). */
  completionSkipped?: string;
}

/** The least time a completion phase is started with (completeWithinMs). */
const minCompleteMs = 60_000;

/**
 * CPU seconds per second of a phase: the system under test (its processes summed), the exchange's process (the
 * sandbox every system shares: the floor's creation is bound by it) and the whole machine (every process, out of
 * `machine.cpus`). Null fields where not measured (the exchange in the benchmark's own process).
 */
export interface PhaseCores {
  system: number;
  exchange: number | null;
  /** The Kafka broker's and the Redis server's process (null when not a process of this machine). */
  kafka: number | null;
  redis: number | null;
  machine: number;
}

export interface PhaseCosts {
  kafkaTransactionsPerOrder: number;
  redisCommandsPerOrder: number;
}

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
const alive = (worker: { child: { exitCode: number | null } }): boolean => worker.child.exitCode === null;

const endpointOf = (c: TimedCall): string =>
  `${c.method} ${c.path.replace(/^\/orders\/[^/]+\/$/, '/orders/{ref}/')}`;

/** Webhook deliveries by outcome and HTTP status ("delivered 200"), or error ("timeout (no answer within 5000 ms)"). */
function webhookOutcomes(counts: WebhookOutcomeCount[]): Record<string, number> {
  const byLabel: Record<string, number> = {};
  for (const c of counts) {
    const label =
      c.httpStatus === null ? `${c.outcome} (${c.error ?? 'no answer'})` : `${c.outcome} ${c.httpStatus}`;
    byLabel[label] = (byLabel[label] ?? 0) + c.count;
  }
  return byLabel;
}

function callsIn(calls: TimedCall[], from: number, to: number): number {
  return calls.filter((c) => c.startedAt >= from && c.startedAt <= to).length;
}

export async function runThroughput(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  system: 'worker' | 'floor';
  workers: number;
  orders: number;
  capMs: number;
  /** The completion phase's cap when it differs (the floor's one GET per hint makes its completion slow). */
  completeCapMs?: number;
  restore?: boolean;
  /** Only the creation phase (and the open orders' memory): no restore, nothing moved to COMPLETED. */
  createOnly?: boolean;
  /**
   * Asked once every order is created: how long the completion phase may take from then (ms). Below
   * `minCompleteMs` nothing is moved to COMPLETED (the result says why in `completionSkipped`), else the phase's
   * cap is the smaller of this and its own. Lets a run bounded in time measure completion only when it fits.
   */
  completeWithinMs?: () => number;
  /** Partitions of the commands, state and events topics (default 6). */
  partitions?: number;
}): Promise<ThroughputResult> {
  const system = await startBenchSystem(opts);
  const { env, exchange } = system;
  const capped: string[] = [];
  try {
    const producer = await batchProducer(system.kafka, env.topics.commands);
    const collector = await TimedCollector.start(system.kafka, env.topics.events);
    let meter = new ProcessMeter(system.pids());
    const idleRss = meter.rss();
    const heapIdle =
      opts.system === 'worker'
        ? sum(await Promise.all(env.workers.map((w) => heapUsed(w.metricsPort))))
        : NaN;

    // Where a phase's work goes besides CPU: Kafka transactions the workers committed and Redis commands the
    // server ran (the workers are its only clients here), per order of the phase.
    const kafkaTransactions = async (): Promise<number> =>
      opts.system === 'worker'
        ? sum(
            await Promise.all(
              env.workers
                .filter(alive)
                .map((w) => metricSum(w.metricsPort, 'worker_kafka_transactions_total')),
            ),
          )
        : NaN;
    const costMark = async (): Promise<{ transactions: number; redis: number }> => ({
      transactions: await kafkaTransactions(),
      redis: await redisCommandCount(opts.redisUrl),
    });
    const costPerOrder = async (
      since: { transactions: number; redis: number },
      count: number,
    ): Promise<PhaseCosts> => {
      const now = await costMark();
      return {
        kafkaTransactionsPerOrder: round((now.transactions - since.transactions) / Math.max(1, count), 2),
        redisCommandsPerOrder: round((now.redis - since.redis) / Math.max(1, count), 2),
      };
    };

    // Cores busy over a phase: the system's from `meter` (marked with it), the exchange's and the machine's here.
    // The broker's and Redis's too: what the system's durability costs the machine beyond its own process.
    const kafkaPid = pidServing(opts.kafkaBrokers[0]);
    const redisPid = pidServing(opts.redisUrl);
    const coresMark = (): {
      at: number;
      exchange: number;
      kafka: number;
      redis: number;
      machine: number;
    } => ({
      at: Date.now(),
      exchange: cpuSecondsOf(system.exchangePid),
      kafka: cpuSecondsOf(kafkaPid),
      redis: cpuSecondsOf(redisPid),
      machine: machineBusySeconds(),
    });
    const coresSince = (mark: ReturnType<typeof coresMark>, systemCpu: number): PhaseCores => {
      const now = coresMark();
      const seconds = Math.max(0.001, (now.at - mark.at) / 1000);
      const coresOf = (key: 'exchange' | 'kafka' | 'redis'): number | null => {
        const cores = (now[key] - mark[key]) / seconds;
        return Number.isFinite(cores) ? round(cores, 2) : null;
      };
      return {
        system: round(systemCpu / seconds, 2),
        exchange: coresOf('exchange'),
        kafka: coresOf('kafka'),
        redis: coresOf('redis'),
        machine: round((now.machine - mark.machine) / seconds, 2),
      };
    };

    // ---- order.create -> order.created
    const createMark = await costMark();
    const run = randomBytes(3).toString('hex');
    const planned = benchOrders(opts.orders, `bench-${run}`);
    const sentAt = new Map<string, number>();
    const t0 = Date.now();
    meter.mark();
    const createCoresMark = coresMark();
    const acked = await producer.sendAll(planned.map((p) => p.command));
    planned.forEach((p, i) => sentAt.set(p.orderId, acked[i] ?? t0));
    const created = await collector.waitForCount('order.created', opts.orders, opts.capMs);
    if (created < opts.orders) capped.push(`created: ${created} of ${opts.orders} within ${opts.capMs} ms`);
    const createdEvents = collector.events.filter((e) => e.type === 'order.created');
    const createdMs = Math.max(...createdEvents.map((e) => e.receivedAt)) - t0;
    const createCpu = sum(meter.cpuSinceMark());
    const createCores = coresSince(createCoresMark, createCpu);
    const createCosts = await costPerOrder(createMark, created);
    const latencies = createdEvents.map((e) => e.receivedAt - (sentAt.get(String(e.order_id)) ?? NaN));

    /** RSS and heap per order 2 s from now, over the processes' idle figures (null for the floor). */
    const memoryPerOrder = async (
      count: number,
    ): Promise<{ rss: number[]; perOrder: OrderMemory | null }> => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const rss = meter.rss();
      if (opts.system !== 'worker') return { rss, perOrder: null };
      const heap = sum(await Promise.all(env.workers.filter(alive).map((w) => heapUsed(w.metricsPort))));
      return {
        rss,
        perOrder: {
          count,
          rssKiBPerOrder: round((sum(rss) - sum(idleRss)) / 1024 / Math.max(1, count), 2),
          heapKiBPerOrder: Number.isFinite(heap - heapIdle)
            ? round((heap - heapIdle) / 1024 / Math.max(1, count), 2)
            : null,
        },
      };
    };

    // ---- N open orders: memory
    const { rss: openRss, perOrder: openOrders } = await memoryPerOrder(created);
    let peakRss = meter.peakRss();

    // ---- restore: a fresh replica takes the N open orders over
    let restore: ThroughputResult['restore'] = null;
    if (opts.restore && !opts.createOnly && opts.system === 'worker' && opts.workers === 1) {
      const old = env.workers[0]!;
      await old.kill('SIGTERM');
      meter.stop();
      const startedAt = Date.now();
      const fresh = await startWorker(`${old.name}-restored`, env.env, env.webhookPort);
      env.workers.push(fresh);
      await fresh.ready(300_000);
      restore = { openOrders: created, readyMs: Date.now() - startedAt, emptyBootMs: system.bootMs };
      meter = new ProcessMeter(system.pids());
    }

    // ---- exchange COMPLETED -> order.completed
    const completeMark = await costMark();
    const t1 = Date.now();
    meter.mark();
    const completeCoresMark = coresMark();
    // Paced at 500 orders/s (above every target), 50 orders per request to the sandbox's admin API: advancing 10k
    // orders at once queues some 40k webhook deliveries at once and starves them (the first full run, with the
    // sandbox in this process, saw no completion at all in 100 s, for the floor and the worker alike).
    // The cap covers the whole phase, the pacing included (a system that answers each webhook slowly slows the
    // advances too: the floor's 10k once took over three minutes to advance).
    // And no faster than the deliveries go out: the next orders move only while fewer than
    // `maxPendingDeliveries` webhooks are queued or in flight. Without it, once the worker accepted every
    // connection of a burst (it refused those past 256 before), the sandbox held some 4,000 deliveries at once,
    // answered the worker's GETs too late (12,668 timeouts) and 141 of 10k orders completed in 100 s: a measure of
    // the exchange simulator collapsing, not of the system under test. (The sandbox and the pass-through then ran in
    // this process beside the event reader; they have a process of their own since.) Orders advanced are timed from
    // their own advance (the request that moved them leaving), so the wait is not counted against anyone's latency.
    const maxPendingDeliveries = 1_000;
    const within = opts.createOnly ? undefined : opts.completeWithinMs?.();
    const completionSkipped =
      within !== undefined && within < minCompleteMs
        ? `${Math.max(0, Math.round(within / 1000))} s left for it, at least ${minCompleteMs / 1000} s needed`
        : undefined;
    const createOnly = opts.createOnly === true || completionSkipped !== undefined;
    const toComplete = createOnly ? [] : createdEvents;
    const completeCapMs = createOnly
      ? 0
      : Math.min(opts.completeCapMs ?? opts.capMs, within ?? Number.POSITIVE_INFINITY);
    const deadline = t1 + completeCapMs;
    let advanced = 0;
    const advancedAt = new Map<string, number>();
    for (let i = 0; i < toComplete.length && Date.now() < deadline; i += 50) {
      while ((await env.sandbox.webhooksPending()) >= maxPendingDeliveries && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const batch = toComplete.slice(i, i + 50);
      const at = Date.now();
      for (const e of batch) advancedAt.set(String(e.order_id), at);
      await env.sandbox.advanceOrders(
        batch.map((e) => String(e['unique_reference'])),
        'completed',
      );
      advanced = Math.min(toComplete.length, i + 50);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const completed = await collector.waitForCount(
      'order.completed',
      advanced,
      Math.max(0, deadline - Date.now()),
    );
    if (completed < created && !createOnly)
      capped.push(`completed: ${completed} of ${created} within ${completeCapMs} ms (${advanced} advanced)`);
    const completedEvents = collector.events.filter((e) => e.type === 'order.completed');
    const completedMs = Math.max(t1, ...completedEvents.map((e) => e.receivedAt)) - t1;
    const completeCpu = sum(meter.cpuSinceMark());
    const completeCores = coresSince(completeCoresMark, completeCpu);
    const completeLatencies = completedEvents.map(
      (e) => e.receivedAt - (advancedAt.get(String(e.order_id)) ?? NaN),
    );
    const completeCosts = await costPerOrder(completeMark, completed);

    // ---- N finished orders: memory (against the idle figures before the first command)
    const { perOrder: finishedOrders } = createOnly ? { perOrder: null } : await memoryPerOrder(completed);
    peakRss = peakRss.map((v, i) => Math.max(v, meter.peakRss()[i] ?? 0));
    meter.stop();
    await producer.close();
    await collector.stop();
    // The exchange's records, read from its process once the run is over: each phase's calls by their start.
    const calls = await exchange.calls();
    const createCalls = callsIn(calls, t0, t0 + createdMs);
    const completeCalls = callsIn(calls, t1, t1 + completedMs);
    const byEndpoint: Record<string, number> = {};
    for (const c of calls) byEndpoint[endpointOf(c)] = (byEndpoint[endpointOf(c)] ?? 0) + 1;
    const exchangeOrders = await env.sandbox.orders.list();

    return {
      system: opts.system,
      workers: opts.system === 'worker' ? opts.workers : 1,
      orders: opts.orders,
      created,
      createdMs,
      createdPerSecond: round((created / createdMs) * 1000),
      createLatencyMs: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: Math.max(...latencies),
      },
      createCpuMsPerOrder: round((createCpu * 1000) / Math.max(1, created), 2),
      createCores,
      completed,
      completedMs,
      completedPerSecond: round((completed / Math.max(1, completedMs)) * 1000),
      completeCpuMsPerOrder: round((completeCpu * 1000) / Math.max(1, completed), 2),
      completeCores,
      completeLatencyMs: {
        p50: percentile(completeLatencies, 50),
        p99: percentile(completeLatencies, 99),
        max: Math.max(...completeLatencies),
      },
      rssMiB: { idle: idleRss.map(mib), open: openRss.map(mib), peak: peakRss.map(mib) },
      openOrders,
      finishedOrders,
      restore,
      exchangeCallsPerOrder: {
        create: round(createCalls / Math.max(1, created), 2),
        complete: round(completeCalls / Math.max(1, completed), 2),
      },
      costs: { create: createCosts, complete: completeCosts },
      webhookOutcomes: webhookOutcomes(await env.sandbox.webhookOutcomes()),
      exchangeCallsByEndpoint: byEndpoint,
      exchangeOrders: exchangeOrders.length,
      duplicateExchangeOrders:
        exchangeOrders.length -
        new Set(exchangeOrders.map((o) => `${o.mode} ${String(o.order['deposit_amount'])}`)).size,
      capped,
      ...(completionSkipped ? { completionSkipped } : {}),
    };
  } finally {
    await system.stop();
  }
}

/**
 * What the whole machine spends per created order in a phase (CPU ms of every process, from /proc/stat), and the
 * creation rate that cost would allow with every CPU of the machine busy: the ceiling no scheduling of the same work
 * passes. Beside the floor's rate it says whether a ratio is out of reach at this cost per order, on this machine.
 */
export function machineCeiling(
  createdPerSecond: number,
  cores: Pick<PhaseCores, 'machine'>,
  cpuCount: number = cpus().length,
): { machineMsPerOrder: number; ordersPerSecond: number } {
  const machineMsPerOrder = (cores.machine * 1000) / createdPerSecond;
  return { machineMsPerOrder, ordersPerSecond: (cpuCount * 1000) / machineMsPerOrder };
}

/** The machine's CPU per created order of a phase and of the floor's, and the ceiling that cost allows, in words. */
export function describeCeiling(
  r: Pick<ThroughputResult, 'createdPerSecond' | 'createCores'>,
  floor: Pick<ThroughputResult, 'createdPerSecond' | 'createCores'>,
): string {
  const own = machineCeiling(r.createdPerSecond, r.createCores);
  const floors = machineCeiling(floor.createdPerSecond, floor.createCores);
  return `machine CPU per created order ${own.machineMsPerOrder.toFixed(2)} ms (floor's ${floors.machineMsPerOrder.toFixed(2)}); with all ${cpus().length} CPUs busy at that cost ${own.ordersPerSecond.toFixed(0)} orders/s = ${(own.ordersPerSecond / floor.createdPerSecond).toFixed(2)}x the floor`;
}

/** "system 0.93, exchange 0.37, Kafka broker 0.24, Redis 0.05, machine 1.71 of 2": a process near 1 is bound by its one thread. */
export function describeCores(cores: PhaseCores, processes: number): string {
  const system = processes > 1 ? `system ${cores.system} (${processes} processes)` : `system ${cores.system}`;
  const exchange = cores.exchange === null ? '' : `, exchange ${cores.exchange}`;
  const kafka = cores.kafka == null ? '' : `, Kafka broker ${cores.kafka}`;
  const redis = cores.redis == null ? '' : `, Redis ${cores.redis}`;
  return `${system}${exchange}${kafka}${redis}, machine ${cores.machine} of ${cpus().length}`;
}

export function printThroughput(r: ThroughputResult, floor?: ThroughputResult): void {
  const name = r.system === 'floor' ? 'floor' : `worker x${r.workers}`;
  const ratio = (a: number, b: number | undefined): string =>
    b === undefined || !Number.isFinite(b) || b === 0 ? '' : `  (${(a / b).toFixed(2)}x floor)`;
  console.log(`  ${name}, ${r.orders} orders${r.capped.length ? `  CAPPED: ${r.capped.join('; ')}` : ''}`);
  console.log(
    `    order.create -> order.created   ${r.created} in ${r.createdMs} ms = ${r.createdPerSecond} orders/s${ratio(r.createdPerSecond, floor?.createdPerSecond)}; latency p50 ${r.createLatencyMs.p50} ms p99 ${r.createLatencyMs.p99} ms`,
  );
  console.log(
    `    CPU per created order           ${r.createCpuMsPerOrder} ms${ratio(r.createCpuMsPerOrder, floor?.createCpuMsPerOrder)}; exchange calls ${r.exchangeCallsPerOrder.create} per order`,
  );
  console.log(`    cores busy while creating       ${describeCores(r.createCores, r.workers)}`);
  if (floor && r.system === 'worker' && r.createdPerSecond > 0 && floor.createdPerSecond > 0)
    console.log(`    machine-wide ceiling            ${describeCeiling(r, floor)}`);
  if (r.completionSkipped) console.log(`    COMPLETED -> order.completed    skipped: ${r.completionSkipped}`);
  else if (r.completed === 0 && r.completedMs === 0)
    console.log('    COMPLETED -> order.completed    not measured (creation only)');
  else
    console.log(
      `    COMPLETED -> order.completed    ${r.completed} in ${r.completedMs} ms = ${r.completedPerSecond} orders/s${ratio(r.completedPerSecond, floor?.completedPerSecond)}; CPU ${r.completeCpuMsPerOrder} ms per order${ratio(r.completeCpuMsPerOrder, floor?.completeCpuMsPerOrder)}; exchange calls ${r.exchangeCallsPerOrder.complete} per order; latency p50 ${r.completeLatencyMs.p50} ms p99 ${r.completeLatencyMs.p99} ms max ${r.completeLatencyMs.max} ms`,
    );
  if (!r.completionSkipped && r.completed > 0)
    console.log(`    cores busy while completing     ${describeCores(r.completeCores, r.workers)}`);
  console.log(
    `    Kafka transactions per order    create ${r.costs.create.kafkaTransactionsPerOrder}, complete ${r.costs.complete.kafkaTransactionsPerOrder}; Redis commands per order create ${r.costs.create.redisCommandsPerOrder}, complete ${r.costs.complete.redisCommandsPerOrder}`,
  );
  console.log(
    `    webhook deliveries              ${Object.entries(r.webhookOutcomes)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')}`,
  );
  console.log(
    `    RSS MiB per process             idle ${r.rssMiB.idle.join('/')}  with orders open ${r.rssMiB.open.join('/')}  peak ${r.rssMiB.peak.join('/')}`,
  );
  console.log(
    `    exchange orders ${r.exchangeOrders} for ${r.orders} orders (${r.duplicateExchangeOrders} duplicated); calls ${Object.entries(
      r.exchangeCallsByEndpoint,
    )
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')}`,
  );
  if (r.openOrders)
    console.log(
      `    per open order (${r.openOrders.count})          RSS ${r.openOrders.rssKiBPerOrder} KiB  heap ${r.openOrders.heapKiBPerOrder ?? '-'} KiB (all replicas together)`,
    );
  if (r.finishedOrders)
    console.log(
      `    per finished order (${r.finishedOrders.count})      RSS ${r.finishedOrders.rssKiBPerOrder} KiB  heap ${r.finishedOrders.heapKiBPerOrder ?? '-'} KiB (all replicas together)`,
    );
  if (r.restore)
    console.log(
      `    restore of ${r.restore.openOrders} open orders     fresh replica ready in ${r.restore.readyMs} ms (on empty topics: ${r.restore.emptyBootMs} ms)`,
    );
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  const orders = Number(process.env['BENCH_ORDERS'] ?? 300);
  const workers = Number(process.env['BENCH_WORKERS'] ?? 1);
  const common = {
    kafkaBrokers: services.kafkaBrokers,
    redisUrl: services.redisUrl,
    orders,
    capMs: Number(process.env['BENCH_CAP_MS'] ?? 300_000),
    partitions: Number(process.env['BENCH_PARTITIONS'] ?? 6),
  };
  // BENCH_FLOOR=0 skips the floor (a before/after comparison of the worker alone).
  const floor =
    process.env['BENCH_FLOOR'] === '0'
      ? undefined
      : await runThroughput({ ...common, system: 'floor', workers: 1 });
  // BENCH_CREATE_ONLY=1: creation only, as the 50k phase of `npm run bench` (no completion, no restore).
  const createOnly = process.env['BENCH_CREATE_ONLY'] === '1';
  const worker = await runThroughput({
    ...common,
    system: 'worker',
    workers,
    restore: workers === 1 && !createOnly,
    createOnly,
  });
  console.log(
    `throughput: ${orders} orders (1/3 DeFi, 1/3 CeFi, 1/3 CeFi fixed-rate), ${common.partitions} partitions`,
  );
  if (floor) printThroughput(floor);
  printThroughput(worker, floor);
  console.log(`  wrote ${await saveResult(`worker-throughput-${orders}-x${workers}`, { floor, worker })}`);
  await services.stop();
}
