import { describe, expect, it } from 'vitest';
import {
  LocalLimiter,
  apiKeyFingerprint,
  budgetPolicy,
  gcraStep,
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

describe('api key fingerprint', () => {
  it('is stable, short and does not contain the key', () => {
    const fingerprint = apiKeyFingerprint('secret-key');
    expect(fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(apiKeyFingerprint('secret-key')).toBe(fingerprint);
    expect(apiKeyFingerprint('other-key')).not.toBe(fingerprint);
  });
});
