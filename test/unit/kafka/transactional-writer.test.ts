// How the writer cuts its queue into transactions: by bytes per partition, never splitting one write (its events,
// state record and offset commit together), in order. The broker side is exercised in
// test/integration/transactional-writer.test.ts.
import { describe, expect, it } from 'vitest';
import {
  isRecordSizeError,
  planTransactions,
  recordBytes,
  type OutboundRecord,
} from '../../../src/kafka/transactional-writer.ts';

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
