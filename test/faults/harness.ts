// The fault suite's harness around a real cluster (sandbox + worker processes on real Kafka and Redis): start a
// fault run (the cluster, its supervisor, the exchange's side and a span receiver, torn down in reverse), find the
// replica driving an order (its Redis lease names the process), drive exchange orders to an outcome once the
// worker reports them created, wait for every order to end, and check the run with the one invariant checker.
import { appendFileSync, mkdirSync } from 'node:fs';
import { expect } from 'vitest';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import {
  checkInvariants,
  checkedInvariants,
  formatViolations,
  terminalTypes,
} from '../support/invariants.ts';
import type { AcceptedOrder, InvariantName, SubmittedDeposit, Violation } from '../support/invariants.ts';
import { testKafka, type PublishedEvent } from '../support/kafka-helpers.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { recordRun } from '../support/run-record.ts';
import { services } from '../support/services.ts';
import type { SandboxConfigInput } from '../../sandbox/index.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';
import { mulberry32, runSeed } from './seeds.ts';
import { startWorker, type WorkerProcess } from '../support/worker-process.ts';

const terminal: ReadonlySet<string> = new Set(terminalTypes);
const root = resolve(import.meta.dirname, '..', '..');
export const figuresFile = join(root, '.services', 'fault-figures.jsonl');

/** An order's ending: its terminal event, or a parked event with nothing after it. */
export function endingOf(events: PublishedEvent[]): PublishedEvent | undefined {
  const sorted = events
    .filter((e) => e.seq > 0 && e.type !== 'command.rejected')
    .sort((a, b) => a.seq - b.seq);
  const end = sorted.find((e) => terminal.has(e.type));
  if (end) return end;
  const last = sorted.at(-1);
  return last?.type === 'order.parked' ? last : undefined;
}

/** The worker process whose Redis lease holds the order now, if any. */
export async function leaseHolder(
  cluster: Cluster,
  redisUrl: string,
  orderId: string,
): Promise<WorkerProcess | undefined> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const value = await redis.get(`eow:${cluster.env['CONSUMER_GROUP']}:lease:{${orderId}}`);
    if (!value) return undefined;
    // "<fence>:<worker id>:<pid>:<nonce>"
    const pid = Number(value.split(':').at(-2));
    return cluster.workers.find((w) => w.child.pid === pid && w.child.exitCode === null);
  } finally {
    redis.disconnect();
  }
}

export type Outcome = 'completed' | 'refunded' | 'canceled';

/**
 * Plays the exchange's side: each exchange order the worker reports created is walked to the outcome chosen for
 * its order. Runs until stopped; returns the stop function.
 */
