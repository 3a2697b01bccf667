import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { WorkerError } from '../../../src/errors.ts';
import { WebhookDedupe } from '../../../src/redis/webhook-dedupe.ts';
import { reconnected, useOwnRedis } from './redis-fixture.ts';

const redis = useOwnRedis();

describe('WebhookDedupe', () => {
  it('sees a (reference, status) delivery first exactly once, across replicas', async () => {
    const prefix = redis.prefix();
    const a = new WebhookDedupe(await redis.client({ keyPrefix: prefix }));
    const b = new WebhookDedupe(await redis.client({ keyPrefix: prefix }));
    expect(await a.firstSeen('REF123', 'PAID')).toBe(true);
    expect(await b.firstSeen('REF123', 'PAID')).toBe(false);
    expect(await a.firstSeen('REF123', 'PAID')).toBe(false);
  });

  it('treats a new status or another order as a new delivery', async () => {
    const dedupe = new WebhookDedupe(await redis.client());
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    expect(await dedupe.firstSeen('REF123', 'RELEASED')).toBe(true);
    expect(await dedupe.firstSeen('REF456', 'PAID')).toBe(true);
  });

  it('forgets a delivery on request, so the next one of that status is first seen again', async () => {
    const dedupe = new WebhookDedupe(await redis.client());
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    await dedupe.forget('REF123', 'PAID');
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(false);
  });

  it('forgets a delivery after its ttl', async () => {
    const dedupe = new WebhookDedupe(await redis.client());
    expect(await dedupe.firstSeen('REF123', 'PAID', 1)).toBe(true);
    expect(await dedupe.firstSeen('REF123', 'PAID', 1)).toBe(false);
    await sleep(1_100);
    expect(await dedupe.firstSeen('REF123', 'PAID', 1)).toBe(true);
  });

  it('lets every delivery through while Redis is down and reports the degradation', async () => {
    const degraded: WorkerError[] = [];
    const client = await redis.client();
    const dedupe = new WebhookDedupe(client, { onDegraded: (error) => degraded.push(error) });
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    await redis.server().stop();
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    expect(degraded).toHaveLength(2);
    expect(degraded[0]).toMatchObject({ code: 'redis_unavailable', retryable: true });

    await redis.server().start();
    await reconnected(client);
    expect(await dedupe.firstSeen('REF789', 'PAID')).toBe(true);
    expect(await dedupe.firstSeen('REF789', 'PAID')).toBe(false);
  });
});
