// How the writer cuts its queue into transactions: by bytes per partition, never splitting one write (its events,
// state record and offset commit together), in order. The broker side is exercised in
// test/integration/transactional-writer.test.ts.
import type { Kafka } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';
import { isRecordSizeError } from '../../../src/kafka/kafka-errors.ts';
import { planTransactions, recordBytes } from '../../../src/kafka/transaction-plan.ts';
import { TransactionalWriter, type OutboundRecord } from '../../../src/kafka/transactional-writer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

const record = (partition: number | undefined, bytes: number, topic = 'state'): OutboundRecord => ({
  topic,
  key: 'k',
  value: 'x'.repeat(bytes),
  ...(partition === undefined ? {} : { partition }),
});

describe('transaction planning', () => {
  it('splits writes for one partition into transactions under the byte cap, in order', () => {
    const items = Array.from({ length: 600 }, (_, i) => ({ id: i, records: [record(0, 4_000)] }));
    const plan = planTransactions(items, 512 * 1024);
    expect(plan.length).toBeGreaterThan(1);
    expect(plan.flat().map((item) => item.id)).toEqual(items.map((item) => item.id));
    for (const transaction of plan) {
      const bytes = transaction.flatMap((item) => item.records).reduce((sum, r) => sum + recordBytes(r), 0);
      expect(bytes).toBeLessThanOrEqual(512 * 1024);
    }
  });

  it('counts partitions separately: writes for different partitions share a transaction', () => {
    const items = Array.from({ length: 4 }, (_, i) => ({ records: [record(i, 300_000)] }));
    expect(planTransactions(items, 512 * 1024)).toHaveLength(1);
  });

  it('keeps a write whole and gives one larger than the cap a transaction of its own', () => {
    const small = { records: [record(0, 100)] };
    const huge = { records: [record(0, 400_000), record(0, 400_000), record(undefined, 10, 'events')] };
    const plan = planTransactions([small, huge, small], 512 * 1024);
    expect(plan).toEqual([[small], [huge], [small]]);
  });

  it('recognises a size refusal wrapped by kafkajs, and nothing else', () => {
    const protocol = Object.assign(new Error('The request included a message larger than the max'), {
      name: 'KafkaJSProtocolError',
      type: 'MESSAGE_TOO_LARGE',
    });
    const wrapped = Object.assign(new Error(protocol.message, { cause: protocol }), {
      name: 'KafkaJSNonRetriableError',
    });
    expect(isRecordSizeError(wrapped)).toBe(true);
    expect(isRecordSizeError({ type: 'RECORD_LIST_TOO_LARGE' })).toBe(true);
    expect(isRecordSizeError(Object.assign(new Error('x'), { type: 'CONCURRENT_TRANSACTIONS' }))).toBe(false);
  });
});

describe('a transaction that never settles', () => {
  it('is given up after the attempt timeout and committed on a new producer, and the writer carries on', async () => {
    const lines: string[] = [];
    const producers: Array<{ committed: string[]; disconnected: boolean }> = [];
    // kafkajs stand-in: the first producer's commit never settles (as after some broker restarts), later ones commit.
    const kafkajs = {
      producer: () => {
        const index = producers.length;
        const state = { committed: [] as string[], disconnected: false };
        producers.push(state);
        return {
          connect: () => Promise.resolve(),
          disconnect: () => {
            state.disconnected = true;
            return Promise.resolve();
          },
          transaction: () => {
            const sent: string[] = [];
            return Promise.resolve({
              sendBatch: ({
                topicMessages,
              }: {
                topicMessages: Array<{ messages: Array<{ key: string }> }>;
              }) => {
                sent.push(...topicMessages.flatMap((t) => t.messages.map((m) => m.key)));
                return Promise.resolve([]);
              },
              sendOffsets: () => Promise.resolve(),
              commit: () => {
                if (index === 0) return new Promise(() => {});
                state.committed.push(...sent);
                return Promise.resolve();
              },
              abort: () => Promise.resolve(),
            });
          },
        };
      },
    } as unknown as Kafka;
    const fatal: Error[] = [];
    const writer = new TransactionalWriter({
      kafka: KafkaClient.wrap(kafkajs),
      transactionalId: 'tx-1',
      consumerGroupId: 'group',
      transactionTimeoutMs: 10_000,
      attemptTimeoutMs: 100,
      logger: createLogger({
        level: 'warn',
        destination: { write: (line: string) => void lines.push(line) },
      }),
      onFatal: (error) => void fatal.push(error),
    });
    await writer.connect();
    await expect(writer.write([{ topic: 'events', key: 'a', value: '1' }])).resolves.toBe(true);
    await expect(writer.write([{ topic: 'events', key: 'b', value: '2' }])).resolves.toBe(true);
    expect(producers).toHaveLength(2);
    expect(producers[0]?.disconnected).toBe(true);
    expect(producers[1]?.committed).toEqual(['a', 'b']);
    expect(fatal).toEqual([]);
    expect(lines.join('')).toContain('KafkaTransactionStuck');
  });
});

/** A kafkajs stand-in that records what each committed transaction sent, by topic. */
function recordingKafka(commitMs = 0): {
  kafka: KafkaClient;
  transactions: Array<Array<{ topic: string; key: string; value: string | null }>>;
} {
  const transactions: Array<Array<{ topic: string; key: string; value: string | null }>> = [];
  const kafkajs = {
    producer: () => ({
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      transaction: () => {
        const sent: Array<{ topic: string; key: string; value: string | null }> = [];
        return Promise.resolve({
          sendBatch: ({
            topicMessages,
          }: {
            topicMessages: Array<{ topic: string; messages: Array<{ key: string; value: string | null }> }>;
          }) => {
            for (const entry of topicMessages)
              for (const m of entry.messages) sent.push({ topic: entry.topic, key: m.key, value: m.value });
            return Promise.resolve([]);
          },
          sendOffsets: () => Promise.resolve(),
          commit: async () => {
            if (commitMs > 0) await sleep(commitMs);
            transactions.push(sent);
          },
          abort: () => Promise.resolve(),
        });
      },
    }),
  } as unknown as Kafka;
  return { kafka: KafkaClient.wrap(kafkajs), transactions };
}

