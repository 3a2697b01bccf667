// The sandbox's sliding windows count what the document's limits count: every request admitted in the last 60 s,
// per identity. Checked against the plain definition (filter the window on every request) over random schedules.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Throttles, type Verdict } from '../../../sandbox/http/throttles.ts';

/** The definition: keep the admitted times younger than the window, refuse at the limit. */
function referenceWindow(limit: number, windowMs: number): (identity: string, now: number) => Verdict {
  const hits = new Map<string, number[]>();
  return (identity, now) => {
    const kept = (hits.get(identity) ?? []).filter((at) => at > now - windowMs);
    hits.set(identity, kept);
    if (kept.length >= limit)
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(((kept[0] ?? now) + windowMs - now) / 1000)),
      };
    kept.push(now);
    return { allowed: true };
  };
}

describe('sandbox throttles', () => {
  it('admits and refuses exactly as the window definition, with its Retry-After', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        // Steps forward in time (sandbox time never goes back).
        fc.array(fc.tuple(fc.constantFrom('key:a', 'key:b', 'ip:c'), fc.nat({ max: 9_000 })), {
          maxLength: 300,
        }),
        (limit, steps) => {
          const throttles = new Throttles({
            globalRequestsPerMinute: limit,
            sameChainFixedRateQuotesPerMinute: 1,
            crossChainFixedRateQuotesPerMinute: 1,
            actionableCooldownMs: 15_000,
          });
          const reference = referenceWindow(limit, 60_000);
          let now = 1_700_000_000_000;
          for (const [identity, step] of steps) {
            // Many requests at one instant, steps of whole 10 s (requests land on the window's edge) and any step up to
            // the window.
            now += step < 6_000 ? 0 : step < 7_500 ? (step % 7) * 10_000 : (step - 7_500) * 40;
            expect(throttles.global(identity, now)).toEqual(reference(identity, now));
          }
        },
      ),
    );
  });

  it('keeps counting right over many windows of one busy identity', () => {
    const throttles = new Throttles({
      globalRequestsPerMinute: 2_500,
      sameChainFixedRateQuotesPerMinute: 1,
      crossChainFixedRateQuotesPerMinute: 1,
      actionableCooldownMs: 15_000,
    });
    const reference = referenceWindow(2_500, 60_000);
    let now = 0;
    // 60 requests a second for over three minutes: the window fills, refuses, drains and is compacted over and over.
    for (let i = 0; i < 12_000; i++) {
      now += i % 3 === 0 ? 50 : 0;
      expect(throttles.global('key:busy', now)).toEqual(reference('key:busy', now));
    }
  });
});
