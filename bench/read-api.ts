// The read API at 10k open orders (target: GET /orders/{id} p99 < 50 ms from any replica). N records of open CeFi
// orders (clones of one record the real host wrote: bench/restore-at-scale.ts cloneRecord) are written to a
// two-partition state topic; two fresh worker replicas restore them (each owns one partition and holds its orders in
// its read view; src/fleet/fleet-peers.ts asks the other replica for the rest). Then each replica is asked for random
// orders, GET /orders/{id} with the bearer token, 4 at a time: the latencies are split by whether the asked replica
// owns the order's partition (answered from its own view) or asks the owner (one more HTTP hop); half of every
// replica's requests are of each kind. Also: a page of GET /orders?state=open&limit=100 (merged from both replicas),
// and the read view's own heap per order, measured in this process on the same records: open orders in a worker's
// view (it shares the state store's records), open orders in a copying view (the inspector's and the console's),
// and finished orders.
//
//   BENCH_READ_API_ORDERS=10000 node bench/read-api.ts
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CompressionTypes } from 'kafkajs';
import { forwardedHeader } from '../src/fleet/fleet-peers.ts';
import { FleetView } from '../src/fleet/fleet-view.ts';
import { startWorker } from '../test/support/worker-process.ts';
import { benchServices, machine, metricSum, percentile, round, saveResult } from './lib/harness.ts';
import { cloneRecord, templateRecord } from './restore-at-scale.ts';
import { startBenchSystem } from './worker-throughput.ts';

const orders = Number(process.env['BENCH_READ_API_ORDERS'] ?? 10_000);
const requestsPerReplica = Number(process.env['BENCH_READ_API_REQUESTS'] ?? 2_000);
const concurrency = 4;
const token = `bench-${randomBytes(8).toString('hex')}`;
const targetP99Ms = 50;

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