describe('records superseded in their own transaction', () => {
  function newWriter(kafka: KafkaClient): TransactionalWriter {
    return new TransactionalWriter({
      kafka,
      transactionalId: 'tx-1',
      consumerGroupId: 'group',
      transactionTimeoutMs: 10_000,
      logger: createLogger({ level: 'silent' }),
      onFatal: () => {},
    });
  }
  const state = (key: string, value: string, partition = 0): OutboundRecord => ({
    topic: 'state',
    key,
    partition,
    value,
    latestOnly: true,
  });

  it("sends only each key's last record marked latestOnly, every event, and resolves every write", async () => {
    const { kafka, transactions } = recordingKafka();
    const writer = newWriter(kafka);
    await writer.connect();
    const writes = [
      writer.write([{ topic: 'events', key: 'a', value: 'a:1' }, state('a', 'a rev 1')]),
      writer.write([state('b', 'b rev 1', 1)]),
      writer.write([{ topic: 'events', key: 'a', value: 'a:2' }, state('a', 'a rev 2')]),
      // The same key on another partition is another record.
      writer.write([state('b', 'b elsewhere', 2)]),
    ];
    expect(await Promise.all(writes)).toEqual([true, true, true, true]);
    expect(transactions).toHaveLength(1);
    const sent = transactions[0] ?? [];
    expect(sent.filter((r) => r.topic === 'events').map((r) => r.value)).toEqual(['a:1', 'a:2']);
    expect(sent.filter((r) => r.topic === 'state').map((r) => r.value)).toEqual([
      'b rev 1',
      'a rev 2',
      'b elsewhere',
    ]);
    expect(writer.supersededRecords).toBe(1);
  });

  it('keeps a record whose successor was refused by its guard, and every record not marked, whatever its key', async () => {
    const { kafka, transactions } = recordingKafka();
    const writer = newWriter(kafka);
    await writer.connect();
    const barrier = (nonce: string): OutboundRecord => ({
      topic: 'state',
      key: '__barrier__:w1:0',
      partition: 0,
      value: JSON.stringify({ barrier: nonce }),
    });
    const writes = [
      writer.write([state('a', 'a rev 1')], [], () => true),
      writer.write([state('a', 'a rev 2')], [], () => false),
      // Barriers of one partition share a key, and each is waited for: none may be left out.
      writer.write([barrier('n1')]),
      writer.write([barrier('n2')]),
      // A marked record followed by an unmarked one of its key (a tombstone, say) is sent too.
      writer.write([state('c', 'c rev 1')]),
      writer.write([{ topic: 'state', key: 'c', partition: 0, value: null }]),
    ];
    expect(await Promise.all(writes)).toEqual([true, false, true, true, true, true]);
    expect(transactions.flat().map((r) => r.value)).toEqual([
      'a rev 1',
      '{"barrier":"n1"}',
      '{"barrier":"n2"}',
      'c rev 1',
      null,
    ]);
    expect(writer.supersededRecords).toBe(0);
  });
});

describe('group commit under load', () => {
  const keysOf = (transaction: Array<{ key: string }>): string[] => transaction.map((r) => r.key);

  it('lingers for the writes on their way while the writer stays busy, never when it was idle', async () => {
    // Each commit takes 100 ms; the linger is 400 ms, so whether a transaction lingered shows in what it holds.
    const { kafka, transactions } = recordingKafka(100);
    const writer = new TransactionalWriter({
      kafka,
      transactionalId: 'tx-1',
      consumerGroupId: 'group',
      transactionTimeoutMs: 10_000,
      lingerMs: 400,
      logger: createLogger({ level: 'silent' }),
      onFatal: () => {},
    });
    await writer.connect();
    const write = (key: string): Promise<boolean> => writer.write([{ topic: 'events', key, value: key }]);

    // Idle: a lone write, and the next one 150 ms later, are each committed at once.
    const quiet = [write('q1')];
    await sleep(150);
    quiet.push(write('q2'));
    await Promise.all(quiet);
    expect(transactions.map(keysOf)).toEqual([['q1'], ['q2']]);

    // Busy: four writes queued while b1 commits make the next transaction; c1, queued while that one commits,
    // starts a transaction that lingers, and c2, 30 ms later, joins it.
    const busy = [write('b1')];
    await sleep(10);
    busy.push(...['b2', 'b3', 'b4', 'b5'].map(write));
    await sleep(140);
    busy.push(write('c1'));
    await sleep(30);
    busy.push(write('c2'));
    expect(await Promise.all(busy)).toEqual(Array(7).fill(true));
    expect(transactions.map(keysOf).slice(2)).toEqual([['b1'], ['b2', 'b3', 'b4', 'b5'], ['c1', 'c2']]);
    expect(writer.lingeredTransactions).toBe(1);

    // Idle again, after a transaction of four writes: a lone write does not wait.
    await Promise.all(['d1', 'd2', 'd3', 'd4'].map(write));
    const startedAt = performance.now();
    await write('e1');
    expect(performance.now() - startedAt).toBeLessThan(300);
    expect(writer.lingeredTransactions).toBe(1);
  });
});
