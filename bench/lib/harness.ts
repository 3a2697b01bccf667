// Shared pieces of the benchmarks: the profile (BENCH_SCALE), the services, batched command production, an event
// reader that notes when each event arrived, per-process CPU and RSS from /proc, percentiles, target verdicts and
// the JSON result files under bench/results/. The timing pass-through in front of the exchange is in
// timed-exchange.ts (re-exported here), so that the exchange's own process (exchange-process.ts) loads no more.
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka, Consumer, Producer } from 'kafkajs';
import { format, resolveConfig } from 'prettier';
import { servicesUp, type ServiceEndpoints } from '../../dev/services/index.ts';
import { modeSpecs, orderCreateCommand } from '../../test/support/order-specs.ts';
import { uniqueName } from '../../test/support/unique-name.ts';

export {
  startTimedExchange,
  timedExchangeView,
  type TimedCall,
  type TimedExchange,
} from './timed-exchange.ts';

export const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const resultsDir = join(benchDir, 'results');

// ---- profile --------------------------------------------------------------------------------------------------

export interface Profile {
  name: 'small' | 'full';
  /** Order counts of the throughput runs. */
  sizes: number[];
  /** Worker counts of the throughput runs. */
  workerCounts: number[];
  /** Longest a phase (all created / all completed) may take before the run reports what it reached. */
  phaseCapMs: (orders: number) => number;
  latencyOrders: number;
  economyOrders: number;
  /** Open CeFi orders per rung of the listing ladder (one key, 2500 requests/min). */
  listingOrders: number[];
  /** Open orders on one partition that a fresh replica restores (bench/restore-at-scale.ts). */
  restoreOrders: number[];
}

export function profile(): Profile {
  const scale = process.env['BENCH_SCALE'] ?? 'full';
  if (scale === 'small')
    return {
      name: 'small',
      sizes: [300],
      workerCounts: [1, 3],
      phaseCapMs: () => 60_000,
      latencyOrders: 60,
      economyOrders: 12,
      listingOrders: [500],
      restoreOrders: [2_000],
    };
  if (scale !== 'full') throw new Error(`BENCH_SCALE must be small or full, not ${scale}`);
  return {
    name: 'full',
    sizes: [1_000, 10_000],
    workerCounts: [1, 3],
    // 10k orders at the worker's present rate would take far longer than the 20 minutes the whole run may use:
    // such a phase stops at its cap and reports how far it got.
    phaseCapMs: (orders) => (orders >= 10_000 ? 100_000 : 60_000),
    latencyOrders: 200,
    economyOrders: 30,
    // The target's rung only: each rung creates its orders through a worker first (10k: about 8 minutes here), and
    // the whole ladder would not fit the run's 20 minutes (BENCH_LISTING_ORDERS runs any ladder on its own).
    listingOrders: [10_000],
    restoreOrders: [10_000, 100_000],
  };
}

// ---- services -------------------------------------------------------------------------------------------------

export async function benchServices(): Promise<ServiceEndpoints & { stop: () => Promise<void> }> {
  const { servicesDown } = await import('../../dev/services/index.ts');
  const services = await servicesUp({ log: (line) => console.error(`[services] ${line}`) });
  return {
    ...services.endpoints,
    stop: async () => {
      if (services.started.kafka || services.started.redis) await servicesDown(services.started);
    },
  };
}

export function machine(): Record<string, unknown> {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    node: process.version,
    loadAverageAtStart: loadavg().map((v) => Number(v.toFixed(2))),
  };
}

// ---- commands in batches --------------------------------------------------------------------------------------

export async function batchProducer(
  kafka: Kafka,
  topic: string,
): Promise<{
  sendAll: (commands: Record<string, unknown>[], batch?: number) => Promise<number[]>;
  close: () => Promise<void>;
}> {
  const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  return {
    /** Sends the commands keyed by order_id, `batch` per request; returns when each command was acknowledged. */
    sendAll: async (commands, batch = 500) => {
      const ackedAt: number[] = [];
      for (let i = 0; i < commands.length; i += batch) {
        const slice = commands.slice(i, i + batch);
        await producer.send({
          topic,
          messages: slice.map((c) => ({ key: String(c['order_id']), value: JSON.stringify(c) })),
        });
        const now = Date.now();
        for (let j = 0; j < slice.length; j++) ackedAt.push(now);
      }
      return ackedAt;
    },
    close: () => producer.disconnect(),
  };
}

