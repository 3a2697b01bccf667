// What one Kafka transaction costs the broker, by its shape: the broker's CPU (from /proc, the process listening on
// the bootstrap port) per transaction and per write for transactions shaped like the worker's (records to 6
// partitions of two topics, the second zstd-compressed in its own produce call, then the consumer offsets) and
// variants of it. The figures behind the writer's linger under load (src/kafka/transactional-writer.ts `lingerMs`):
// the broker's work is per transaction far more than per record.
//
//   node bench/kafka-transaction-cost.ts      (provisions its own Kafka unless KAFKA_BROKERS is set)
//   BENCH_TRANSACTIONS=400                    transactions per variant (default 300)
import { CompressionTypes } from 'kafkajs';
import { KafkaClient } from '../src/kafka/kafka-client.ts';
import { registerZstdCodec } from '../src/kafka/zstd-codec.ts';
import { testKafka } from '../test/support/kafka-helpers.ts';
import { uniqueName } from '../test/support/unique-name.ts';
import { benchServices, cpuSecondsOf, machine, pidServing, round, saveResult } from './lib/harness.ts';

interface Variant {
  name: string;
  /** Writes (one record to each of the two topics) per transaction. */
  writes: number;
  /** The second topic's records in a produce call of their own, zstd-compressed (the worker's state records). */
  splitCompressed: boolean;
  /** Consumer offsets committed in the transaction (the commands' offsets, as the worker does). */
  offsets: boolean;
  partitions: number;
}

interface VariantResult extends Variant {
  transactions: number;
  transactionsPerSecond: number;
  brokerCpuMsPerTransaction: number;
  brokerCpuMsPerWrite: number;
}

const variants: Variant[] = [
  { name: 'worker-shaped, 20 writes', writes: 20, splitCompressed: true, offsets: true, partitions: 6 },
  { name: 'worker-shaped, 40 writes', writes: 40, splitCompressed: true, offsets: true, partitions: 6 },
  { name: 'worker-shaped, 5 writes', writes: 5, splitCompressed: true, offsets: true, partitions: 6 },
  { name: 'one produce call, offsets', writes: 20, splitCompressed: false, offsets: true, partitions: 6 },
  { name: 'one produce call, no offsets', writes: 20, splitCompressed: false, offsets: false, partitions: 6 },
  {
    name: 'one produce call, 1 partition',
    writes: 20,
    splitCompressed: false,
    offsets: false,
    partitions: 1,
  },
];

if (import.meta.filename === process.argv[1]) {
  const services = await benchServices();
  const transactions = Number(process.env['BENCH_TRANSACTIONS'] ?? 300);
  const brokerPid = pidServing(services.kafkaBrokers[0]);
  if (brokerPid === undefined)
    throw new Error(
      `no process of this machine listens on ${services.kafkaBrokers[0]}: the broker's CPU cannot be read`,
    );
  const brokerCpu = (): number => cpuSecondsOf(brokerPid);
  registerZstdCodec();
  const kafka = testKafka(services.kafkaBrokers);
  const admin = kafka.admin();
  await admin.connect();
  const topics = [uniqueName('txcost-a'), uniqueName('txcost-b'), uniqueName('txcost-offsets')];
  await admin.createTopics({
    topics: topics.map((topic) => ({ topic, numPartitions: 6 })),
    waitForLeaders: true,
  });
  const [plain = '', compressed = '', offsetsTopic = ''] = topics;
  const producer = KafkaClient.kafkajs(KafkaClient.wrap(kafka)).producer({
    transactionalId: uniqueName('txcost'),
    idempotent: true,
    maxInFlightRequests: 1,
    // As the worker's writer: CONCURRENT_TRANSACTIONS right after a commit is retried after about 10 ms.
    retry: { retries: 1_000, initialRetryTime: 10, maxRetryTime: 2_000 },
  });
  await producer.connect();
  const value = 'x'.repeat(900); // about a state record's size
  // The idle broker's own CPU (its threads' polling, the controller), taken off each variant's figure.
  const idleFrom = brokerCpu();
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const idleCores = (brokerCpu() - idleFrom) / 5;

  const run = async (variant: Variant, count: number): Promise<VariantResult> => {
    const messages = (): Array<{ key: string; value: string; partition: number }> =>
      Array.from({ length: variant.writes }, (_, i) => ({
        key: `order-${i}`,
        value,
        partition: i % variant.partitions,
      }));
    const cpuFrom = brokerCpu();
    const startedAt = performance.now();
    for (let i = 0; i < count; i++) {
      const transaction = await producer.transaction();
      if (variant.splitCompressed) {
        await transaction.sendBatch({ topicMessages: [{ topic: plain, messages: messages() }] });
        await transaction.sendBatch({
          topicMessages: [{ topic: compressed, messages: messages() }],
          compression: CompressionTypes.ZSTD,
        });
      } else {
        await transaction.sendBatch({
          topicMessages: [
            { topic: plain, messages: messages() },
            { topic: compressed, messages: messages() },
          ],
        });
      }
      if (variant.offsets)
        await transaction.sendOffsets({
          consumerGroupId: `${offsetsTopic}-group`,
          topics: [
            {
              topic: offsetsTopic,
              partitions: Array.from({ length: variant.partitions }, (_, partition) => ({
                partition,
                offset: String(i + 1),
              })),
            },
          ],
        });
      await transaction.commit();
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const cpuMs = Math.max(0, brokerCpu() - cpuFrom - idleCores * seconds) * 1000;
    return {
      ...variant,
      transactions: count,
      transactionsPerSecond: round(count / seconds, 1),
      brokerCpuMsPerTransaction: round(cpuMs / count, 2),
      brokerCpuMsPerWrite: round(cpuMs / (count * variant.writes), 3),
    };
  };

  await run(variants[0] as Variant, Math.ceil(transactions / 2)); // warm-up: the broker's JIT, the coordinator
  const results: VariantResult[] = [];
  console.log(
    `Kafka transaction cost: ${transactions} transactions per variant; idle broker ${round(idleCores, 3)} cores`,
  );
  for (const variant of variants) {
    // The same number of writes in every variant: fewer, larger transactions where they hold more.
    const count = Math.max(1, Math.round((transactions * 20) / variant.writes));
    const result = await run(variant, count);
    results.push(result);
    console.log(
      `  ${variant.name.padEnd(32)} ${String(result.transactions).padStart(5)} transactions, ${result.transactionsPerSecond} /s: broker ${result.brokerCpuMsPerTransaction} ms CPU per transaction, ${result.brokerCpuMsPerWrite} ms per write`,
    );
  }
  await producer.disconnect();
  await admin.deleteTopics({ topics }).catch(() => {});
  await admin.disconnect();
  console.log(
    `  wrote ${await saveResult('kafka-transaction-cost', { at: new Date().toISOString(), machine: machine(), idleBrokerCores: round(idleCores, 3), results })}`,
  );
  await services.stop();
}
