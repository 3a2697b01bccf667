// When the worker stops taking commands and when it takes them again: each cause with its own hysteresis.
import { describe, expect, it } from 'vitest';
import { Backpressure } from '../../../src/worker/backpressure.ts';

const limits = { maxActiveOrders: 50_000, maxInflightExchangeCalls: 200 };

/** Feeds (live orders, calls in progress) readings in turn and expects each verdict (paused: either remedy on). */
function expectVerdicts(readings: ReadonlyArray<[active: number, inflight: number, paused: boolean]>): void {
  const b = new Backpressure(limits);
  for (const [active, inflight, paused] of readings) {
    const verdict = b.verdict(active, inflight);
    expect(verdict.pauseConsumption || verdict.holdCreates).toBe(paused);
  }
}

describe('Backpressure', () => {
  it('pauses at too many calls in progress and resumes below 80 % of them', () => {
    expectVerdicts([
      [10, 199, false],
      [10, 200, true],
      [10, 170, true],
      [10, 159, false],
    ]);
  });

  it('pauses at the maximum of orders held and resumes below 90 % of it', () => {
    expectVerdicts([
      [49_999, 0, false],
      [50_000, 0, true],
      [46_000, 0, true],
      [44_999, 0, false],
    ]);
  });

  it('ends a pause for calls once they eased, while the orders held are between 90 % and 100 % of the maximum', () => {
    // The orders of a replica near its maximum rest and do not go away: a pause for a burst of calls must end.
    expectVerdicts([
      [45_090, 150, false],
      [45_090, 200, true],
      [45_090, 100, false],
      // Still paused for orders while they stay at or above 90 % after reaching the maximum.
      [50_000, 100, true],
      [47_000, 100, true],
    ]);
  });

  it('pauses consumption only for calls in progress, and holds only new orders for the orders held', () => {
    const b = new Backpressure(limits);
    expect(b.verdict(50_000, 0)).toEqual({ pauseConsumption: false, holdCreates: true });
    expect(b.verdict(50_000, 200)).toEqual({ pauseConsumption: true, holdCreates: true });
    expect(b.verdict(44_999, 200)).toEqual({ pauseConsumption: true, holdCreates: false });
    expect(b.verdict(44_999, 0)).toEqual({ pauseConsumption: false, holdCreates: false });
  });
});
