// Worker throughput and memory: one real worker process, a real Kafka and Redis, the sandbox as exchange.
// Sends N order.create commands (a third each DeFi, CeFi, CeFi fixed-rate), measures command-to-order.created
// latency and throughput, then drives every order to COMPLETED on the exchange and measures how long the worker
// takes to confirm them all (webhook hint -> GET). Samples the worker's RSS throughout. Prints its figures.
//
//   node bench/worker-throughput.ts            # 300 orders
//   BENCH_ORDERS=1000 node bench/worker-throughput.ts
import { servicesDown, servicesUp } from '../dev/services/index.ts';
import { demoConfig } from '../src/sandbox/index.ts';
import { EventCollector, commandProducer, testKafka } from '../test/support/kafka-helpers.ts';
import { planOrders } from '../test/support/order-specs.ts';
import { startWorkerEnvironment } from '../test/support/worker-environment.ts';

const total = Number(process.env['BENCH_ORDERS'] ?? 300);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function rss(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(/^process_resident_memory_bytes (\d+)/m.exec(text)?.[1] ?? NaN);
}

const services = await servicesUp({ log: (line) => console.error(`[services] ${line}`) });
const env = await startWorkerEnvironment({
  kafkaBrokers: services.endpoints.kafkaBrokers,
  redisUrl: services.endpoints.redisUrl,
  workers: 1,
  partitions: 6,
  sandbox: (config) => ({
    ...config,
    quotes: { ttlSeconds: 600, actionableDelayMs: 50 },
    limits: {
      sameChainFixedRateQuotesPerMinute: 100_000,
      crossChainFixedRateQuotesPerMinute: 100_000,
      globalRequestsPerMinute: 100_000,
    },
  }),
  env: { API_BUDGET_PER_MINUTE: '100000', LOG_LEVEL: 'warn' },
  baseConfig: demoConfig,
});
const worker = env.workers[0]!;
const kafka = testKafka(services.endpoints.kafkaBrokers);
const producer = await commandProducer(kafka, env.topics.commands);
const collector = await EventCollector.start(kafka, env.topics.events);
const sentAt = new Map<string, number>();
let peakRss = await rss(worker.metricsPort);
const idleRss = peakRss;
const sampler = setInterval(
  () =>
    void rss(worker.metricsPort).then(
      (v) => (peakRss = Math.max(peakRss, v)),
      () => {},
    ),
  250,
);

const started = Date.now();
for (const order of planOrders(total, { variant: 0, orderId: (i) => `bench-${started}-${i}` })) {
  sentAt.set(order.orderId, Date.now());
  await producer.send(order.command);
}
const sendMs = Date.now() - started;
await collector.waitFor(
  (events) => events.filter((e) => e.type === 'order.created').length >= total,
  `${total} orders created`,
  600_000,
);
const createdMs = Date.now() - started;
const latencies = collector.events
  .filter((e) => e.type === 'order.created' && e.order_id)
  .map((e) => Date.parse(e.occurred_at) - (sentAt.get(e.order_id!) ?? NaN));

const completeStart = Date.now();
for (const event of collector.events.filter((e) => e.type === 'order.created'))
  env.sandbox.advanceOrder(String(event['unique_reference']), 'completed');
await collector.waitFor(
  (events) => events.filter((e) => e.type === 'order.completed').length >= total,
  `${total} orders completed`,
  600_000,
);
const completeMs = Date.now() - completeStart;
clearInterval(sampler);
const finalRss = await rss(worker.metricsPort);
const events = collector.events.length;

console.log(
  `worker throughput benchmark: ${total} orders (1/3 DeFi, 1/3 CeFi, 1/3 CeFi fixed-rate), 1 worker, 6 partitions`,
);
console.log(`  commands sent in            ${sendMs} ms`);
console.log(
  `  all order.created after     ${createdMs} ms  (${((total / createdMs) * 1000).toFixed(1)} orders/s)`,
);
console.log(
  `  command -> order.created    p50 ${percentile(latencies, 50)} ms  p95 ${percentile(latencies, 95)} ms  max ${Math.max(...latencies)} ms`,
);
console.log(
  `  exchange COMPLETED -> all order.completed  ${completeMs} ms  (${((total / completeMs) * 1000).toFixed(1)} orders/s)`,
);
console.log(`  events published            ${events}  (${(events / total).toFixed(1)} per order)`);
console.log(
  `  worker RSS                  idle ${(idleRss / 2 ** 20).toFixed(0)} MiB  peak ${(peakRss / 2 ** 20).toFixed(0)} MiB  after ${(finalRss / 2 ** 20).toFixed(0)} MiB`,
);

await producer.close();
await collector.stop();
await env.stop();
if (services.started.kafka || services.started.redis) await servicesDown(services.started);
