// Proves the plumbing every other test stands on: a real broker and a real Redis, reached the way the worker will.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { Redis } from 'ioredis';
import { startLocalKafka, type LocalKafka } from '../../dev/services/index.ts';
import { services, uniqueName } from '../support/services.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';

const cleanups = cleanupsAfterEach();

function kafkaClient(brokers: string[]): Kafka {
  return new Kafka({
    clientId: uniqueName('plumbing'),
    brokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 200 },
  });
}

interface Received {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** Subscribes and runs the consumer; `until(n)` resolves once n messages have arrived. */
async function startCollecting(
  consumer: Consumer,
  topic: string,
): Promise<{ received: Received[]; until: (count: number, timeoutMs?: number) => Promise<Received[]> }> {
  const received: Received[] = [];
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: ({ message }) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(message.headers ?? {})) headers[name] = String(value);
      received.push({ key: String(message.key), value: String(message.value), headers });
      return Promise.resolve();
    },
  });
  const until = async (count: number, timeoutMs = 60_000): Promise<Received[]> => {
    const deadline = Date.now() + timeoutMs;
    while (received.length < count) {
      if (Date.now() > deadline) throw new Error(`received ${received.length}/${count} messages`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return received;
  };
  return { received, until };
}

describe('Kafka plumbing', () => {
  it('a consumer group reads what a producer wrote, with keys and headers intact', async () => {
    const kafka = kafkaClient(services().kafkaBrokers);
    const topic = uniqueName('plumbing');
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
    cleanups.push(() => admin.deleteTopics({ topics: [topic] }));

    const producer: Producer = kafka.producer({ idempotent: true });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const sent = Array.from({ length: 20 }, (_, i) => ({
      key: `order-${i % 5}`,
      value: JSON.stringify({ i }),
      headers: { 'command-id': `c-${i}` },
    }));
    await producer.send({ topic, messages: sent });

    const consumer = kafka.consumer({ groupId: uniqueName('group') });
    await consumer.connect();
    cleanups.push(() => consumer.disconnect());
    const received = await (await startCollecting(consumer, topic)).until(sent.length);

    const byCommand = new Map(received.map((m) => [m.headers['command-id'], m]));
    for (const message of sent) {
      const got = byCommand.get(message.headers['command-id']);
      expect(got?.key).toBe(message.key);
      expect(got?.value).toBe(message.value);
    }
    // Same key, same partition: per-key order is what the worker relies on.
    const perKey = new Map<string, number[]>();
    for (const m of received)
      perKey.set(m.key, [...(perKey.get(m.key) ?? []), (JSON.parse(m.value) as { i: number }).i]);
    for (const indexes of perKey.values()) expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  });

  it('a consumer keeps consuming across a broker restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kafka-restart-'));
    const broker: LocalKafka = await startLocalKafka({ dir });
    cleanups.push(async () => {
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const kafka = kafkaClient(broker.brokers);
    const topic = uniqueName('restart');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const consumer = kafka.consumer({
      groupId: uniqueName('restart-group'),
      retry: { retries: 30, initialRetryTime: 300 },
    });
    await consumer.connect();
    cleanups.push(() => consumer.disconnect());
    const collecting = await startCollecting(consumer, topic);

    await producer.send({ topic, messages: [{ key: 'a', value: 'before' }] });
    await collecting.until(1);
    await broker.restart();
    await producer.send({ topic, messages: [{ key: 'a', value: 'after' }] });
    const received = await collecting.until(2, 120_000);
    expect(received.map((m) => m.value)).toEqual(['before', 'after']);
  });
});

describe('Redis plumbing', () => {
  it('SET NX PX grants a lock once, and a Lua script releases it only for the token holder', async () => {
    const redis = new Redis(services().redisUrl, { lazyConnect: true });
    await redis.connect();
    cleanups.push(() => redis.quit());
    const key = uniqueName('lock');
    expect(await redis.set(key, 'token-a', 'PX', 5000, 'NX')).toBe('OK');
    expect(await redis.set(key, 'token-b', 'PX', 5000, 'NX')).toBeNull();
    const release = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;
    expect(await redis.eval(release, 1, key, 'token-b')).toBe(0);
    expect(await redis.get(key)).toBe('token-a');
    expect(await redis.eval(release, 1, key, 'token-a')).toBe(1);
    expect(await redis.exists(key)).toBe(0);
    const ttl = await redis.set(key, 'token-c', 'PX', 5000, 'NX');
    expect(ttl).toBe('OK');
    expect(await redis.pttl(key)).toBeGreaterThan(4000);
    await redis.del(key);
  });
});
