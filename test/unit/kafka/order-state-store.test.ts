// The state store's catch-up when the barrier cannot be written (the broker side is in
// test/integration/order-state-store.test.ts).
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';
import { OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type { TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { openRecord } from '../worker/host-fixtures.ts';

function storeWithoutBroker(): OrderStateStore {
  return new OrderStateStore({
    kafka: KafkaClient.wrap({} as Kafka),
    topic: 'state',
    workerId: 'w1',
    writer: { write: () => Promise.resolve(true) } as unknown as TransactionalWriter,
    logger: createLogger({ level: 'silent' }),
    transactionTimeoutMs: 10_000,
  });
}

describe('state store catch-up', () => {
  it('gives up within its timeout when the barrier write never settles, so the restore can be retried', async () => {
    const store = new OrderStateStore({
      kafka: KafkaClient.wrap({} as Kafka),
      topic: 'state',
      workerId: 'w1',
      // A writer stuck behind a broker restart: the write neither commits nor fails.
      writer: { write: () => new Promise(() => {}) } as unknown as TransactionalWriter,
      logger: createLogger({ level: 'silent' }),
      transactionTimeoutMs: 10_000,
    });
    const started = Date.now();
    await expect(store.catchUp([0, 1], 150)).rejects.toThrow('state barrier not written after 150 ms');
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('state store amend', () => {
  it("gives an open order's record of that rev the machine its host confirmed in memory, and nothing else", async () => {
    const store = storeWithoutBroker();
    // Only an owned partition's orders are held whole. catchUp takes partition 0 before it writes its barrier, which
    // nothing reads back here (no broker): it gives up at its timeout, the partition owned.
    await store.catchUp([0], 10).catch(() => {});
    store.apply(openRecord('o-1', 0, { rev: 3, machine: { confirmedAt: 1 } }));
    store.apply(openRecord('o-2', 0, { rev: 5, terminal: true, unique_reference: 'REF2' }));
    store.amend('o-1', 3, { confirmedAt: 2 });
    expect(store.get('o-1')?.machine).toEqual({ confirmedAt: 2 });
    expect(store.get('o-1')?.rev).toBe(3);
    // Another rev (a newer record arrived meanwhile, or an older write's answer): left as it is.
    store.amend('o-1', 2, { confirmedAt: 0 });
    store.amend('o-1', 4, { confirmedAt: 9 });
    expect(store.get('o-1')?.machine).toEqual({ confirmedAt: 2 });
    // A finished order keeps no machine; an unknown one is not made up.
    store.amend('o-2', 5, { confirmedAt: 3 });
    expect(store.get('o-2')?.machine).toBeNull();
    store.amend('o-3', 1, { confirmedAt: 3 });
    expect(store.get('o-3')).toBeUndefined();
    // A newer record from the topic replaces the amended one as always.
    store.apply(openRecord('o-1', 0, { rev: 4, machine: { confirmedAt: 5 } }));
    expect(store.get('o-1')?.machine).toEqual({ confirmedAt: 5 });
  });
});

describe('state store and the read view', () => {
  it('hands the read view the records of owned partitions only (the very objects held), and says what it released', async () => {
    const seen: string[] = [];
    const released: number[][] = [];
    const store = new OrderStateStore({
      kafka: KafkaClient.wrap({} as Kafka),
      topic: 'state',
      workerId: 'w1',
      writer: { write: () => Promise.resolve(true) } as unknown as TransactionalWriter,
      logger: createLogger({ level: 'silent' }),
      transactionTimeoutMs: 10_000,
      onRecord: (record) => seen.push('forgotten' in record ? `-${record.forgotten}` : record.order_id),
      onRelease: (partitions) => released.push([...partitions]),
    });
    await store.catchUp([0], 10).catch(() => {});
    const owned = openRecord('o-1', 0, { rev: 1 });
    store.apply(owned);
    store.apply(openRecord('f-1', 1, { rev: 1 }));
    expect(seen).toEqual(['o-1']);
    expect(store.get('o-1')).toBe(owned);
    store.release([1]);
    expect(released).toEqual([]);
    store.release([0]);
    expect(released).toEqual([[0]]);
    store.forget('o-1');
    expect(seen).toEqual(['o-1', '-o-1']);
  });
});
