// The state store against a real broker and Redis: a replica holds only the partitions it was given (two replicas
// share the orders), holds the orders of other partitions (open or finished) only as where they live, keeps a finished
// order of its own partitions only in its compact form, treats a
// tombstone as "no record" (also when it restores across one), and the retention sweep tombstones a finished
// order under its lease once its retention passed, after marking its home retired (never before).
import { describe, expect, it, onTestFinished } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { KafkaClient } from '../../src/kafka/kafka-client.ts';
import { OrderStateStore, type OrderRecord } from '../../src/kafka/order-state-store.ts';
import { TransactionalWriter, type WritableRecord } from '../../src/kafka/transactional-writer.ts';
import { closeRedis, createRedis, whenRedisReady } from '../../src/redis/connect.ts';
import { OrderHomes } from '../../src/redis/order-homes.ts';
import { OrderLease } from '../../src/redis/order-lease.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { RedisOrderLeases } from '../../src/redis/redis-leases.ts';
import { StateRetention, type StateRetentionOptions } from '../../src/worker/state-retention.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';

const logger = createLogger({ level: 'silent' });

/** Ends a resource after the test that made it, whatever the outcome. */
function cleanup(end: () => Promise<unknown>): void {
  onTestFinished(async () => {
    await end().catch(() => {});
  });
}

const partitions = 4;

async function stateTopic(kafka: Kafka): Promise<string> {
  const topic = uniqueName('state');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic, numPartitions: partitions, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
    ],
    waitForLeaders: true,
  });
  cleanup(async () => {
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
  });
  return topic;
}

async function writerFor(kafka: Kafka): Promise<TransactionalWriter> {
  const writer = new TransactionalWriter({
    kafka: KafkaClient.wrap(kafka),
    transactionalId: uniqueName('tx'),
    consumerGroupId: uniqueName('group'),
    transactionTimeoutMs: 10_000,
    logger,
    onFatal: () => {},
  });
  await writer.connect();
  cleanup(() => writer.close());
  return writer;
}

async function storeFor(kafka: Kafka, topic: string, writer: TransactionalWriter): Promise<OrderStateStore> {
  const store = new OrderStateStore({
    kafka: KafkaClient.wrap(kafka),
    topic,
    workerId: uniqueName('w'),
    writer,
    logger,
    transactionTimeoutMs: 10_000,
  });
  await store.start();
  cleanup(() => store.stop());
  return store;
}

function record(orderId: string, partition: number, overrides: Partial<OrderRecord> = {}): OrderRecord {
  return {
    v: 1,
    order_id: orderId,
    partition,
    fence: 1,
    rev: 1,
    seq: 3,
    updated_at: new Date().toISOString(),
    mode: 'cefi',
    create_hash: `v2:${'a'.repeat(32)}`,
    commands: [
      [`${orderId}-create`, `v2:${'a'.repeat(32)}`],
      [`${orderId}-deposit`, `v2:${'b'.repeat(32)}`],
    ],
    unique_reference: `ref-${orderId}`,
    terminal: false,
    machine: { resumeFrom: 'awaitingDeposit', context: { padding: 'x'.repeat(2_000) } },
    ...overrides,
  };
}

function written(topic: string, r: OrderRecord): WritableRecord {
  return { topic, key: r.order_id, partition: r.partition, value: JSON.stringify(r) };
}

/** A Redis client of its own key prefix, with the leases a retention sweep takes, closed after the test. */
async function sweeperRedis(): Promise<{
  redis: ReturnType<typeof createRedis>;
  lease: OrderLease;
  leases: RedisOrderLeases;
}> {
  const redis = createRedis(services().redisUrl, {
    keyPrefix: `${uniqueName('retention')}:`,
    onError: () => {},
  });
  cleanup(() => closeRedis(redis));
  await whenRedisReady(redis, 10_000);
  const lease = new OrderLease(redis);
  const leases = new RedisOrderLeases({ lease, owner: 'sweeper', ttlMs: 5_000, logger });
  cleanup(() => leases.stop());
  return { redis, lease, leases };
}

/** The retention sweep with a 30 s retention, telling `onTombstoned` of each order it tombstones. */
function sweeper(
  parts: Pick<StateRetentionOptions, 'store' | 'writer' | 'leases' | 'stateTopic' | 'homes'>,
  onTombstoned: (orderId: string) => void = () => {},
): StateRetention {
  return new StateRetention({
    ...parts,
    retentionMs: 30_000,
    logger,
    onTombstoned: ({ orderId }) => onTombstoned(orderId),
  });
}