function heap(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

type ViewRecord = Parameters<FleetView['apply']>[0];

function parsed(text: string, finished: boolean): ViewRecord {
  const record = JSON.parse(text) as Record<string, unknown>;
  if (finished) {
    record['terminal'] = true;
    (record['machine'] as Record<string, unknown>)['resumeFrom'] = 'completed';
  }
  return record as unknown as ViewRecord;
}

/**
 * Heap the read view holds per order beyond the records themselves. `shared`: a worker's view, whose records the
 * state store holds anyway (parsed first and kept alive outside the measurement). Otherwise each record is parsed as
 * the store hands it over, applied and dropped, so what stays is what the view keeps of it (a copy of its summary).
 */
function viewMemory(records: string[], finished: boolean, shared: boolean): number {
  const view = new FleetView({ sharesRecords: shared });
  const held = shared ? records.map((text) => parsed(text, finished)) : [];
  const before = heap();
  if (shared) for (const record of held) view.apply(record);
  else for (const text of records) view.apply(parsed(text, finished));
  const after = heap();
  if (view.size !== records.length || held.length !== (shared ? records.length : 0))
    throw new Error('the view lost orders');
  return (after - before) / records.length;
}

interface Timed {
  ms: number;
  /** The asked replica owns the order's partition (answered from its own view, no hop). */
  local: boolean;
  status: number;
}

async function ask(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ ms: number; status: number; body: unknown }> {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  const body = await response.json();
  return { ms: performance.now() - started, status: response.status, body };
}

async function main(): Promise<void> {
  const services = await benchServices();
  const template = await templateRecord();
  const run = randomBytes(3).toString('hex');
  const partitions = 2;
  const records = Array.from({ length: orders }, (_, i) => cloneRecord(template, i, partitions, run));
  const texts = records.map((r) => r.value);
  const openSharedBytes = viewMemory(texts, false, true);
  const openCopiedBytes = viewMemory(texts, false, false);
  const finishedBytes = viewMemory(texts, true, true);
  const system = await startBenchSystem({
    kafkaBrokers: services.kafkaBrokers,
    redisUrl: services.redisUrl,
    system: 'worker',
    workers: 1,
    partitions,
    env: { LEASE_TTL_MS: '15000', MAX_ACTIVE_ORDERS: '1000000', OPS_API_TOKEN: token },
  });
  try {
    const { env } = system;
    const first = env.workers[0]!;
    await first.kill('SIGTERM');
    const producer = system.kafka.producer();
    await producer.connect();
    for (let from = 0; from < orders; from += 1_000)
      await producer.send({
        topic: `${env.topics.commands}.state`,
        compression: CompressionTypes.ZSTD,
        messages: records
          .slice(from, from + 1_000)
          .map((r, i) => ({ ...r, partition: (from + i) % partitions })),
      });
    await producer.disconnect();
    const replicas = await Promise.all(
      [1, 2].map((i) =>
        startWorker(`${first.name}-read-${i}`, env.env, i === 1 ? env.webhookPort : undefined),
      ),
    );
    env.workers.push(...replicas);
    await Promise.all(replicas.map((w) => w.ready(600_000)));
    for (let i = 0; i < 600; i++) {
      const known = await Promise.all(replicas.map((w) => metricSum(w.metricsPort, 'worker_known_orders')));
      const owned = await Promise.all(
        replicas.map((w) => metricSum(w.metricsPort, 'worker_partitions_owned')),
      );
      if (known.every((n) => n >= orders) && owned.every((n) => n === 1)) break;
      await sleep(500);
    }
    // At rest first: each replica ran its memory-reducing collection after its restore (the restore's follow-up, the
    // routes it publishes to Redis, is over), then a warm-up of 200 requests each.
    for (let i = 0; i < 480; i++) {
      const reduced = await Promise.all(
        replicas.map((w) => metricSum(w.metricsPort, 'worker_heap_reductions_total', { reason: 'restore' })),
      );
      if (reduced.every((n) => n >= 1)) break;
      await sleep(250);
    }
    // Warm-up: 200 requests to each replica.
    for (const replica of replicas)
      for (let i = 0; i < 200; i++)
        await ask(replica.metricsPort, `/orders/${encodeURIComponent(records[i]!.key)}`);
    // Which partition each replica holds: its own view's first order (a request marked as passed on by a peer is
    // answered from the asked replica's view only).
    const ownPartition = await Promise.all(
      replicas.map(async (replica) => {
        const page = await ask(replica.metricsPort, '/orders?state=open&limit=1', {
          [forwardedHeader]: 'bench',
        });
        const first = (page.body as { orders?: { partition: number }[] }).orders?.[0];
        if (!first) throw new Error(`${replica.name} holds no order of its own`);
        return first.partition;
      }),
    );
    if (new Set(ownPartition).size !== replicas.length)
      throw new Error(`replicas hold ${ownPartition.join(', ')}`);
    const loadAtStart = (await import('node:os')).loadavg();
    const timings: Timed[][] = [];
    for (const [index, replica] of replicas.entries()) {
      const own: Timed[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < requestsPerReplica) {
            next++;
            const record = records[Math.floor(Math.random() * records.length)]!;
            const answer = await ask(replica.metricsPort, `/orders/${encodeURIComponent(record.key)}`);
            const body = answer.body as { order?: { partition?: number } };
            own.push({
              ms: answer.ms,
              status: answer.status,
              local: body.order?.partition === ownPartition[index],
            });
          }
        }),
      );
      timings.push(own);
    }
    const all = timings.flat();
    const failed = all.filter((t) => t.status !== 200).length;
    const figures = (list: Timed[]) => {
      const ms = list.map((t) => t.ms);
      return {
        requests: ms.length,
        p50Ms: round(percentile(ms, 50), 2),
        p95Ms: round(percentile(ms, 95), 2),
        p99Ms: round(percentile(ms, 99), 2),
        maxMs: round(Math.max(...ms), 2),
      };
    };
    // The same replicas' /healthz at the same pace: what the machine's own scheduling costs a request (no view, no
    // Redis), beside which the read API's figures are read.
    const health: number[] = [];
    for (const replica of replicas) {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < requestsPerReplica / 2) {
            next++;
            const started = performance.now();
            await (await fetch(`http://127.0.0.1:${replica.metricsPort}/healthz`)).text();
            health.push(performance.now() - started);
          }
        }),
      );
    }
    const pages: number[] = [];
    for (let i = 0; i < 50; i++)
      pages.push((await ask(replicas[i % 2]!.metricsPort, '/orders?state=open&limit=100')).ms);
    const result = {
      orders,
      replicas: replicas.length,
      partitions,
      concurrency,
      failed,
      getOrder: figures(all),
      getOrderFromOwnView: figures(all.filter((t) => t.local)),
      getOrderAskedOfOwner: figures(all.filter((t) => !t.local)),
      listOpenPage100: {
        requests: pages.length,
        p50Ms: round(percentile(pages, 50), 2),
        p99Ms: round(percentile(pages, 99), 2),
      },
      healthzBaseline: {
        requests: health.length,
        p50Ms: round(percentile(health, 50), 2),
        p99Ms: round(percentile(health, 99), 2),
      },
      viewHeapBytesPerOrder: {
        open: Math.round(openSharedBytes),
        openCopied: Math.round(openCopiedBytes),
        finished: Math.round(finishedBytes),
      },
      targetP99Ms,
      met:
        failed === 0 &&
        percentile(
          all.map((t) => t.ms),
          99,
        ) < targetP99Ms,
      loadAverageAtMeasurement: loadAtStart.map((l) => round(l, 2)),
      machine: machine(),
      at: new Date().toISOString(),
    };
    const file = await saveResult('read-api', result);
    const f = (x: ReturnType<typeof figures>) =>
      `${x.requests} requests, p50 ${x.p50Ms} ms, p95 ${x.p95Ms} ms, p99 ${x.p99Ms} ms, max ${x.maxMs} ms`;
    console.log(
      `read API: ${orders} open orders, ${replicas.length} replicas (one partition each), ${concurrency} requests at a time`,
    );
    console.log(`  GET /orders/{id}, any replica:     ${f(result.getOrder)} (${failed} not 200)`);
    console.log(`    from its own view:               ${f(result.getOrderFromOwnView)}`);
    console.log(`    asked of the owner:              ${f(result.getOrderAskedOfOwner)}`);
    console.log(
      `  GET /orders?state=open&limit=100:  p50 ${result.listOpenPage100.p50Ms} ms, p99 ${result.listOpenPage100.p99Ms} ms`,
    );
    console.log(
      `  read view heap per order: ${result.viewHeapBytesPerOrder.open} B open (a worker's, sharing the store's records; ${result.viewHeapBytesPerOrder.openCopied} B copied, as the inspector's), ${result.viewHeapBytesPerOrder.finished} B finished (${round((result.viewHeapBytesPerOrder.open * orders) / 2 ** 20, 2)} MiB for ${orders} open orders, held only by their owner)`,
    );
    console.log(
      `  machine load average when measured: ${result.loadAverageAtMeasurement.join(', ')} (2 cores)`,
    );
    console.log(`  target p99 < ${targetP99Ms} ms: ${result.met ? 'met' : 'MISSED'}; ${file}`);
  } finally {
    await system.stop();
    await services.stop();
  }
}

await main();