// ---- events, with the time each arrived -----------------------------------------------------------------------

export interface TimedEvent {
  type: string;
  order_id: string | null;
  seq: number;
  occurred_at: string;
  receivedAt: number;
  [field: string]: unknown;
}

export class TimedCollector {
  readonly events: TimedEvent[] = [];
  readonly counts = new Map<string, number>();
  #consumer: Consumer | undefined;

  /** `groupId`: a group of its own by default (a test may join it to make it rebalance). */
  static async start(
    kafka: Kafka,
    topic: string,
    groupId = uniqueName('bench-reader'),
  ): Promise<TimedCollector> {
    const collector = new TimedCollector();
    const consumer = kafka.consumer({
      groupId,
      readUncommitted: false,
      maxWaitTimeInMs: 50,
    });
    collector.#consumer = consumer;
    /** The last offset read, per partition. */
    const read = new Map<number, number>();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      // A reader of its own, always from the beginning: it commits no offsets. Committing after every batch (kafkajs'
      // default) cost the broker an OffsetCommit per batch of events, about 3,200 during a 10k creation on the
      // worker (whose events arrive in more, smaller batches than the floor's), 29 % of the broker's requests.
      autoCommit: false,
      eachMessage: ({ partition, message }) => {
        // A starved benchmark process that misses its group's session timeout rejoins with nothing committed, so it
        // reads the topic again from the start: what it has already read is not counted twice.
        const offset = Number(message.offset);
        if (offset <= (read.get(partition) ?? -1)) return Promise.resolve();
        read.set(partition, offset);
        const value = JSON.parse(message.value?.toString() ?? 'null') as TimedEvent;
        value.receivedAt = Date.now();
        collector.events.push(value);
        collector.counts.set(value.type, (collector.counts.get(value.type) ?? 0) + 1);
        return Promise.resolve();
      },
    });
    return collector;
  }

  count(type: string): number {
    return this.counts.get(type) ?? 0;
  }

  /** Waits until `count` events of `type` arrived or `capMs` passed; returns how many there were. */
  async waitForCount(type: string, count: number, capMs: number): Promise<number> {
    const deadline = Date.now() + capMs;
    while (this.count(type) < count && Date.now() < deadline) await sleep(20);
    return this.count(type);
  }

  async stop(): Promise<void> {
    await this.#consumer?.disconnect();
  }
}

// ---- Kafka's own share of an event's latency ---------------------------------------------------------------

/**
 * The floor under any "event visible" latency on this broker: one record per transaction (a transactional,
 * idempotent kafkajs producer, as the worker's writer), `samples` of them `paceMs` apart, from the send to a
 * read_committed reader (the same `TimedCollector` the benchmarks read events with) seeing it. Measured in the same
 * run as the figure it is compared with.
 */
export async function kafkaTransactionFloor(
  kafka: Kafka,
  opts: { samples: number; paceMs: number; partitions?: number },
): Promise<{
  samples: number;
  commitMs: { p50: number; p99: number };
  visibleMs: { p50: number; p99: number };
}> {
  const topic = uniqueName('bench-txn-floor');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: opts.partitions ?? 6 }],
    waitForLeaders: true,
  });
  const producer = kafka.producer({ transactionalId: topic, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const collector = await TimedCollector.start(kafka, topic);
  try {
    await sleep(1_000);
    const sentAt = new Map<string, number>();
    const commitMs: number[] = [];
    for (let i = 0; i < opts.samples; i++) {
      const key = `floor-${i}`;
      const value = JSON.stringify({
        type: 'floor',
        order_id: key,
        seq: i,
        occurred_at: new Date().toISOString(),
      });
      const started = Date.now();
      sentAt.set(key, started);
      const transaction = await producer.transaction();
      await transaction.send({ topic, messages: [{ key, value }] });
      await transaction.commit();
      commitMs.push(Date.now() - started);
      await sleep(opts.paceMs);
    }
    await collector.waitForCount('floor', opts.samples, 10_000);
    const visible = collector.events.map(
      (e) => e.receivedAt - (sentAt.get(String(e.order_id)) ?? e.receivedAt),
    );
    return {
      samples: visible.length,
      commitMs: { p50: percentile(commitMs, 50), p99: percentile(commitMs, 99) },
      visibleMs: { p50: percentile(visible, 50), p99: percentile(visible, 99) },
    };
  } finally {
    await collector.stop();
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
  }
}

// ---- CPU and RSS of processes ---------------------------------------------------------------------------------

const ticksPerSecond = 100; // USER_HZ on Linux

export interface ProcSample {
  cpuSeconds: number;
  rssBytes: number;
}

export function procSample(pid: number): ProcSample | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
    return { cpuSeconds: (utime + stime) / ticksPerSecond, rssBytes: rssKb * 1024 };
  } catch {
    return undefined;
  }
}

