// The probes. Liveness fails once the command consumer crashed and kafkajs will not restart it: only a restart of
// the process brings consumption back, and Kubernetes restarts a container whose liveness probe fails. Start-up
// (/startupz) passes only once every assigned partition is restored, and stays passed; readiness for webhooks
// (/readyz/webhooks) holds until the worker stops, whatever Redis or the exchange do.
import type { AddressInfo } from 'node:net';
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';
import { CommandConsumer } from '../../../src/kafka/command-consumer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { createOpsServer } from '../../../src/http/http-server.ts';
import { WorkerHealth } from '../../../src/worker/health.ts';

/** Just enough of a kafkajs client to emit consumer instrumentation events (no broker involved). */
function kafkaEmittingEvents(): { kafka: Kafka; emit: (event: string, payload: unknown) => void } {
  const handlers = new Map<string, (event: { payload: unknown }) => void>();
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join', CRASH: 'consumer.crash' },
    on: (event: string, handler: (event: { payload: unknown }) => void) => handlers.set(event, handler),
  };
  return {
    kafka: { consumer: () => consumer } as unknown as Kafka,
    emit: (event, payload) => handlers.get(event)?.({ payload }),
  };
}

describe('liveness', () => {
  it('marks the command consumer dead only on a crash kafkajs does not restart from', () => {
    const { kafka, emit } = kafkaEmittingEvents();
    const consumer = new CommandConsumer({
      kafka: KafkaClient.wrap(kafka),
      topic: 'commands',
      groupId: 'group',
      logger: createLogger({ level: 'silent' }),
    });
    emit('consumer.crash', { error: new Error('broker went away'), restart: true, groupId: 'group' });
    expect(consumer.crashedForGood).toBeUndefined();
    emit('consumer.crash', { error: new Error('not retriable'), restart: false, groupId: 'group' });
    expect(consumer.crashedForGood).toBe('not retriable');
  });

  it('answers /healthz 503 with the reason when not alive, 200 otherwise', async () => {
    let live: { alive: boolean; detail?: string } = { alive: true };
    const server = createOpsServer({
      logger: createLogger({ level: 'silent' }),
      readiness: () => Promise.resolve({ ready: true, checks: {} }),
      metrics: () => '',
      liveness: () => live,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`;
    try {
      expect((await fetch(url)).status).toBe(200);
      live = { alive: false, detail: 'command consumer crashed: not retriable' };
      const res = await fetch(url);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'dead', detail: 'command consumer crashed: not retriable' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('starts once every assigned partition is restored, and stays started through a later rebalance', () => {
    const consumer = {
      crashedForGood: undefined as string | undefined,
      joined: false,
      restored: new Set<number>(),
      assigned: [0, 1, 2],
      get restoredPartitions() {
        return this.restored;
      },
      allRestored() {
        return this.assigned.every((p) => this.restored.has(p));
      },
    };
    const health = new WorkerHealth({
      consumer: consumer,
      kafka: { reachable: () => Promise.resolve(true) },
      checks: { redis: () => Promise.resolve(false), exchange: () => Promise.resolve(false) },
      now: () => 0,
    });
    expect(health.startup()).toEqual({ started: false, detail: '0/3 restored' });
    consumer.joined = true;
    consumer.restored.add(0).add(1);
    expect(health.startup().started).toBe(false);
    consumer.restored.add(2);
    expect(health.startup()).toEqual({ started: true, detail: '3/3 restored' });
    consumer.assigned = [0, 1, 2, 3];
    expect(health.startup().started).toBe(true);
    // Redis and the exchange down: not ready, but webhooks are still taken; stopping ends that.
    expect(health.acceptsWebhooks()).toBe(true);
    health.stopped();
    expect(health.acceptsWebhooks()).toBe(false);
  });

  it('answers /startupz 503 until started and /readyz/webhooks 503 once stopping', async () => {
    let startup = { started: false, detail: '1/3 restored' };
    let accepting = true;
    const server = createOpsServer({
      logger: createLogger({ level: 'silent' }),
      readiness: () => Promise.resolve({ ready: false, checks: { redis: { ok: false } } }),
      metrics: () => '',
      startup: () => startup,
      acceptsWebhooks: () => accepting,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const starting = await fetch(`${base}/startupz`);
      expect(starting.status).toBe(503);
      expect(await starting.json()).toEqual({ status: 'starting', detail: '1/3 restored' });
      startup = { started: true, detail: '3/3 restored' };
      expect((await fetch(`${base}/startupz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      expect(await (await fetch(`${base}/readyz/webhooks`)).json()).toEqual({ status: 'accepting' });
      accepting = false;
      expect((await fetch(`${base}/readyz/webhooks`)).status).toBe(503);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
