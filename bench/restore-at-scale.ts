// Restore of a partition holding N open orders, and what those orders cost a replica at rest. N records of open CeFi
// orders waiting for their deposit - clones of one record the real host, journal and XState binding wrote
// (bench/open-order-memory.ts), each with its own order id, exchange reference, create hash, deposit address,
// amounts, rate, random state and times (what differs from one real order to the next; see cloneRecord), next poll a
// day ahead - are written to the state topic of a one-partition topic set. A real worker process then starts on it
// and restores them (leases in the real Redis, passivation on as by default). Measured: spawn to /readyz (every
// partition restored) beside the same worker's start on empty topics; RSS and heap of the restored replica over the
// empty one, per order, at rest: once each replica ran its memory-reducing collection after the restore (it waits
// for the restore's follow-up; the time from ready to it is reported), over 15 s (heap: the least of one sample a
// second), RSS after them; the orders it drives and how many of them rest (its gauges).
//
//   BENCH_RESTORE_ORDERS=10000,100000 node bench/restore-at-scale.ts
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CompressionTypes } from 'kafkajs';
// The worker's own codec: the records are written as the worker writes its state topic (zstd), so a restore reads
// and decompresses what it would read in production (GZIP here cost the restore a gunzip on zlib's thread pool).
import { zstdTotals } from '../src/kafka/zstd-codec.ts';
import { startWorker } from '../test/support/worker-process.ts';
import { createCommandValue, inProcessHost } from './open-order-memory.ts';
import { ProcessMeter, benchServices, heapUsed, metricSum, mib, round, saveResult } from './lib/harness.ts';
import { startBenchSystem } from './worker-throughput.ts';

export interface RestoreResult {
  orders: number;
  /** Bytes of one record as written (JSON). */
  recordBytes: number;
  /** The records' bytes over their compressed bytes, as the benchmark's producer wrote them (zstd, 1,000 a batch). */
  compression: number;
  writeMs: number;
  /** Spawn to ready on empty topics, and with the N records. */
  emptyBootMs: number;
  readyMs: number;
  /**
   * Ready to at rest: until every replica ran its memory-reducing collection after its restore
   * (worker_heap_reductions_total{reason="restore"}); the memory figures are taken after it. Capped (restCapMs).
   */
  atRestMs: number;
  /** Replicas whose collection after the restore had not run within the cap (their figures hold the restore's read). */
  notAtRest: number;
  /** What the worker said once ready: orders it drives, and how many rest without an actor. */
  activeOrders: number;
  passivatedOrders: number;
  rssMiB: { empty: number; restored: number };
  heapMiB: { empty: number; restored: number };
  rssKiBPerOrder: number;
  heapKiBPerOrder: number;
  /** Replicas that restored the orders together (1: the one fresh replica above). */
  replicas: number;
  partitions: number;
  /**
   * With several replicas, each one's share: the orders it drives, its RSS and heap at rest, and what it holds over
   * an empty replica per order of all N (a third each is the target with 3).
   */
  perReplica: { activeOrders: number; rssMiB: number; heapMiB: number; shareOfOne: number }[];
}

// The share of each of several replicas, and the restore part's verdicts: bench/lib/restore-figures.ts.
export { replicaShares } from './lib/restore-figures.ts';

/** The production lease ttl (the test environment's 6 s would renew 100k leases every 2 s). */
const benchEnv = { LEASE_TTL_MS: '15000', MAX_ACTIVE_ORDERS: '1000000' };
const settleMs = Number(process.env['BENCH_RESTORE_SETTLE_MS'] ?? 15_000);
const staggerMs = Number(process.env['BENCH_RESTORE_STAGGER_MS'] ?? 0);
const restCapMs = 120_000;

/**
 * The heap a process keeps: the least heapUsed sampled every second over `ms` (the figure just after a collection;
 * a single sample may hold any amount of garbage).
 */
async function restingHeap(metricsPort: number, ms: number): Promise<number> {
  let least = Infinity;
  for (const until = Date.now() + ms; Date.now() < until; await sleep(1_000))
    least = Math.min(least, await heapUsed(metricsPort));
  return least;
}

