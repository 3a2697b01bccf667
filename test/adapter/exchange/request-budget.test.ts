// The request budget against a real Redis (its own redis-server, so the fallback can be tested by killing it),
// plus one contract suite that every RequestBudget implementation passes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRedis, type LocalRedis } from '../../../dev/services/redis-local.ts';
import { RedisRequestBudget, type BudgetRedis } from '../../../src/exchange/redis-request-budget.ts';
import type { RedisClient } from '../../../src/redis/connect.ts';
import { defineRedisScripts } from '../../../src/redis/scripts.ts';
import {
  LocalRequestBudget,
  apiKeyFingerprint,
  budgetPolicy,
  type RequestBudget,
  type RequestPriority,
  type RequestShare,
} from '../../../src/exchange/request-budget.ts';
import { uniqueName } from '../../support/services.ts';

let redisServer: LocalRedis;
let dir: string;
const connections: Redis[] = [];

async function connect(): Promise<RedisClient> {
  const redis = defineRedisScripts(
    new Redis(redisServer.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 }),
  );
  redis.on('error', () => undefined); // outages are part of these tests
  connections.push(redis);
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  return redis;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'budget-redis-'));
  redisServer = await startLocalRedis({ dir });
});

afterAll(async () => {
  for (const redis of connections) redis.disconnect();
  await redisServer.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A small budget so a test sees several windows in a few seconds: 100 requests per second. */
const small = { limit: 100, windowMs: 1_000 };

/** Offers `offered` acquisitions at once (priority by index) and records when each was admitted. */
async function offer(
  budgets: RequestBudget[],
  key: string,
  durationMs: number,
  concurrency: number,
  priority: (i: number) => RequestPriority = () => 'normal',
  share: (i: number) => RequestShare | undefined = () => undefined,
): Promise<{ at: number[]; byPriority: Record<RequestPriority, number[]>; shared: number[] }> {
  const at: number[] = [];
  const byPriority: Record<RequestPriority, number[]> = { high: [], normal: [], low: [] };
  const shared: number[] = [];
  const start = performance.now();
  const stop = AbortSignal.timeout(durationMs);
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const budget = budgets[i % budgets.length];
      if (budget === undefined) return;
      const p = priority(i);
      const part = share(i);
      while (!stop.aborted) {
        try {
          await (part === undefined ? budget.acquire(key, p, stop) : budget.acquire(key, p, stop, part));
        } catch {
          return;
        }
        const t = performance.now() - start;
        at.push(t);
        byPriority[p].push(t);
        if (part !== undefined) shared.push(t);
      }
    }),
  );
  return { at: at.sort((a, b) => a - b), byPriority, shared: shared.sort((a, b) => a - b) };
}

function maxInAnyWindow(at: number[], windowMs: number): number {
  let max = 0;
  let from = 0;
  for (let to = 0; to < at.length; to++) {
    while ((at[to] ?? 0) - (at[from] ?? 0) >= windowMs) from++;
    max = Math.max(max, to - from + 1);
  }
  return max;
}

const implementations: [string, () => Promise<RequestBudget>][] = [
  ['LocalRequestBudget', () => Promise.resolve(new LocalRequestBudget(small))],
  [
    'RedisRequestBudget',
    async () => new RedisRequestBudget({ ...small, redis: await connect(), keyPrefix: uniqueName('budget') }),
  ],
];