export function driveExchangeOrders(
  cluster: Cluster,
  outcomeOf: (orderId: string) => Outcome,
  /** How long the exchange waits after seeing order.created before it walks the order (default at once). */
  delayOf: (orderId: string) => number = () => 0,
): { stop: () => Promise<void>; driven: Set<string> } {
  const driven = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  let running = true;
  const walk = (reference: string, outcome: Outcome): void => {
    try {
      if (outcome === 'refunded') cluster.sandbox.advanceOrder(reference, 'confirmed');
      cluster.sandbox.advanceOrder(reference, outcome);
    } catch {
      /* already further along (e.g. the payment window lapsed): the exchange decides */
    }
  };
  const loop = (async () => {
    while (running) {
      for (const event of cluster.collector.events) {
        if (event.type !== 'order.created' || event.order_id === null) continue;
        const reference = String(event['unique_reference']);
        if (driven.has(reference)) continue;
        driven.add(reference);
        const outcome = outcomeOf(event.order_id);
        const delayMs = delayOf(event.order_id);
        if (delayMs <= 0) walk(reference, outcome);
        else {
          const timer = setTimeout(() => {
            timers.delete(timer);
            walk(reference, outcome);
          }, delayMs);
          timers.add(timer);
        }
      }
      await sleep(200);
    }
  })();
  return {
    driven,
    stop: async () => {
      running = false;
      await loop;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

/** Waits until every order has ended or the time is up; returns the orders that did not end. */
export async function awaitEndings(
  cluster: Cluster,
  orderIds: string[],
  timeoutMs: number,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = orderIds.filter((id) => !endingOf(cluster.collector.of(id)));
    if (open.length === 0 || Date.now() > deadline) return open;
    await sleep(500);
  }
}

export interface CheckedRun {
  violations: Violation[];
  checked: InvariantName[];
  report: string;
}

/**
 * Reads the state topic, the sandbox's record and the spans the workers exported, and runs the invariant checker
 * over the whole run.
 */
export async function checkRun(
  cluster: Cluster,
  orders: AcceptedOrder[],
  kafkaBrokers: string[] = services().kafkaBrokers,
  spans?: OtlpReceiver,
  deposits?: SubmittedDeposit[],
): Promise<CheckedRun> {
  // The workers export spans in batches every 200 ms: let the last ones arrive.
  if (spans) await sleep(1_500);
  const history = await recordRun({
    kafka: testKafka(kafkaBrokers),
    stateTopic: `${cluster.topics.commands}.state`,
    sandbox: cluster.sandbox,
    workers: cluster.workers,
    orders,
    events: cluster.collector.events,
    ...(spans ? { spans: spans.spans } : {}),
    ...(deposits ? { deposits } : {}),
  });
  const violations = checkInvariants(history);
  return { violations, checked: checkedInvariants(history), report: formatViolations(violations) };
}

/** Appends one line of figures for docs/faults.md (git-ignored file under .services/). */
export function recordFigures(figures: Record<string, unknown>): void {
  mkdirSync(join(root, '.services'), { recursive: true });
  appendFileSync(figuresFile, `${JSON.stringify({ at: new Date().toISOString(), ...figures })}\n`);
  console.log(`[fault figures] ${JSON.stringify(figures)}`);
}

/** A short history of an order for failure reports. */
export function historyOf(cluster: Cluster, orderId: string): string {
  return cluster.collector
    .of(orderId)
    .map(
      (e) =>
        `#${e.seq} ${e.type}${typeof e['status'] === 'string' ? ` ${e['status']}` : ''}${typeof e['reason'] === 'string' ? ` (${e['reason']})` : ''}${typeof e['unique_reference'] === 'string' ? ` ${e['unique_reference']}` : ''}`,
    )
    .join(', ');
}

/**
 * Plays the supervisor (Kubernetes restarting a pod): a worker that exits by itself - the worker stops on purpose
 * when its Kafka writer fails for good, so that another replica takes over - is started again under the same
 * WORKER_ID (and port, for the webhook receiver) after `delayMs`. Workers the test kills on purpose are passed to
 * `ignore` first. Returns the restarts made, by name.
 */
export function superviseWorkers(
  cluster: Cluster,
  opts: { delayMs?: number } = {},
): { ignore: (worker: WorkerProcess) => void; restarts: string[]; stop: () => Promise<void> } {
  const ignored = new Set<WorkerProcess>();
  const restarts: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const worker of [...cluster.workers]) {
        if (ignored.has(worker) || worker.child.exitCode === null) continue;
        if (worker.child.signalCode !== null) continue; // killed by a signal: the test did it
        ignored.add(worker);
        await sleep(opts.delayMs ?? 2_000);
        if (!running) break;
        const again = await startWorker(worker.name, cluster.env, worker.port);
        cluster.workers.push(again);
        restarts.push(worker.name);
        console.log(`[supervisor] ${worker.name} exited with ${worker.child.exitCode}; started again`);
      }
      await sleep(500);
    }
  })();
  return {
    ignore: (worker) => ignored.add(worker),
    restarts,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Cleanups of a test, run in reverse order of registration (the last resource born is the first let go). */
export function cleanupStack(): { defer: (cleanup: () => unknown) => void; run: () => Promise<void> } {
  const cleanups: Array<() => unknown> = [];
  return {
    defer: (cleanup) => cleanups.push(cleanup),
    run: async () => {
      while (cleanups.length)
        await Promise.resolve()
          .then(cleanups.pop())
          .catch(() => {});
    },
  };
}

/** The workers of a fault run fail over fast: a dead replica's partitions move after 6 s (the broker's minimum). */
export const fastFailover: Record<string, string> = {
  KAFKA_SESSION_TIMEOUT_MS: '6000',
  LEASE_TTL_MS: '6000',
};

/** Quotes that live long and arrive after `actionableDelayMs`, and fixed-rate quote limits out of the way. */
export function faultSandbox(actionableDelayMs: number) {
  return (config: SandboxConfigInput): SandboxConfigInput => ({
    ...config,
    quotes: { ttlSeconds: 300, actionableDelayMs },
    limits: { sameChainFixedRateQuotesPerMinute: 10_000, crossChainFixedRateQuotesPerMinute: 10_000 },
  });
}

export interface FaultRun {
  cluster: Cluster;
  supervisor: ReturnType<typeof superviseWorkers>;
  driver: ReturnType<typeof driveExchangeOrders>;
  /** Every span the workers exported (OTLP/HTTP JSON), checked for secrets with the rest of the run. */
  spans: OtlpReceiver;
  /** The run's seed (printed; FAULT_SEED replays it) and its PRNG. */
  seed: number;
  random: () => number;
  /** The outcome the exchange gives each order (completed when not set). */
  outcomes: Map<string, Outcome>;
  /** How long the exchange waits after an order's order.created before walking it (at once when not set). */
  driveDelays: Map<string, number>;
  /** Draws the orders' outcomes from the run's PRNG: 60 % completed, 20 % refunded, 20 % canceled. */
  drawOutcomes: (orders: AcceptedOrder[]) => void;
  /** Stops the exchange's side and runs the invariant checker over the run (and its deposits, when given). */
  check: (orders: AcceptedOrder[], deposits?: SubmittedDeposit[]) => Promise<CheckedRun>;
}

/**
 * A fault run: a seed (printed), a cluster on the provisioned services (or a broker / Redis of the test's own), fast
 * failover, spans exported to a receiver of the run, the suite's supervisor, and the exchange's side walking every
 * created order to its outcome. Everything started is handed to `defer` for cleanup, in order of birth.
 */
export async function startFaultRun(opts: {
  name: string;
  defer: (cleanup: () => unknown) => void;
  workers: number;
  partitions: number;
  /** Default: a fresh run seed (runSeed()). */
  seed?: number;
  actionableDelayMs?: number;
  kafkaBrokers?: string[];
  redisUrl?: string;
  env?: Record<string, string>;
}): Promise<FaultRun> {
  const seed = opts.seed ?? runSeed();
  console.log(`[${opts.name}] seed ${seed} (replay with FAULT_SEED=${seed})`);
  const random = mulberry32(seed);
  const outcomes = new Map<string, Outcome>();
  const driveDelays = new Map<string, number>();
  const spans = await startOtlpReceiver();
  opts.defer(() => spans.close());
  const cluster = await startCluster({
    workers: opts.workers,
    partitions: opts.partitions,
    ...(opts.kafkaBrokers ? { kafkaBrokers: opts.kafkaBrokers } : {}),
    ...(opts.redisUrl ? { redisUrl: opts.redisUrl } : {}),
    sandboxSeed: seed,
    sandbox: faultSandbox(opts.actionableDelayMs ?? 800),
    env: {
      ...fastFailover,
      OTEL_EXPORTER_OTLP_ENDPOINT: spans.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      ...opts.env,
    },
  });
  opts.defer(() => cluster.stop());
  const supervisor = superviseWorkers(cluster);
  opts.defer(() => supervisor.stop());
  const driver = driveExchangeOrders(
    cluster,
    (orderId) => outcomes.get(orderId) ?? 'completed',
    (orderId) => driveDelays.get(orderId) ?? 0,
  );
  opts.defer(() => driver.stop());
  return {
    cluster,
    supervisor,
    driver,
    spans,
    seed,
    random,
    outcomes,
    driveDelays,
    drawOutcomes: (orders) => {
      for (const o of orders) {
        const r = random();
        outcomes.set(o.orderId, r < 0.6 ? 'completed' : r < 0.8 ? 'refunded' : 'canceled');
      }
    },
    check: async (orders, deposits) => {
      await driver.stop();
      return checkRun(cluster, orders, opts.kafkaBrokers, spans, deposits);
    },
  };
}

/**
 * Ends a fault run: waits for every order to end, runs the invariant checker, records the figures, and fails with
 * the seed and the history of every order that did not end or broke an invariant.
 */
export async function finishFaultRun(
  { cluster, supervisor, check, seed }: FaultRun,
  orders: AcceptedOrder[],
  opts: {
    test: string;
    endingTimeoutMs: number;
    /** The run's own figures, read once every order has ended (faults fired, endings, ...). */
    figures?: () => Record<string, unknown>;
  },
): Promise<void> {
  const open = await awaitEndings(
    cluster,
    orders.map((o) => o.orderId),
    opts.endingTimeoutMs,
  );
  const run = await check(orders);
  const figures = opts.figures?.() ?? {};
  recordFigures({
    test: opts.test,
    seed,
    ...figures,
    orders: orders.length,
    exchangeOrders: cluster.sandbox.orders.list().length,
    unfinished: open.length,
    workerExitsRestarted: supervisor.restarts,
    violations: run.violations.length,
    checked: run.checked,
  });
  const named = [...new Set([...open, ...run.violations.flatMap((v) => (v.orderId ? [v.orderId] : []))])];
  expect(
    run.report,
    `seed ${seed} (FAULT_SEED=${seed} replays it); ${JSON.stringify(figures)}\n${named.map((id) => `${id}${open.includes(id) ? ' (unfinished)' : ''}: ${historyOf(cluster, id)}`).join('\n')}`,
  ).toBe('');
}
