// The sandbox's own clock: a base time source (wall clock by default) plus an offset that only moves forward.
// Everything time-dependent in the exchange (quote expiry, cooldowns, throttle windows, payment windows,
// the automatic schedule) reads this clock, so tests can jump ahead without waiting.

export type TimeSource = () => number;

export interface SandboxClock {
  /** Sandbox time, epoch milliseconds. */
  now(): number;
  /** Moves sandbox time forward by ms (negative values are refused: exchange time never goes back). */
  advance(ms: number): number;
  /** How far the sandbox runs ahead of its base time source. */
  offsetMs(): number;
}

export function createSandboxClock(source: TimeSource = Date.now): SandboxClock {
  let offset = 0;
  return {
    now: () => source() + offset,
    advance(ms) {
      if (!Number.isFinite(ms) || ms < 0)
        throw new RangeError('advanceClock takes a non-negative number of ms');
      offset += ms;
      return source() + offset;
    },
    offsetMs: () => offset,
  };
}