describe.each(implementations)('%s (contract)', (_name, make) => {
  it('admits a burst, then paces at the rate, never over the limit in any sliding window', async () => {
    const budget = await make();
    const { at } = await offer([budget], 'k1', 2_500, 20);
    const policy = budgetPolicy(small);
    expect(maxInAnyWindow(at, small.windowMs)).toBeLessThanOrEqual(small.limit);
    // the sustained rate is ~ limit - margin - burst per window, plus the initial burst
    expect(at.length).toBeGreaterThanOrEqual(Math.floor(2.5 * (1_000_000 / policy.intervalUs) * 0.9));
    expect(at.length).toBeLessThanOrEqual(
      Math.ceil(2.5 * (1_000_000 / policy.intervalUs)) + policy.capacity.high + 1,
    );
  });

  it('lets money-moving calls overtake polling when the budget is saturated', async () => {
    const budget = await make();
    const { byPriority } = await offer([budget], 'k2', 1_500, 30, (i) => (i % 10 === 0 ? 'high' : 'low'));
    // 3 of 30 callers are high priority, yet they get far more than a tenth of the admissions
    const high = byPriority.high.length;
    const low = byPriority.low.length;
    expect(high).toBeGreaterThan((high + low) * 0.3);
  });

  it('holds every caller of a key during a penalty, and only that key', async () => {
    const budget = await make();
    await budget.penalize('k3', 400);
    const started = performance.now();
    await budget.acquire('k3', 'high');
    expect(performance.now() - started).toBeGreaterThanOrEqual(300);
    const other = performance.now();
    await budget.acquire('k4', 'low');
    expect(performance.now() - other).toBeLessThan(100);
  });

  it("holds a share (parked lookups) to its tenth of the key, however many wait in it, and leaves the rest to the key's other calls", async () => {
    const budget = await make();
    // 30 callers in the share against 6 ordinary ones of the same priority: without the share they would take most
    // of the budget.
    const { at, shared } = await offer(
      [budget],
      'k6',
      2_000,
      36,
      () => 'low',
      (i) => (i < 30 ? 'parked_lookup' : undefined),
    );
    expect(maxInAnyWindow(at, small.windowMs)).toBeLessThanOrEqual(small.limit);
    expect(maxInAnyWindow(shared, small.windowMs)).toBeLessThanOrEqual(small.limit * 0.1);
    expect(shared.length).toBeGreaterThan(0);
    // The others get at least 85% of what the key admitted.
    expect(at.length - shared.length).toBeGreaterThanOrEqual(at.length * 0.85);
  });

  it('holds a share during a penalty of its key', async () => {
    const budget = await make();
    await budget.penalize('k7', 400);
    const started = performance.now();
    await budget.acquire('k7', 'low', undefined, 'parked_lookup');
    expect(performance.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('stops waiting when the caller aborts', async () => {
    const budget = await make();
    await budget.penalize('k5', 5_000);
    const started = performance.now();
    await expect(budget.acquire('k5', 'normal', AbortSignal.timeout(100))).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('RedisRequestBudget', () => {
  it('is shared by two replicas: together they stay under the limit and use the budget', async () => {
    const prefix = uniqueName('budget');
    const a = new RedisRequestBudget({ ...small, redis: await connect(), keyPrefix: prefix });
    const b = new RedisRequestBudget({ ...small, redis: await connect(), keyPrefix: prefix });
    const { at } = await offer([a, b], 'shared', 3_000, 40);
    expect(maxInAnyWindow(at, small.windowMs)).toBeLessThanOrEqual(small.limit);
    expect(at.length).toBeGreaterThanOrEqual(3 * small.limit * 0.85);
  });

  it('admits callers that wait together with one decision: as many as single admissions in a row would', async () => {
    const redis = await connect();
    let decisions = 0;
    const counting: BudgetRedis = {
      requestBudget: (tatKey, penaltyKey, ...args) => {
        decisions++;
        return (redis.requestBudget as (...all: unknown[]) => Promise<unknown>)(tatKey, penaltyKey, ...args);
      },
    };
    const budget = new RedisRequestBudget({ ...small, redis: counting, keyPrefix: uniqueName('budget') });
    const policy = budgetPolicy(small);
    await Promise.all(Array.from({ length: policy.capacity.high }, () => budget.acquire('burst', 'high')));
    expect(decisions).toBe(1);

    // The script itself: a count beyond the tolerance gets the tolerance, then the next waits one interval.
    const prefix = uniqueName('budget');
    const keys = [`${prefix}:{k}:tat`, `${prefix}:{k}:penalty`] as const;
    const normal = policy.capacity.normal;
    expect(await redis.requestBudget(...keys, 'acquire', policy.intervalUs, normal, normal + 5)).toEqual([
      normal,
      0,
    ]);
    const [admitted, waitUs] = await redis.requestBudget(...keys, 'acquire', policy.intervalUs, normal, 3);
    expect(admitted).toBe(0);
    expect(waitUs).toBeGreaterThan(0);
    expect(waitUs).toBeLessThanOrEqual(policy.intervalUs);
    // Without a count, one at a time as before; a higher tolerance still finds its room.
    const room = policy.capacity.high - normal;
    for (let i = 0; i < room; i++)
      expect(
        (await redis.requestBudget(...keys, 'acquire', policy.intervalUs, policy.capacity.high))[0],
      ).toBe(1);
  });

  it('a penalty set by one replica holds the other', async () => {
    const prefix = uniqueName('budget');
    const a = new RedisRequestBudget({ ...small, redis: await connect(), keyPrefix: prefix });
    const b = new RedisRequestBudget({ ...small, redis: await connect(), keyPrefix: prefix });
    await a.penalize('shared', 500);
    const started = performance.now();
    await b.acquire('shared', 'high');
    expect(performance.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('stores only fingerprints of API keys in Redis', async () => {
    const redis = await connect();
    const prefix = uniqueName('budget');
    const budget = new RedisRequestBudget({ ...small, redis, keyPrefix: prefix });
    const secret = 'live-SECRET-api-key-123';
    await budget.acquire(apiKeyFingerprint(secret), 'normal');
    const keys = await redis.keys(`${prefix}*`);
    expect(keys).toEqual([`${prefix}:{${apiKeyFingerprint(secret)}}:tat`]);
    expect(keys.join()).not.toContain(secret);
  });

  it('falls back to a conservative local limit while Redis is down, and returns to Redis when it is back', async () => {
    const warnings: string[] = [];
    const budget = new RedisRequestBudget({
      ...small,
      redis: await connect(),
      keyPrefix: uniqueName('budget'),
      fallbackLimit: 20,
      retryRedisAfterMs: 200,
      logger: { warn: (_fields, message) => warnings.push(message) },
    });
    await budget.acquire('k', 'normal');
    await redisServer.stop('SIGKILL');
    try {
      const { at } = await offer([budget], 'k', 1_500, 10);
      expect(budget.degraded).toBe(true);
      // 20 per second (less margin and burst), not the shared 100 and certainly not unlimited
      expect(at.length).toBeGreaterThan(5);
      expect(at.length).toBeLessThanOrEqual(20 * 1.5 + 5);
      expect(maxInAnyWindow(at, 1_000)).toBeLessThanOrEqual(20);
      // an admission granted just as the offer stopped may find its caller gone
      expect(budget.fallbackAdmissions - at.length).toBeGreaterThanOrEqual(0);
      expect(budget.fallbackAdmissions - at.length).toBeLessThanOrEqual(1);
    } finally {
      await redisServer.start();
    }
    const before = budget.fallbackAdmissions;
    await sleep(1_500); // the connection comes back on its own
    await budget.acquire('k', 'normal');
    await budget.acquire('k', 'normal');
    expect(budget.fallbackAdmissions).toBe(before);
    expect(budget.degraded).toBe(false);
    expect(warnings).toEqual([
      'request budget: Redis unreachable, using the conservative local limit',
      'request budget: Redis reachable again, shared budget restored',
    ]);
  });
});
