import { describe, expect, it } from 'vitest';
import { backoffCeiling, backoffDelay, nextRandom, seedFromString } from '../../../machines/backoff.ts';

const policy = { baseMs: 1_000, maxMs: 30_000, factor: 2 };

describe('backoff', () => {
  it('grows the ceiling by the factor per failure and caps it at maxMs', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map((attempt) => backoffCeiling(policy, attempt))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
    expect(backoffCeiling(policy, 5_000)).toBe(30_000);
  });

  it('keeps every jittered delay within [ceiling/2, ceiling]', () => {
    let rngState = seedFromString('order-1');
    for (let attempt = 0; attempt < 12; attempt += 1) {
      const { delayMs, rngState: next } = backoffDelay(policy, attempt, rngState);
      const ceiling = backoffCeiling(policy, attempt);
      expect(delayMs).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delayMs).toBeLessThanOrEqual(ceiling);
      expect(next).not.toBe(rngState);
      rngState = next;
    }
  });

  it('draws the same numbers from the same seed and different ones from different seeds', () => {
    const draws = (seed: number) => {
      let state = seed;
      return Array.from({ length: 5 }, () => {
        const draw = nextRandom(state);
        state = draw.state;
        return draw.value;
      });
    };
    expect(draws(7)).toEqual(draws(7));
    expect(draws(7)).not.toEqual(draws(8));
    expect(draws(7).every((value) => value >= 0 && value < 1)).toBe(true);
    expect(seedFromString('order-1')).not.toBe(seedFromString('order-2'));
  });
});