/** CPU seconds a process has spent so far; NaN when it is not known or no longer runs. */
export function cpuSecondsOf(pid: number | undefined): number {
  return pid === undefined ? NaN : (procSample(pid)?.cpuSeconds ?? NaN);
}

/**
 * The process serving a service's address (a Kafka broker's `host:port`, a `redis://` URL): the one listening on
 * its port, found in /proc/net/tcp{,6} and the processes' open sockets; undefined when no process of this machine
 * this user may inspect listens there (a remote service).
 */
export function pidServing(address: string | undefined): number | undefined {
  const port = Number(/:(\d+)\/?$/.exec(address ?? '')?.[1] ?? NaN);
  if (!Number.isInteger(port)) return undefined;
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      // st 0A: LISTEN
      if (!local || fields[3] !== '0A') continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port && fields[9])
        inodes.add(fields[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined && inodes.has(inode)) return Number(entry);
    }
  }
  return undefined;
}

/** CPU seconds the machine's processes have spent so far (/proc/stat: user, nice, system, irq, softirq). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq) / ticksPerSecond;
}

/** Samples a set of processes every 250 ms: CPU used between mark() and stop(), peak RSS. */
export class ProcessMeter {
  readonly #pids: number[];
  readonly #peak = new Map<number, number>();
  readonly #timer: NodeJS.Timeout;
  #marks = new Map<number, number>();

  constructor(pids: number[]) {
    this.#pids = pids;
    this.mark();
    this.#timer = setInterval(() => this.#sample(), 250);
  }

  #sample(): void {
    for (const pid of this.#pids) {
      const s = procSample(pid);
      if (s) this.#peak.set(pid, Math.max(this.#peak.get(pid) ?? 0, s.rssBytes));
    }
  }

  mark(): void {
    this.#marks = new Map(this.#pids.map((pid) => [pid, procSample(pid)?.cpuSeconds ?? 0]));
  }

  /** CPU seconds per process since the last mark(). */
  cpuSinceMark(): number[] {
    return this.#pids.map((pid) => cpuSecondsOf(pid) - (this.#marks.get(pid) ?? 0));
  }

  rss(): number[] {
    return this.#pids.map((pid) => procSample(pid)?.rssBytes ?? NaN);
  }

  peakRss(): number[] {
    this.#sample();
    return this.#pids.map((pid) => this.#peak.get(pid) ?? NaN);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/**
 * A metric of a worker's /metrics, summed over its label sets that include every one of `labels` (NaN when no
 * sample matches: the worker does not export it).
 */