interface Template {
  text: string;
  orderId: string;
  reference: string;
  /** The template's values that differ between orders (cloneRecord replaces them in each clone). */
  values: {
    createHash: string;
    rngState: number;
    order: { depositAddress: string; depositAmount: string; withdrawAmount: string; rate: string };
  };
}

/**
 * The template's record made another order's: its order id, reference and partition, and, so that the state topic
 * compresses as one of distinct orders does, the values that differ between real orders: the create command's
 * hash, the deposit address the exchange gave, the amounts and rate, the machine's random state, its times. Clones
 * of one record that differed only in ids compressed about 100x in batches of 1,000 (40-80x as fetched) and decoded
 * to 20-40 MiB per 1 MiB fetched.
 */
export function cloneRecord(
  template: Template,
  i: number,
  partitions: number,
  run: string,
): { key: string; value: string } {
  const { values } = template;
  const orderId = `rs-${run}-${i.toString(36).padStart(10, '0')}`;
  const reference = `X${run}${i.toString(36).padStart(8, '0')}`.toUpperCase();
  const deposit = 0.01 + Math.random() * 10;
  const rate = 0.05 * (0.95 + Math.random() * 0.1);
  const hash = `v2:${randomBytes(16).toString('hex')}`;
  const replacements: [string, string][] = [
    [template.orderId, orderId],
    [template.reference, reference],
    [values.createHash, hash],
    [
      `"depositAddress":"${values.order.depositAddress}"`,
      `"depositAddress":"0x${randomBytes(20).toString('hex')}"`,
    ],
    // The request's and the exchange's order's alike (the template has the same amount in both).
    [`"depositAmount":"${values.order.depositAmount}"`, `"depositAmount":"${deposit.toFixed(8)}"`],
    [
      `"withdrawAmount":"${values.order.withdrawAmount}"`,
      `"withdrawAmount":"${(deposit * rate).toFixed(8)}"`,
    ],
    [`"rate":"${values.order.rate}"`, `"rate":"${rate.toFixed(8)}"`],
    [`"rngState":${values.rngState},`, `"rngState":${randomBytes(4).readUInt32LE(0) >>> 1},`],
    // The record names its partition (the one its order's commands arrive on): the clone's, not the template's.
    ['"partition":0,', `"partition":${i % partitions},`],
  ];
  let text = template.text;
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`the template record has no ${from}`);
    text = text.split(from).join(to);
  }
  // Its times, every one moved by the same few seconds later (the order came a little after the template's).
  const later = Math.floor(Math.random() * 60_000);
  text = text
    .replace(/(?<=[:,])1\d{12}(?=[,}])/g, (ms) => String(Number(ms) + later))
    .replace(/"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"/g, (_, iso: string) =>
      JSON.stringify(new Date(Date.parse(iso) + later).toISOString()),
    );
  return { key: orderId, value: text };
}

/** One open CeFi order's state record as the real host wrote it, and the strings that make it this order. */
export async function templateRecord(): Promise<Template> {
  const { host, records, created } = inProcessHost(true);
  const orderId = 'tmpl-order-0000000000';
  host.setAssignment([0]);
  await host.handleMessage({
    topic: 'commands',
    partition: 0,
    offset: '0',
    key: orderId,
    value: createCommandValue(orderId, 0),
  });
  for (let i = 0; i < 500 && (created() < 1 || host.passivatedOrders < 1); i++) await sleep(10);
  const record = records.get(orderId);
  if (!record?.unique_reference || host.passivatedOrders !== 1)
    throw new Error('the template order did not come to rest');
  await host.unloadAll();
  const { context } = record.machine as { context: Omit<Template['values'], 'createHash'> };
  return {
    text: JSON.stringify(record),
    orderId,
    reference: record.unique_reference,
    values: { createHash: record.create_hash, rngState: context.rngState, order: context.order },
  };
}

