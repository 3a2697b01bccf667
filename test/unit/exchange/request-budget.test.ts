import { describe, expect, it } from 'vitest';
import {
  AdmissionQueue,
  LocalLimiter,
  apiKeyFingerprint,
  budgetPolicy,
  gcraStep,
  maxAdmittedTogether,
  requestShares,
  sharePolicy,
  type Admission,
  type RequestPriority,
} from '../../../src/exchange/request-budget.ts';

describe('budget policy', () => {
  it('keeps the documented 2500/min under the limit in any window, with ~98% of it sustained', () => {
    const policy = budgetPolicy();
    expect(policy.capacity).toEqual({ high: 25, normal: 15, low: 5 });
    expect(policy.maxPerWindow).toBeLessThanOrEqual(2500 - 25);
    const sustainedPerMinute = 60_000_000 / policy.intervalUs;
    expect(sustainedPerMinute).toBeGreaterThan(2500 * 0.97);
  });

  it('scales bursts down for small limits and refuses impossible ones', () => {
    expect(budgetPolicy({ limit: 100, windowMs: 1000 }).capacity).toEqual({ high: 12, normal: 7, low: 2 });
    expect(() => budgetPolicy({ limit: 1, windowMs: 1000 })).toThrow(RangeError);
    expect(() => budgetPolicy({ burst: { high: 1, normal: 5, low: 1 } })).toThrow(RangeError);
  });
});

describe('budget shares', () => {
  it('holds parked lookups to at most a tenth of the documented budget in any window, at any priority', () => {
    const key = budgetPolicy();
    const share = sharePolicy(key, 'parked_lookup');
    expect(requestShares.parked_lookup).toBeLessThanOrEqual(0.1);
    expect(share.maxPerWindow).toBeLessThanOrEqual(2500 * 0.1);
    expect(share.windowMs).toBe(key.windowMs);
    // Small limits (tests, the Redis fallback) still get a policy that paces.
    expect(() => sharePolicy(budgetPolicy({ limit: 10, windowMs: 1000 }), 'parked_lookup')).not.toThrow();
  });
});

describe('GCRA step', () => {
  it('admits `capacity` back to back, then asks to wait one interval per request', () => {
    let tat = 0;
    const results = Array.from({ length: 4 }, () => {
      const step = gcraStep(tat, 1_000_000, 10_000, 3);
      tat = step.tatUs;
      return step;
    });
    expect(results.map((r) => r.admitted)).toEqual([true, true, true, false]);
    expect(results[3]?.waitUs).toBe(10_000);
  });

  it('gives a higher priority (larger capacity) room that a lower one does not have', () => {
    const tat = 1_000_000 + 5 * 10_000; // five requests ahead
    expect(gcraStep(tat, 1_000_000, 10_000, 5).admitted).toBe(false);
    expect(gcraStep(tat, 1_000_000, 10_000, 25).admitted).toBe(true);
  });
});

describe('local limiter', () => {
  it('holds a penalised key until the penalty ends', () => {
    let now = 1_000;
    const limiter = new LocalLimiter(budgetPolicy({ limit: 100, windowMs: 1000 }), () => now);
    limiter.penalize('k', 500);
    expect(limiter.tryAcquire('k', 'high')).toEqual({ admitted: false, waitMs: 500 });
    now += 500;
    expect(limiter.tryAcquire('k', 'high')).toEqual({ admitted: true });
  });
});

describe('local limiter, several requests at once', () => {
  it('admits as many as single steps in a row would, and refuses with the wait of the next', () => {
    const now = 1_000;
    const policy = budgetPolicy({ limit: 100, windowMs: 1000 });
    const together = new LocalLimiter(policy, () => now);
    const oneByOne = new LocalLimiter(policy, () => now);
    const singles = Array.from({ length: 20 }, () => oneByOne.tryAcquire('k', 'normal')).filter(
      (a) => a.admitted,
    );
    expect(together.tryAcquire('k', 'normal', 20)).toEqual({ admitted: true, granted: singles.length });
    expect(singles.length).toBe(policy.capacity.normal);
    expect(together.tryAcquire('k', 'normal', 5)).toEqual(oneByOne.tryAcquire('k', 'normal'));
    // a higher priority still has its larger tolerance
    expect(together.tryAcquire('k', 'high', 20)).toEqual({
      admitted: true,
      granted: policy.capacity.high - policy.capacity.normal,
    });
  });
});

describe('admission queue', () => {
  /** A limiter that records each question and grants what `grant` says. */
  function recording(grant: (priority: RequestPriority, count: number) => number) {
    const asked: [RequestPriority, number][] = [];
    const queue = new AdmissionQueue((priority, count): Promise<Admission> => {
      asked.push([priority, count]);
      const granted = grant(priority, count);
      return Promise.resolve(granted > 0 ? { admitted: true, granted } : { admitted: false, waitMs: 5 });
    });
    return { asked, queue };
  }

  it('asks once for a run of waiters of one priority, not once per waiter', async () => {
    const { asked, queue } = recording((_p, count) => count);
    const admitted: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => queue.enter('normal').then(() => admitted.push(i))),
    );
    expect(admitted).toHaveLength(20);
    expect(asked).toEqual([['normal', 20]]);
  });

  it('admits from the head as many as granted, in order, and asks again for the rest', async () => {
    const { asked, queue } = recording(() => 3);
    const admitted: number[] = [];
    await Promise.all(Array.from({ length: 7 }, (_, i) => queue.enter('low').then(() => admitted.push(i))));
    expect(admitted).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(asked).toEqual([
      ['low', 7],
      ['low', 4],
      ['low', 1],
    ]);
  });

  it('asks for one priority at a time, higher first, and never for more than its cap at once', async () => {
    const { asked, queue } = recording((_p, count) => count);
    const entered = [
      ...Array.from({ length: maxAdmittedTogether + 6 }, () => queue.enter('low')),
      queue.enter('high'),
      queue.enter('high'),
    ];
    await Promise.all(entered);
    expect(asked).toEqual([
      ['high', 2],
      ['low', maxAdmittedTogether],
      ['low', 6],
    ]);
  });

  it('gives no slot of a grant to a waiter of lower priority than asked for', async () => {
    let grants = 0;
    const { asked, queue } = recording((_p, count) => (grants++ === 0 ? count + 5 : count));
    const order: string[] = [];
    await Promise.all([
      queue.enter('normal').then(() => order.push('normal')),
      queue.enter('low').then(() => order.push('low')),
    ]);
    expect(order).toEqual(['normal', 'low']);
    expect(asked).toEqual([
      ['normal', 1],
      ['low', 1],
    ]);
    expect(grants).toBe(2);
  });
});

describe('api key fingerprint', () => {
  it('is stable, short and does not contain the key', () => {
    const fingerprint = apiKeyFingerprint('secret-key');
    expect(fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(apiKeyFingerprint('secret-key')).toBe(fingerprint);
    expect(apiKeyFingerprint('other-key')).not.toBe(fingerprint);
  });
});
