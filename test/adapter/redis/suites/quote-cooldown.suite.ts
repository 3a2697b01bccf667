// The actionable-quote cooldown on every topology: one request shape spaced out across replicas, its holder's re-arm,
// local memory. The outage cases (Redis stopped, restarted empty) need the one server of a standalone Redis.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { WorkerError } from '../../../../src/errors.ts';
import { QuoteCooldown, unreachableRetryMs } from '../../../../src/redis/quote-cooldown.ts';
import { reconnected, type RedisFixture } from '../redis-fixture.ts';

export function describeQuoteCooldown(redis: RedisFixture): void {
  const server = redis.server;

  /** Two replicas: separate clients and separate in-process memories, one shared key prefix. */
  async function twoReplicas(): Promise<[QuoteCooldown, QuoteCooldown]> {
    const prefix = redis.prefix();
    return [
      new QuoteCooldown(await redis.client({ keyPrefix: prefix })),
      new QuoteCooldown(await redis.client({ keyPrefix: prefix })),
    ];
  }

  describe(`QuoteCooldown (${redis.kind})`, () => {
    it('refuses the same pair and amount on another replica until the cooldown ends, with a sensible retryAt', async () => {
      const [a, b] = await twoReplicas();
      const now = Date.now();
      expect(await a.tryAcquire('defi', 'ETHBTC', '1.5', 15_000, now)).toEqual({ granted: true });
      const refused = await b.tryAcquire('defi', 'ETHBTC', '1.5', 15_000, now + 1_000);
      expect(refused.granted).toBe(false);
      if (refused.granted) return;
      expect(refused.retryAt).toBeGreaterThan(now + 14_000 - 500);
      expect(refused.retryAt).toBeLessThanOrEqual(now + 1_000 + 15_000);
    });

    it('sees a window its holder shortened: a refusal is taken from Redis again after a second, not remembered for the whole hold', async () => {
      const [a, b] = await twoReplicas();
      const now = Date.now();
      // A's request is in flight: its claim holds for the cooldown plus the send hold (75 s).
      expect(await a.tryAcquire('defi', 'ETHBTC', '3.5', 75_000, now, 'a-token')).toEqual({ granted: true });
      const held = await b.tryAcquire('defi', 'ETHBTC', '3.5', 25_000, now);
      expect(held.granted).toBe(false);
      if (held.granted) return;
      expect(held.retryAt).toBeGreaterThan(now + 70_000);
      // A's request completed: its holder re-arms the window to the bare cooldown (15 s).
      expect(await a.tryAcquire('defi', 'ETHBTC', '3.5', 15_000, now, 'a-token')).toEqual({ granted: true });
      // Within a second B answers from what it saw; after it, from Redis: the window ends 15 s after the re-arm.
      const soon = await b.tryAcquire('defi', 'ETHBTC', '3.5', 25_000, now + 500);
      expect(soon).toEqual({ granted: false, retryAt: held.retryAt });
      const later = await b.tryAcquire('defi', 'ETHBTC', '3.5', 25_000, now + 1_500);
      expect(later.granted).toBe(false);
      if (later.granted) return;
      expect(later.retryAt).toBeLessThanOrEqual(now + 1_500 + 15_000);
    });

    it('lets the holder re-arm its claim when another order of the same process was refused at the same moment', async () => {
      const [a] = await twoReplicas();
      const now = Date.now();
      // Two orders of one replica ask at once: both reach Redis, one claims, the other is refused.
      const [first, second] = await Promise.all([
        a.tryAcquire('defi', 'ETHBTC', '4.5', 25_000, now, 'first'),
        a.tryAcquire('defi', 'ETHBTC', '4.5', 25_000, now, 'second'),
      ]);
      expect(first).toEqual({ granted: true });
      expect(second.granted).toBe(false);
      // The refusal must not take the claim's place here: its holder re-arms it as its request leaves.
      expect(await a.tryAcquire('defi', 'ETHBTC', '4.5', 75_000, now + 50, 'first')).toEqual({
        granted: true,
      });
    });

    it('grants a different amount, pair or mode right away', async () => {
      const [a, b] = await twoReplicas();
      expect((await a.tryAcquire('defi', 'ETHBTC', '1.5', 15_000)).granted).toBe(true);
      expect((await b.tryAcquire('defi', 'ETHBTC', '1.6', 15_000)).granted).toBe(true);
      expect((await b.tryAcquire('defi', 'LTCBTC', '1.5', 15_000)).granted).toBe(true);
      expect((await b.tryAcquire('cefi', 'ETHBTC', '1.5', 15_000)).granted).toBe(true);
    });

    it('treats "1.5", "1.50", "01.5" and a lower-case pair as the same request', async () => {
      const [a, b] = await twoReplicas();
      expect((await a.tryAcquire('cefi', 'ethbtc', '1.50', 15_000)).granted).toBe(true);
      expect((await b.tryAcquire('cefi', 'ETHBTC', '1.5', 15_000)).granted).toBe(false);
      expect((await b.tryAcquire('cefi', 'ETHBTC', '01.5', 15_000)).granted).toBe(false);
      expect((await b.tryAcquire('cefi', ' ETHBTC ', '1.500000', 15_000)).granted).toBe(false);
    });

    it('grants the same request again once the cooldown has passed', async () => {
      const [a, b] = await twoReplicas();
      expect((await a.tryAcquire('defi', 'ETHBTC', '2', 200)).granted).toBe(true);
      expect((await b.tryAcquire('defi', 'ETHBTC', '2', 200)).granted).toBe(false);
      await sleep(250);
      expect((await b.tryAcquire('defi', 'ETHBTC', '2', 200)).granted).toBe(true);
    });

    it('forgets expired local entries, a second at most after the map grew past 256, without a walk per request', async () => {
      const [a] = await twoReplicas();
      const t0 = Date.now();
      // 600 distinct amounts within one window: none expired, so none is dropped whatever sweeps run.
      for (let i = 0; i < 600; i++) await a.tryAcquire('defi', 'ETHBTC', `${i + 1}`, 100, t0);
      expect(a.localEntries).toBe(600);
      // All expired; the next requests within the same second keep them until the map doubles or a second passes.
      await a.tryAcquire('defi', 'ETHBTC', '9001', 100, t0 + 500);
      expect(a.localEntries).toBeGreaterThan(600);
      await a.tryAcquire('defi', 'ETHBTC', '9002', 100, t0 + 1_200);
      expect(a.localEntries).toBeLessThanOrEqual(2);
    });

    it('lets exactly one of many concurrent identical requests through', async () => {
      const [a, b] = await twoReplicas();
      const decisions = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).tryAcquire('defi', 'ETHBTC', '3', 15_000)),
      );
      expect(decisions.filter((d) => d.granted)).toHaveLength(1);
    });

    if (server) {
      it('grants nothing while Redis cannot answer (another replica may hold the slot), and reports it', async () => {
        const prefix = redis.prefix();
        const degraded: WorkerError[] = [];
        const other = new QuoteCooldown(await redis.client({ keyPrefix: prefix }));
        const client = await redis.client({ keyPrefix: prefix });
        const cooldown = new QuoteCooldown(client, { onDegraded: (error) => degraded.push(error) });
        const now = Date.now();
        // Another replica holds the slot in Redis; this one has never seen the request.
        expect(await other.tryAcquire('defi', 'ETHBTC', '1.5', 15_000, now)).toEqual({ granted: true });
        await server().stop();

        expect(await cooldown.tryAcquire('defi', 'ETHBTC', '1.5', 15_000, now + 1_000)).toEqual({
          granted: false,
          retryAt: now + 1_000 + unreachableRetryMs,
        });
        expect(degraded[0]).toMatchObject({ code: 'redis_unavailable', retryable: true });
        expect(degraded[0]?.message).not.toMatch(/password|@/i);
        // Not even a request nobody made: the answer is "ask again", not a grant from local memory.
        expect((await cooldown.tryAcquire('defi', 'ETHBTC', '1.6', 15_000, now)).granted).toBe(false);

        await server().start();
        await reconnected(client);
        degraded.length = 0;
        expect((await cooldown.tryAcquire('defi', 'LTCBTC', '1', 15_000)).granted).toBe(true);
        expect(degraded).toEqual([]);
      });
    }

    if (server) {
      it('remembers its own requests across a Redis restart that lost the keys', async () => {
        const client = await redis.client();
        const cooldown = new QuoteCooldown(client);
        expect((await cooldown.tryAcquire('defi', 'ETHBTC', '4', 15_000)).granted).toBe(true);
        await server().restart();
        await reconnected(client);
        expect((await cooldown.tryAcquire('defi', 'ETHBTC', '4', 15_000)).granted).toBe(false);
        // Another replica only has Redis to go by, which restarted empty.
        expect((await new QuoteCooldown(client).tryAcquire('defi', 'ETHBTC', '4', 15_000)).granted).toBe(
          true,
        );
      });
    }

    it('rejects amounts that are not plain decimals and a non-positive cooldown', async () => {
      const cooldown = new QuoteCooldown(await redis.client());
      for (const amount of ['', '.', '-1', '1e3', '1,5', 'abc', '1.2.3']) {
        await expect(cooldown.tryAcquire('defi', 'ETHBTC', amount, 15_000)).rejects.toMatchObject({
          code: 'invalid_argument',
        });
      }
      await expect(cooldown.tryAcquire('defi', 'ETHBTC', '1', 0)).rejects.toMatchObject({
        code: 'invalid_argument',
      });
    });
  });
}