export async function runRestore(opts: {
  kafkaBrokers: string[];
  redisUrl: string;
  orders: number;
  /** Fresh replicas restoring the orders together (default 1); their topics then have 6 partitions. */
  replicas?: number;
}): Promise<RestoreResult> {
  const replicas = opts.replicas ?? 1;
  const partitions = replicas === 1 ? 1 : 6;
  const template = await templateRecord();
  const system = await startBenchSystem({
    kafkaBrokers: opts.kafkaBrokers,
    redisUrl: opts.redisUrl,
    system: 'worker',
    workers: 1,
    partitions,
    env: benchEnv,
  });
  try {
    const { env } = system;
    const first = env.workers[0]!;
    const emptyBootMs = system.bootMs;
    const empty = {
      rss: new ProcessMeter([first.child.pid ?? 0]),
      heap: await restingHeap(first.metricsPort, 5_000),
    };
    const emptyRss = empty.rss.rss()[0] ?? NaN;
    empty.rss.stop();
    await first.kill('SIGTERM');

    // ---- N records of open orders on the one state partition
    const run = randomBytes(3).toString('hex');
    const producer = system.kafka.producer();
    await producer.connect();
    const writeStarted = Date.now();
    const zstdBefore = { ...zstdTotals };
    const batch = 1_000;
    for (let from = 0; from < opts.orders; from += batch) {
      const messages = [];
      for (let i = from; i < Math.min(opts.orders, from + batch); i++) {
        messages.push({ ...cloneRecord(template, i, partitions, run), partition: i % partitions });
      }
      await producer.send({
        topic: `${env.topics.commands}.state`,
        compression: CompressionTypes.ZSTD,
        messages,
      });
    }
    const writeMs = Date.now() - writeStarted;
    const compression = round(
      (zstdTotals.bytesIn - zstdBefore.bytesIn) / Math.max(1, zstdTotals.bytesOut - zstdBefore.bytesOut),
      1,
    );
    await producer.disconnect();

    // ---- fresh replicas restore them (started together, so the group forms once; BENCH_RESTORE_STAGGER_MS starts
    // each that much after the one before, which has the group form in rounds, moving partitions mid-restore)
    const started = Date.now();
    const fresh = await Promise.all(
      Array.from({ length: replicas }, async (_, i) => {
        await sleep(i * staggerMs);
        return startWorker(
          `${first.name}-restored${replicas === 1 ? '' : `-${i + 1}`}`,
          env.env,
          // The sandbox's webhooks go to the first one's port (none come: the orders rest a day).
          i === 0 ? env.webhookPort : undefined,
        );
      }),
    );
    env.workers.push(...fresh);
    await Promise.all(fresh.map((w) => w.ready(600_000)));
    // Every partition owned once and every order driven: with several replicas the group may have moved
    // partitions after the first ones were ready.
    const driven = async (): Promise<number[]> =>
      Promise.all(fresh.map((w) => metricSum(w.metricsPort, 'worker_active_orders')));
    for (let i = 0; i < 600; i++) {
      const owned = await Promise.all(fresh.map((w) => metricSum(w.metricsPort, 'worker_partitions_owned')));
      const sum = (await driven()).reduce((a, b) => a + b, 0);
      if (owned.reduce((a, b) => a + b, 0) === partitions && sum === opts.orders) break;
      await sleep(500);
    }
    const readyMs = Date.now() - started;
    // At rest: the replica gives the restore's garbage back with a memory-reducing collection once the restore's
    // follow-up (the routes it publishes to Redis) is done, seconds after ready on a loaded machine. Measured after it.
    const readyAt = Date.now();
    // Memory-reducing collections each replica ran after a restore (NaN before its first: no series yet).
    let reduced: number[] = [];
    for (; Date.now() - readyAt < restCapMs; await sleep(250)) {
      reduced = await Promise.all(
        fresh.map((w) => metricSum(w.metricsPort, 'worker_heap_reductions_total', { reason: 'restore' })),
      );
      if (reduced.every((n) => n >= 1)) break;
    }
    const atRestMs = Date.now() - readyAt;
    const notAtRest = reduced.filter((n) => !(n >= 1)).length;
    const heaps = await Promise.all(fresh.map((w) => restingHeap(w.metricsPort, settleMs)));
    const meter = new ProcessMeter(fresh.map((w) => w.child.pid ?? 0));
    const rss = meter.rss();
    meter.stop();
    const active = await driven();
    const passive = await Promise.all(fresh.map((w) => metricSum(w.metricsPort, 'worker_passivated_orders')));
    const restoredRss = rss.reduce((a, b) => a + b, 0);
    const restoredHeap = heaps.reduce((a, b) => a + b, 0);
    const over = (total: number, baseline: number): number => total - replicas * baseline;
    return {
      orders: opts.orders,
      recordBytes: Buffer.byteLength(template.text),
      compression,
      writeMs,
      emptyBootMs,
      readyMs,
      atRestMs,
      notAtRest,
      activeOrders: active.reduce((a, b) => a + b, 0),
      passivatedOrders: passive.reduce((a, b) => a + b, 0),
      rssMiB: { empty: mib(emptyRss), restored: mib(restoredRss) },
      heapMiB: { empty: mib(empty.heap), restored: mib(restoredHeap) },
      rssKiBPerOrder: round(over(restoredRss, emptyRss) / 1024 / opts.orders, 2),
      heapKiBPerOrder: round(over(restoredHeap, empty.heap) / 1024 / opts.orders, 2),
      replicas,
      partitions,
      perReplica:
        replicas === 1
          ? []
          : fresh.map((_, i) => ({
              activeOrders: active[i] ?? NaN,
              rssMiB: mib(rss[i] ?? NaN),
              heapMiB: mib(heaps[i] ?? NaN),
              // This replica's RSS over an empty one, as a share of all replicas' together.
              shareOfOne: round(((rss[i] ?? NaN) - emptyRss) / over(restoredRss, emptyRss), 3),
            })),
    };
  } finally {
    await system.stop();
  }
}

