// The state store's catch-up when the barrier cannot be written (the broker side is in
// test/integration/order-state-store.test.ts).
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';
import { OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type { TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

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
