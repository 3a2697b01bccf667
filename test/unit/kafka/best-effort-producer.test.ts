// The best-effort producer's batching, over a stand-in for the kafkajs producer (the real one is exercised by the
// integration tier: webhooks routed between replicas in test/integration/worker-state-ownership.test.ts).
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { BestEffortProducer, maxBatchRecords } from '../../../src/kafka/best-effort-producer.ts';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';

interface Request {
  topicMessages: Array<{
    topic: string;
    messages: Array<{ key: string; value: string; partition?: number }>;
  }>;
  answer: (error?: Error) => void;
}

function producerOver(): { producer: BestEffortProducer; requests: Request[] } {
  const requests: Request[] = [];
  const kafkajs = {
    producer: () => ({
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      sendBatch: (batch: Omit<Request, 'answer'>) =>
        new Promise<void>((resolve, reject) =>
          requests.push({ ...batch, answer: (error) => (error ? reject(error) : resolve()) }),
        ),
    }),
  } as unknown as Kafka;
  return { producer: new BestEffortProducer(KafkaClient.wrap(kafkajs)), requests };
}

const hint = (i: number, topic = 'commands') => ({
  topic,
  key: `o-${i}`,
  value: `{"n":${i}}`,
  partition: i % 3,
});
const keys = (request: Request | undefined) =>
  request?.topicMessages.flatMap((t) => t.messages.map((m) => `${t.topic}/${m.key}`));
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('best-effort producer', () => {
  it('sends a record at once when none is out, and the ones sent meanwhile together in the next request', async () => {
    const { producer, requests } = producerOver();
    await producer.connect();
    const first = producer.send(hint(1));
    await settle();
    expect(requests.map(keys)).toEqual([['commands/o-1']]);
    const later = [producer.send(hint(2)), producer.send(hint(3)), producer.send(hint(4, 'events'))];
    await settle();
    expect(requests).toHaveLength(1); // one request out at a time: the others wait for it
    requests[0]!.answer();
    await first;
    await settle();
    expect(requests.map(keys)).toEqual([['commands/o-1'], ['commands/o-2', 'commands/o-3', 'events/o-4']]);
    expect(requests[1]!.topicMessages[0]!.messages.map((m) => m.partition)).toEqual([2, 0]);
    requests[1]!.answer();
    await Promise.all(later);
  });

  it('fails only the sends of a request that failed, and goes on with the next', async () => {
    const { producer, requests } = producerOver();
    await producer.connect();
    const first = producer.send(hint(1));
    const second = producer.send(hint(2));
    await settle();
    requests[0]!.answer(new Error('broker gone'));
    await expect(first).rejects.toThrow('broker gone');
    await settle();
    requests[1]!.answer();
    await expect(second).resolves.toBeUndefined();
  });

  it('never leaves a record behind: a send made as the last request is answered starts the next one', async () => {
    const { producer, requests } = producerOver();
    await producer.connect();
    // The caller of the first send sends again as soon as its send resolves, before anything else runs.
    const chained = producer.send(hint(1)).then(() => producer.send(hint(2)));
    await settle();
    requests[0]!.answer();
    await settle();
    expect(requests.map(keys)).toEqual([['commands/o-1'], ['commands/o-2']]);
    requests[1]!.answer();
    await chained;
  });

  it(`carries at most ${maxBatchRecords} records per request`, async () => {
    const { producer, requests } = producerOver();
    await producer.connect();
    const sends = [producer.send(hint(0))];
    for (let i = 1; i <= maxBatchRecords + 10; i++) sends.push(producer.send(hint(i)));
    for (let round = 0; round < 3; round++) {
      await settle();
      requests[round]?.answer();
    }
    await Promise.all(sends);
    expect(requests.map((r) => r.topicMessages[0]!.messages.length)).toEqual([1, maxBatchRecords, 10]);
  });

  it('sends what is queued before it disconnects, and refuses sends after', async () => {
    const { producer, requests } = producerOver();
    await producer.connect();
    const first = producer.send(hint(1));
    const second = producer.send(hint(2));
    const stopped = producer.disconnect();
    await settle();
    requests[0]!.answer();
    await settle();
    requests[1]!.answer();
    await Promise.all([first, second, stopped]);
    await expect(producer.send(hint(3))).rejects.toThrow('not connected');
  });
});
