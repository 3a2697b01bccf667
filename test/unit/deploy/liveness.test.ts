// The liveness probe fails once the command consumer crashed and kafkajs will not restart it: only a restart of
// the process brings consumption back, and Kubernetes restarts a container whose liveness probe fails.
import type { AddressInfo } from 'node:net';
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';
import { CommandConsumer } from '../../../src/kafka/command-consumer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { createOpsServer } from '../../../src/http/http-server.ts';

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
});