export async function metricSum(
  metricsPort: number,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let sum = 0;
  let seen = false;
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)`, 'gm'))) {
    const labelSet = match[1] ?? '';
    if (!Object.entries(labels).every(([key, value]) => labelSet.includes(`${key}="${value}"`))) continue;
    sum += Number(match[2]);
    seen = true;
  }
  return seen ? sum : NaN;
}

/** The same, 0 when no sample matches (a counter not yet incremented). */
export async function labelledMetric(
  port: number,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const sum = await metricSum(port, name, labels);
  return Number.isNaN(sum) ? 0 : sum;
}

/** V8 heap in use, from a worker's /metrics (the OTel runtime instrumentation's v8js_memory_heap_used, summed). */
export async function heapUsed(metricsPort: number): Promise<number> {
  const bytes = await metricSum(metricsPort, 'v8js_memory_heap_used_bytes');
  return Number.isNaN(bytes) ? metricSum(metricsPort, 'v8js_memory_heap_used') : bytes;
}

/** Commands the Redis server has executed so far (INFO commandstats, every command summed). */
export async function redisCommandCount(redisUrl: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const info = await redis.info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  } finally {
    redis.disconnect();
  }
}

// ---- figures --------------------------------------------------------------------------------------------------

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

export const round = (value: number, digits = 1): number => Number(value.toFixed(digits));
export const mib = (bytes: number): number => round(bytes / 2 ** 20, 1);

export interface Verdict {
  figure: string;
  value: number | null;
  unit: string;
  target: string;
  verdict: 'met' | 'missed' | 'not measured' | 'reported';
  note?: string;
}

/** A figure the summary shows beside the targets without judging it: no target applies to it as measured. */
export function reported(figure: string, value: number | null, unit: string, note: string): Verdict {
  const measured = value !== null && Number.isFinite(value);
  return {
    figure,
    value: measured ? round(value, 2) : null,
    unit,
    target: 'none',
    verdict: 'reported',
    note,
  };
}

export function verdict(
  figure: string,
  value: number | null,
  unit: string,
  target: { op: '>=' | '<' | '<='; bound: number },
  note?: string,
): Verdict {
  const measured = value !== null && Number.isFinite(value);
  const holds = (v: number): boolean =>
    target.op === '>=' ? v >= target.bound : target.op === '<' ? v < target.bound : v <= target.bound;
  const ok = measured && holds(value);
  // Two decimals, or as many more as it takes for the figure shown to fall on the same side of the bound as the
  // figure measured (0.402 is shown as 0.402 against a bound of 0.40, not as 0.4 beside "missed").
  let digits = 2;
  while (measured && digits < 6 && holds(round(value, digits)) !== ok) digits++;
  return {
    figure,
    value: measured ? round(value, digits) : null,
    unit,
    target: `${target.op} ${target.bound} ${unit}`,
    verdict: measured ? (ok ? 'met' : 'missed') : 'not measured',
    ...(note ? { note } : {}),
  };
}

export function printVerdicts(verdicts: Verdict[]): void {
  const width = Math.max(...verdicts.map((v) => v.figure.length));
  for (const v of verdicts)
    console.log(
      `  ${v.figure.padEnd(width)}  ${String(v.value ?? '-').padStart(9)} ${v.unit.padEnd(9)} target ${v.target.padEnd(16)} ${v.verdict.toUpperCase()}${v.note ? `  (${v.note})` : ''}`,
    );
}

/**
 * The name of a run's summary: `summary-<profile>` for a whole run, `summary-<profile>-only-<part>` for one part
 * (BENCH_ONLY), so that a part run alone never replaces the summary of the last whole run.
 */
export function summaryName(profile: string, only: string | undefined): string {
  return only ? `summary-${profile}-only-${only}` : `summary-${profile}`;
}

/** Writes bench/results/<name>.json, formatted as the repository's prettier check expects. */
export async function saveResult(name: string, data: unknown): Promise<string> {
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${name}.json`);
  const options = (await resolveConfig(file)) ?? {};
  writeFileSync(file, await format(JSON.stringify(data), { ...options, parser: 'json' }));
  return file;
}

// ---- orders ---------------------------------------------------------------------------------------------------

/**
 * `count` order.create commands cycling through the three modes, each amount unique and inside the pair's limits
 * for up to 100k orders: base × (1 + i/100 000), with as many decimals as that step needs (test/support's
 * planOrders adds i/1000, which leaves the BTC pair's 5 BTC maximum after about 5 000 orders).
 */
export function benchOrders(
  count: number,
  prefix: string,
): { orderId: string; command: Record<string, unknown> }[] {
  return Array.from({ length: count }, (_, i) => {
    const spec = modeSpecs[i % modeSpecs.length] ?? modeSpecs[0];
    const step = spec.base / 100_000;
    const decimals = Math.max(0, Math.ceil(-Math.log10(step)));
    const orderId = `${prefix}-${i}`;
    return {
      orderId,
      command: orderCreateCommand(spec.mode, (spec.base + i * step).toFixed(decimals), orderId),
    };
  });
}
