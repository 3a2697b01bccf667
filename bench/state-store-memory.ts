// What the state store itself keeps per order, apart from the rest of the process (actors, GC slack): V8 heap
// after a forced GC, in one process, against a real Kafka (the store reads its partitions up to a barrier first).
// Records are copies of a real finished CeFi order's record (bench/fixtures/), each parsed from its own JSON as if
// read from the topic, with 1 remembered command (typical: the create) or 200 (a full dedupe window).
// "whole records, every partition" is what the store held before state followed ownership: every record as parsed,
// of every partition, with a reference index. Needs --expose-gc:
//
//   node --expose-gc bench/state-store-memory.ts            # 20000 orders (BENCH_ORDERS)
import { readFileSync } from 'node:fs';
import { KafkaClient } from '../src/kafka/kafka-client.ts';
import { OrderStateStore, type OrderRecord } from '../src/kafka/order-state-store.ts';
import { TransactionalWriter } from '../src/kafka/transactional-writer.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { testKafka } from '../test/support/kafka-helpers.ts';
import { uniqueName } from '../test/support/unique-name.ts';
import { benchServices, round, saveResult } from './lib/harness.ts';

const partitions = 6;
const logger = createLogger({ level: 'silent' });
const template = JSON.parse(
  readFileSync(new URL('./fixtures/finished-state-record.json', import.meta.url), 'utf8'),
) as OrderRecord;

function collect(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** The i-th order's record as JSON text (what the topic holds), finished or not, with `commands` remembered. */
function recordText(i: number, terminal: boolean, commands: number): string {
  const orderId = `bench-${i.toString(36)}-${'x'.repeat(8)}`;
  return JSON.stringify({
    ...template,
    order_id: orderId,
    partition: i % partitions,
    rev: terminal ? 9 : 8,
    terminal,
    unique_reference: `R${i.toString(36).toUpperCase().padStart(9, '0')}`,
    commands: Array.from({ length: commands }, (_, c) => [
      `${orderId}-cmd-${c}`,
      `v2:${(c * 7919 + i).toString(16).padStart(32, '0')}`,
    ]),
    machine: { ...(template.machine as object), orderId },
  });
}

export interface StoreMemoryResult {
  orders: number;
  commands: number;
  /** KiB of heap per order held, on one replica. */
  before: { perRecord: number };
  after: { perOpenOrder: number; perFinishedOrder: number; perOrderOfThreeReplicas: number };
}

async function measure(
  orders: number,
  commands: number,
  kafka: ReturnType<typeof testKafka>,
): Promise<StoreMemoryResult> {
  const topic = uniqueName('bench-state');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  const writer = new TransactionalWriter({
    kafka: KafkaClient.wrap(kafka),
    transactionalId: uniqueName('bench-tx'),
    consumerGroupId: uniqueName('bench-group'),
    transactionTimeoutMs: 10_000,
    logger,
    onFatal: () => {},
  });
  await writer.connect();
  const newStore = async (held: number[]): Promise<OrderStateStore> => {
    const store = new OrderStateStore({
      kafka: KafkaClient.wrap(kafka),
      topic,
      workerId: uniqueName('bench'),
      writer,
      logger,
      transactionTimeoutMs: 10_000,
    });
    await store.start();
    await store.catchUp(held);
    return store;
  };
  const kib = (bytes: number): number => round(bytes / 1024 / orders, 2);
  try {
    // Before: every record whole, every partition, and the reference index.
    let base = collect();
    const whole = new Map<string, OrderRecord>();
    const references = new Map<string, string>();
    for (let i = 0; i < orders; i++) {
      const record = JSON.parse(recordText(i, true, commands)) as OrderRecord;
      whole.set(record.order_id, record);
      if (record.unique_reference) references.set(record.unique_reference, record.order_id);
    }
    const beforePerRecord = kib(collect() - base);
    whole.clear();
    references.clear();

    const all = await newStore([0, 1, 2, 3, 4, 5]);
    base = collect();
    for (let i = 0; i < orders; i++) all.apply(JSON.parse(recordText(i, false, commands)) as OrderRecord);
    const perOpenOrder = kib(collect() - base);
    for (let i = 0; i < orders; i++) all.apply(JSON.parse(recordText(i, true, commands)) as OrderRecord);
    const perFinishedOrder = kib(collect() - base);
    all.release([0, 1, 2, 3, 4, 5]);
    await all.stop();

    // One of three replicas: two of the six partitions; records of the others are not kept.
    const third = await newStore([0, 1]);
    base = collect();
    for (let i = 0; i < orders; i++) third.apply(JSON.parse(recordText(i, false, commands)) as OrderRecord);
    const perOrderOfThreeReplicas = kib(collect() - base);
    await third.stop();
    return {
      orders,
      commands,
      before: { perRecord: beforePerRecord },
      after: { perOpenOrder, perFinishedOrder, perOrderOfThreeReplicas },
    };
  } finally {
    await writer.close();
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
  }
}

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  const kafka = testKafka(services.kafkaBrokers);
  const orders = Number(process.env['BENCH_ORDERS'] ?? 20_000);
  const results: StoreMemoryResult[] = [];
  for (const commands of [1, 200]) {
    const r = await measure(orders, commands, kafka);
    results.push(r);
    console.log(
      `state store, ${orders} orders, ${commands} remembered command(s) each: heap KiB per order on one replica`,
    );
    console.log(`  before (whole records, every partition)   ${r.before.perRecord}`);
    console.log(`  open order                                ${r.after.perOpenOrder}`);
    console.log(`  finished order (compact)                  ${r.after.perFinishedOrder}`);
    console.log(`  open order, one of three replicas         ${r.after.perOrderOfThreeReplicas}`);
  }
  console.log(`  wrote ${await saveResult('state-store-memory', results)}`);
  await services.stop();
}
