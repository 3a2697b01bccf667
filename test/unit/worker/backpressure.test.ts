// When the worker stops taking commands and when it takes them again: each cause with its own hysteresis.
import { describe, expect, it } from 'vitest';
import { Backpressure } from '../../../src/worker/backpressure.ts';

const limits = { maxActiveOrders: 50_000, maxInflightExchangeCalls: 200 };

describe('Backpressure', () => {
  it('pauses at too many calls in progress and resumes below 80 % of them', () => {
    const b = new Backpressure(limits);
    expect(b.paused(10, 199)).toBe(false);
    expect(b.paused(10, 200)).toBe(true);
    expect(b.paused(10, 170)).toBe(true);
    expect(b.paused(10, 159)).toBe(false);
  });

  it('pauses at the maximum of orders held and resumes below 90 % of it', () => {
    const b = new Backpressure(limits);
    expect(b.paused(49_999, 0)).toBe(false);
    expect(b.paused(50_000, 0)).toBe(true);
    expect(b.paused(46_000, 0)).toBe(true);
    expect(b.paused(44_999, 0)).toBe(false);
  });

  it('ends a pause for calls once they eased, while the orders held are between 90 % and 100 % of the maximum', () => {
    // The orders of a replica near its maximum rest and do not go away: a pause for a burst of calls must end.
    const b = new Backpressure(limits);
    expect(b.paused(45_090, 150)).toBe(false);
    expect(b.paused(45_090, 200)).toBe(true);
    expect(b.paused(45_090, 100)).toBe(false);
    // Still paused for orders while they stay at or above 90 % after reaching the maximum.
    expect(b.paused(50_000, 100)).toBe(true);
    expect(b.paused(47_000, 100)).toBe(true);
  });
});
