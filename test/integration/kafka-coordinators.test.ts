// A transactional producer of our Kafka client against a real broker: the transaction and group coordinators are
// looked up once and reused, not before every transactional request (kafkajs's own behaviour: four FindCoordinator
// round trips per transaction), and a transaction still commits what it wrote and the offsets it sent.
import { describe, expect, it, onTestFinished } from 'vitest';
import type { Kafka, Producer } from 'kafkajs';
import { KafkaClient, reuseCoordinators } from '../../src/kafka/kafka-client.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';

async function topicOf(kafka: Kafka): Promise<string> {
  const topic = uniqueName('coordinators');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  onTestFinished(async () => {
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
  });
  return topic;
}

/** A connected transactional producer, and how many FindCoordinator requests it has sent so far. */
async function countingProducer(kafka: Kafka): Promise<{ producer: Producer; lookups: () => number }> {
  const producer = kafka.producer({
    transactionalId: uniqueName('tx'),
    idempotent: true,
    maxInFlightRequests: 1,
  });
  let lookups = 0;
  producer.on(producer.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'GroupCoordinator') lookups++;
  });
  await producer.connect();
  onTestFinished(() => producer.disconnect());
  return { producer, lookups: () => lookups };
}

/** Runs `count` transactions of one record and one offset commit each; the FindCoordinator requests they sent. */
async function transactions(kafka: Kafka, topic: string, count: number): Promise<number> {
  const { producer, lookups } = await countingProducer(kafka);
  const group = uniqueName('group');
  const before = lookups();
  for (let i = 0; i < count; i++) {
    const transaction = await producer.transaction();
    await transaction.send({ topic, messages: [{ key: `k${i}`, value: `v${i}` }] });
    await transaction.sendOffsets({
      consumerGroupId: group,
      topics: [{ topic, partitions: [{ partition: 0, offset: String(i + 1) }] }],
    });
    await transaction.commit();
  }
  return lookups() - before;
}

describe('Kafka coordinators', () => {
  it('are looked up once and reused by every transaction of our client, not before each request', async () => {
    const plain = testKafka(services().kafkaBrokers);
    const topic = await topicOf(plain);
    // kafkajs alone: a lookup before AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.
    expect(await transactions(plain, topic, 10)).toBeGreaterThanOrEqual(40);

    const ours = testKafka(services().kafkaBrokers);
    // Reused for longer than the run takes; the default reuse time below.
    expect(reuseCoordinators(ours, 60_000)).toBe(true);
    KafkaClient.wrap(ours);
    // The producer's first lookups (its InitProducerId's and the first transaction's) only.
    expect(await transactions(ours, topic, 10)).toBeLessThanOrEqual(2);

    // Every transaction committed its record and its offsets.
    const admin = ours.admin();
    await admin.connect();
    onTestFinished(() => admin.disconnect());
    const [end] = await admin.fetchTopicOffsets(topic);
    // 20 records and 20 commit markers.
    expect(Number(end?.high)).toBe(40);
  });

  it('are looked up again once the reuse time has passed', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    reuseCoordinators(kafka, 300);
    const topic = await topicOf(kafka);
    const { producer, lookups } = await countingProducer(kafka);
    const once = async (): Promise<void> => {
      const transaction = await producer.transaction();
      await transaction.send({ topic, messages: [{ value: 'x' }] });
      await transaction.commit();
    };
    await once();
    const warm = lookups();
    await once();
    expect(lookups()).toBe(warm);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await once();
    expect(lookups()).toBe(warm + 1);
  });
});