describe('order state store', () => {
  it('reads every partition on every replica; each owns the partitions it caught up', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const records = Array.from({ length: 40 }, (_, i) => record(uniqueName(`o${i}`), i % partitions));
    await writer.write(records.map((r) => written(topic, r)));

    const a = await storeFor(kafka, topic, writer);
    const b = await storeFor(kafka, topic, writer);
    await Promise.all([a.catchUp([0, 1, 2, 3]), b.catchUp([2, 3])]);
    a.release([2, 3]);

    // A replica that waited (for a lease, for Redis) must see an order another replica created on any partition.
    expect(a.size()).toBe(40);
    for (const r of records) {
      expect(a.get(r.order_id)?.rev).toBe(1);
      // Of another partition's order, only that its reference is taken (its id is not held).
      const owned = r.partition === 0 || r.partition === 1;
      expect(a.orderIdByReference(`ref-${r.order_id}`)).toBe(owned ? r.order_id : null);
    }
    expect(a.ownedPartitions()).toEqual([0, 1]);
    expect(b.ownedPartitions()).toEqual([2, 3]);
  });

  it('keeps reading a released partition: a record its new owner writes is seen here too', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const records = Array.from({ length: 8 }, (_, i) => record(uniqueName(`o${i}`), i % 2));
    await writer.write(records.map((r) => written(topic, r)));
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([0, 1]);
    expect(store.size()).toBe(8);

    store.release([1]);
    expect(store.ownedPartitions()).toEqual([0]);
    const later = record(uniqueName('later'), 1);
    await writer.write([written(topic, later)]);
    await store.catchUp([0, 1]);
    expect(store.size()).toBe(9);
    for (const r of [...records, later]) expect(store.get(r.order_id)?.order_id).toBe(r.order_id);
  });

  it('holds the orders of partitions it does not own only as where they live, and whole again once it owns them', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const records = Array.from({ length: 16 }, (_, i) =>
      record(uniqueName(`o${i}`), i % partitions, i % 3 === 0 ? { terminal: true, rev: 5 } : {}),
    );
    await writer.write(records.map((r) => written(topic, r)));
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([0, 1]);
    const owned = (r: OrderRecord): boolean => r.partition === 0 || r.partition === 1;
    const whole = (r: OrderRecord): void => {
      expect(store.get(r.order_id)).toEqual(r.terminal ? { ...r, machine: null } : r);
    };
    // Where it lives: what a misrouted command, a webhook's route or the orphan scan asks of any order.
    const located = (r: OrderRecord): void => {
      const held = store.get(r.order_id)!;
      expect(held).toEqual({
        v: 1,
        order_id: r.order_id,
        partition: r.partition,
        fence: r.fence,
        rev: r.rev,
        terminal: r.terminal,
        machine: null,
      });
      // The rest is the owner's: asking for it fails (retryable), never answers with a made-up value.
      for (const read of [
        () => held.commands,
        () => held.create_hash,
        () => held.seq,
        () => held.mode,
        () => held.unique_reference,
      ])
        expect(read).toThrow(expect.objectContaining({ code: 'state_not_held', retryable: true }) as Error);
      // Its reference is held as taken, by an order whose id is not held here.
      expect(store.orderIdByReference(`ref-${r.order_id}`)).toBeNull();
    };
    for (const r of records) (owned(r) ? whole : located)(r);
    expect(store.orderIdByReference('ref-of-no-order')).toBeUndefined();
    expect(store.size()).toBe(records.length);
    // Only an owned partition's orders are listed (those of another are found by id, not listed).
    expect(store.recordsOfPartition(2)).toEqual([]);
    // A record written to a partition not owned is held the same way.
    const later = record(uniqueName('later'), 2);
    await writer.write([written(topic, later)]);
    await store.catchUp([0]);
    located(later);

    // Owning partition 2 reads it again from its beginning: whole before the catch-up returns.
    await store.catchUp([2]);
    for (const r of [...records, later].filter((r) => r.partition === 2)) whole(r);
    // Letting partition 0 go keeps only where its orders live; owning it again brings them back whole.
    store.release([0]);
    for (const r of records.filter((r) => r.partition === 0)) located(r);
    await store.catchUp([0]);
    for (const r of records.filter((r) => r.partition === 0)) whole(r);
    located(records[3]!);
  });

  it('holds nothing whole before its first assignment, and whole only the partitions it is then given', async () => {
    // A replica joining a group of N must not hold every order whole while it waits for its share (at 100k open
    // orders that was 376 MiB of live heap for each replica that joined three, against about 200 after).
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const records = Array.from({ length: 12 }, (_, i) => record(uniqueName(`j${i}`), i % partitions));
    await writer.write(records.map((r) => written(topic, r)));
    const store = await storeFor(kafka, topic, writer);
    const deadline = Date.now() + 20_000;
    while (store.size() < records.length && Date.now() < deadline) await sleep(50);
    expect(store.size()).toBe(records.length);
    const isWhole = (r: OrderRecord): boolean => {
      const held = store.get(r.order_id);
      return held?.machine !== null && held?.commands.length === r.commands.length;
    };
    // Read, but held only as where each order lives: the rest throws (retryable) rather than answering.
    for (const r of records) {
      expect(store.get(r.order_id)).toMatchObject({
        order_id: r.order_id,
        partition: r.partition,
        machine: null,
      });
      expect(() => store.get(r.order_id)!.commands).toThrow(
        expect.objectContaining({ code: 'state_not_held' }) as Error,
      );
    }
    expect(store.recordsOfPartition(1)).toEqual([]);
    // Given partition 1: read again from its beginning, whole before the catch-up returns; the others stay located.
    await store.catchUp([1]);
    for (const r of records) expect(isWhole(r)).toBe(r.partition === 1);
    expect(
      store
        .recordsOfPartition(1)
        .map((r) => r.order_id)
        .sort(),
    ).toEqual(
      records
        .filter((r) => r.partition === 1)
        .map((r) => r.order_id)
        .sort(),
    );
  });

  it('keeps its own write as it applied it when the write is read back, and takes a newer record from the topic', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([0, 1, 2, 3]);
    const own = record(uniqueName('own'), 1);
    await writer.write([written(topic, own)]);
    store.apply(own);
    // The barrier proves the write was read back: it was not parsed and applied again.
    await store.catchUp([1]);
    expect(store.get(own.order_id)).toBe(own);
    // A newer record of the order (its next rev, from whichever writer) is read, parsed and held.
    const next = record(own.order_id, 1, { rev: 2, seq: 4 });
    await writer.write([written(topic, next)]);
    await store.catchUp([1]);
    expect(store.get(own.order_id)).toEqual(next);
    expect(store.get(own.order_id)).not.toBe(next);
  });

  it('rejects a catch-up still waiting when its partition is released', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const store = await storeFor(kafka, topic, writer);
    const catchingUp = store.catchUp([3], 60_000);
    store.release([3]);
    await expect(catchingUp).rejects.toThrow(/released/);
  });

  it('reads back every one of many catch-ups of one partition asked at once (their barriers share a transaction)', async () => {
    // Fifty orders losing their leases together each reload through a catch-up of their partition: the barriers
    // share a key and a transaction, and each is waited for. With records of one key elided within a transaction,
    // all but the last waited out their timeout.
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([0]);
    const started = Date.now();
    await Promise.all(Array.from({ length: 20 }, () => store.catchUp([0], 15_000)));
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('keeps a finished order compact: no machine, its commands, create hash and seq as they were', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const open = record(uniqueName('open'), 0);
    const finished = record(uniqueName('finished'), 0, { terminal: true, rev: 7, seq: 9 });
    await writer.write([written(topic, open), written(topic, finished)]);
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([0]);

    expect(store.get(open.order_id)).toEqual(open);
    const compact = store.get(finished.order_id);
    expect(compact).toEqual({ ...finished, machine: null });
    expect(store.recordsOfPartition(0).find((r) => r.order_id === finished.order_id)?.commands).toEqual(
      finished.commands,
    );
    expect(store.orderIdByReference(`ref-${finished.order_id}`)).toBe(finished.order_id);
    // An older record read late never replaces it; a newer one does.
    store.apply({ ...finished, rev: 6, terminal: false });
    expect(store.get(finished.order_id)?.terminal).toBe(true);
    store.apply({ ...finished, rev: 8, seq: 10 });
    expect(store.get(finished.order_id)?.seq).toBe(10);
  });

  it('treats a tombstone as no record, also for a replica that restores across it', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const gone = record(uniqueName('gone'), 2, { terminal: true });
    const kept = record(uniqueName('kept'), 2);
    await writer.write([written(topic, gone), written(topic, kept)]);
    const live = await storeFor(kafka, topic, writer);
    await live.catchUp([2]);
    expect(live.get(gone.order_id)).toBeDefined();
    // A replica owning another partition holds the order as where it lives, its reference as taken.
    const elsewhere = await storeFor(kafka, topic, writer);
    await elsewhere.catchUp([0]);
    expect(elsewhere.get(gone.order_id)?.partition).toBe(2);
    expect(elsewhere.orderIdByReference(`ref-${gone.order_id}`)).toBeNull();

    await writer.write([{ topic, key: gone.order_id, partition: 2, value: null }]);
    await live.catchUp([2]);
    expect(live.get(gone.order_id)).toBeUndefined();
    expect(live.orderIdByReference(`ref-${gone.order_id}`)).toBeUndefined();
    await elsewhere.catchUp([0]);
    expect(elsewhere.get(gone.order_id)).toBeUndefined();
    expect(elsewhere.orderIdByReference(`ref-${gone.order_id}`)).toBeUndefined();
    expect(elsewhere.size()).toBe(1);

    const restoring = await storeFor(kafka, topic, writer);
    await restoring.catchUp([2]);
    expect(restoring.get(gone.order_id)).toBeUndefined();
    expect(restoring.get(kept.order_id)).toEqual(kept);
    expect(restoring.size()).toBe(1);
  });

  it('tombstones a finished order once its retention passed, under its lease, and leaves open and recent ones', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const old = new Date(Date.now() - 60_000).toISOString();
    const expired = record(uniqueName('expired'), 1, { terminal: true, updated_at: old });
    const recent = record(uniqueName('recent'), 1, { terminal: true });
    const open = record(uniqueName('open'), 1, { updated_at: old });
    const held = record(uniqueName('held'), 1, { terminal: true, updated_at: old });
    await writer.write([expired, recent, open, held].map((r) => written(topic, r)));
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([1]);

    const { redis, lease, leases } = await sweeperRedis();
    // Another replica answers a late command of this order right now: it is not touched this time.
    expect(await lease.acquire(held.order_id, 'someone-else', 5_000, 0)).not.toBeNull();
    const tombstoned: string[] = [];
    const homes = new OrderHomes(redis, { ttlMs: 3_600_000 });
    expect(await homes.claim(expired.order_id, 1)).toEqual({ partition: 1, retired: false });
    const retention = sweeper({ store, writer, leases, stateTopic: topic, homes }, (id) =>
      tombstoned.push(id),
    );

    expect(await retention.sweep(Date.now())).toBe(1);
    expect(tombstoned).toEqual([expired.order_id]);
    // A create of it replayed from the commands topic now finds its home retired (order-host refuses it).
    expect(await homes.claim(expired.order_id, 1)).toEqual({ partition: 1, retired: true });
    expect(await homes.claim(recent.order_id, 1)).toEqual({ partition: 1, retired: false });
    expect(store.get(expired.order_id)).toBeUndefined();
    expect(store.get(recent.order_id)).toBeDefined();
    expect(store.get(open.order_id)).toBeDefined();
    expect(store.get(held.order_id)).toBeDefined();
    // Its lease was let go again.
    expect(await lease.acquire(expired.order_id, 'next', 5_000, 0)).not.toBeNull();

    const restoring = await storeFor(kafka, topic, writer);
    await restoring.catchUp([1]);
    expect(restoring.get(expired.order_id)).toBeUndefined();
    expect(restoring.size()).toBe(3);
  });

  it('keeps a finished order past its retention while its home cannot be marked retired, and tombstones it once it can', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writer = await writerFor(kafka);
    const old = new Date(Date.now() - 60_000).toISOString();
    const expired = record(uniqueName('expired'), 1, { terminal: true, updated_at: old });
    await writer.write([written(topic, expired)]);
    const store = await storeFor(kafka, topic, writer);
    await store.catchUp([1]);
    const { redis, leases } = await sweeperRedis();
    const homes = new OrderHomes(redis, { ttlMs: 3_600_000 });
    let refuse = true;
    const retention = sweeper({
      store,
      writer,
      leases,
      stateTopic: topic,
      homes: {
        retire: (orderId, partition) =>
          refuse ? Promise.reject(new Error('redis unavailable')) : homes.retire(orderId, partition),
      },
    });

    expect(await retention.sweep(Date.now())).toBe(0);
    expect(store.get(expired.order_id)).toBeDefined();
    refuse = false;
    expect(await retention.sweep(Date.now())).toBe(1);
    expect(store.get(expired.order_id)).toBeUndefined();
    expect(await homes.claim(expired.order_id, 1)).toEqual({ partition: 1, retired: true });
  });
});