export function printRestore(r: RestoreResult): void {
  const where =
    r.replicas === 1
      ? 'one partition'
      : `${r.partitions} partitions, ${r.replicas} fresh replicas started together`;
  console.log(
    `  ${r.orders} open orders on ${where} (${r.recordBytes} B per record, ${r.compression}x smaller compressed, written in ${r.writeMs} ms): ready in ${r.readyMs} ms (one replica on empty topics: ${r.emptyBootMs} ms); driving ${r.activeOrders}, ${r.passivatedOrders} at rest; memory given back ${r.atRestMs} ms after ready${r.notAtRest ? ` (NOT by ${r.notAtRest} replica(s) within ${restCapMs} ms: their figures hold the restore's read)` : ''}`,
  );
  console.log(
    `    RSS ${r.rssMiB.empty} (empty replica) -> ${r.rssMiB.restored} MiB = ${r.rssKiBPerOrder} KiB per order; heap ${r.heapMiB.empty} -> ${r.heapMiB.restored} MiB = ${r.heapKiBPerOrder} KiB per order${r.replicas === 1 ? '' : ' (all replicas together, each over an empty one)'}`,
  );
  for (const [i, share] of r.perReplica.entries())
    console.log(
      `    replica ${i + 1}: driving ${share.activeOrders}, RSS ${share.rssMiB} MiB, heap ${share.heapMiB} MiB; ${round(share.shareOfOne * 100, 1)} % of the orders' memory`,
    );
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  const sizes = (process.env['BENCH_RESTORE_ORDERS'] ?? '10000').split(',').map(Number);
  const replicas = Number(process.env['BENCH_RESTORE_REPLICAS'] ?? 1);
  const results: RestoreResult[] = [];
  for (const orders of sizes) {
    const r = await runRestore({
      kafkaBrokers: services.kafkaBrokers,
      redisUrl: services.redisUrl,
      orders,
      replicas,
    });
    printRestore(r);
    results.push(r);
  }
  console.log(`  wrote ${await saveResult('restore-at-scale', results)}`);
  await services.stop();
}
