// The order host over a real broker and Redis, when one of its writes truly fails: the state topic refuses a record
// for its size (max.message.bytes), the writer fails that write alone and carries on. The order must not stay
// ahead of Kafka in memory: the command whose write failed, delivered again, is applied again (not skipped as a
// duplicate of itself with its offset committed for nothing), and the order's history stays gapless. The machine is
// a stand-in whose persisted form is as large as the test says (the order machine's own records are bounded).
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { Kafka } from 'kafkajs';
import { KafkaClient } from '../../src/kafka/kafka-client.ts';
import { OrderStateStore } from '../../src/kafka/order-state-store.ts';
import { TransactionalWriter } from '../../src/kafka/transactional-writer.ts';
import { closeRedis, createRedis, whenRedisReady } from '../../src/redis/connect.ts';
import { OrderLease } from '../../src/redis/order-lease.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
  StartOrderOptions,
} from '../../src/worker/machine-binding.ts';
import { OrderHost } from '../../src/worker/order-host.ts';
import { OrderJournal } from '../../src/worker/order-journal.ts';
import { RedisOrderLeases } from '../../src/redis/redis-leases.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';
import { fakeEvent } from '../support/fake-events.ts';

const logger = createLogger({ level: 'silent' });

/** Ends a resource after the test that made it, whatever the outcome. */
function cleanup(end: () => Promise<unknown>): void {
  onTestFinished(async () => {
    await end().catch(() => {});
  });
}

/** The state topic refuses record batches above this size; the order's ordinary records are far below it. */
const stateMaxMessageBytes = 16_384;

async function topics(kafka: Kafka): Promise<{ commands: string; events: string; state: string }> {
  const names = {
    commands: uniqueName('commands'),
    events: uniqueName('events'),
    state: uniqueName('state'),
  };
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: names.commands, numPartitions: 1 },
      { topic: names.events, numPartitions: 1 },
      {
        topic: names.state,
        numPartitions: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'max.message.bytes', value: String(stateMaxMessageBytes) },
        ],
      },
    ],
    waitForLeaders: true,
  });
  cleanup(async () => {
    await admin.deleteTopics({ topics: Object.values(names) });
    await admin.disconnect();
  });
  return names;
}

/**
 * A stand-in machine: its persisted form lists the events it took, padded with `padding()` random characters (random:
 * compression cannot shrink them below the broker's limit).
 */
function binding(padding: () => number, lives: OrderActorEvent[][]): MachineBinding {
  const actor = (start: StartOrderOptions, taken: OrderActorEvent[]): OrderActorHandle => {
    lives.push(taken);
    let persisted: unknown = { taken: taken.map((event) => event.type) };
    return {
      can: () => true,
      send: (event) => {
        taken.push(event);
        const size = padding();
        persisted = {
          taken: taken.map((e) => e.type),
          ...(size > 0 ? { padding: randomBytes(size / 2).toString('hex') } : {}),
        };
        start.onChange([fakeEvent({ type: 'order.status_changed', note: event.type })]);
      },
      status: () => ({
        state: '"open"',
        terminal: false,
        depositTxHash: null,
        lastConfirmedAt: null,
        lastStatus: null,
        confirmedAt: null,
        uniqueReference: null,
      }),
      persisted: () => persisted,
      stop: () => {},
    };
  };
  return {
    create: (_command, start) => actor(start, []),
    restore: (machine, start) =>
      actor(
        start,
        ((machine as { taken?: string[] }).taken ?? []).map((type) => ({ type }) as OrderActorEvent),
      ),
    resting: () => null,
    unwritten: (written, next) => JSON.stringify(written) === JSON.stringify(next),
  };
}

describe('order host: a write the broker refuses (real Kafka)', () => {
  it('applies the command again when it is delivered again, and commits its offset only with its effects', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const names = await topics(kafka);
    const group = uniqueName('group');
    const writer = new TransactionalWriter({
      kafka: KafkaClient.wrap(kafka),
      transactionalId: uniqueName('tx'),
      consumerGroupId: group,
      transactionTimeoutMs: 10_000,
      logger,
      onFatal: () => {},
    });
    await writer.connect();
    cleanup(() => writer.close());
    const store = new OrderStateStore({
      kafka: KafkaClient.wrap(kafka),
      topic: names.state,
      workerId: uniqueName('w'),
      writer,
      logger,
      transactionTimeoutMs: 10_000,
    });
    await store.start();
    cleanup(() => store.stop());
    const redis = createRedis(services().redisUrl, {
      keyPrefix: `${uniqueName('failed-write')}:`,
      onError: () => {},
    });
    cleanup(() => closeRedis(redis));
    await whenRedisReady(redis, 10_000);
    const leases = new RedisOrderLeases({ lease: new OrderLease(redis), owner: 'w1', ttlMs: 10_000, logger });
    cleanup(async () => leases.stop());

    let padding = 0;
    const lives: OrderActorEvent[][] = [];
    const journal = new OrderJournal({ writer, store, topics: names, now: () => Date.now() });
    const host = new OrderHost({
      state: store,
      journal,
      leases,
      binding: () => binding(() => padding, lives),
      logger,
      now: () => Date.now(),
    });
    cleanup(() => host.unloadAll());
    host.setAssignment([0]);
    await host.onAssignment([], [0]);

    const deliver = (offset: number, command: Record<string, unknown>) =>
      host.handleMessage({
        topic: names.commands,
        partition: 0,
        offset: String(offset),
        key: 'o-1',
        value: Buffer.from(JSON.stringify(command)),
      });
    await deliver(0, {
      type: 'order.create',
      command_id: 'c-create',
      order_id: 'o-1',
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '1',
      withdraw_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
    });
    const cancel = { type: 'order.cancel', command_id: 'c-cancel', order_id: 'o-1' };

    // The cancel's record is twice what the state topic takes: the broker refuses it, the writer carries on.
    padding = 2 * stateMaxMessageBytes;
    await expect(deliver(1, cancel)).rejects.toMatchObject({ code: 'kafka_record_too_large' });
    expect(writer.oversizedWrites).toBe(1);
    await store.catchUp([0]);
    expect(store.get('o-1')?.commands.map(([id]) => id)).toEqual(['c-create']);

    // Delivered again (as the consumer does after a failed message), it is applied to the reloaded order.
    padding = 0;
    await deliver(1, cancel);
    await store.catchUp([0]);
    const record = store.get('o-1');
    expect(record?.commands.map(([id]) => id)).toEqual(['c-create', 'c-cancel']);
    expect(record?.machine).toEqual({ taken: ['CANCEL'] });
    expect(lives).toHaveLength(2);
    // One event per applied command, seq 1 after the refused write (none of its events was published).
    expect(record?.seq).toBe(1);

    const admin = kafka.admin();
    await admin.connect();
    cleanup(() => admin.disconnect());
    let committed: string | undefined;
    for (let attempt = 0; attempt < 50 && committed !== '2'; attempt++) {
      const [entry] = await admin.fetchOffsets({ groupId: group, topics: [names.commands] });
      committed = entry?.partitions.find((p) => p.partition === 0)?.offset;
      if (committed !== '2') await sleep(100);
    }
    expect(committed).toBe('2');
  }, 60_000);
});
