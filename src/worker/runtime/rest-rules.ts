// Pure rules of resting: what a machine state is called in metrics, whether an order's writes leave it quiet enough
// to rest, and where a routine poll put off by a step lands. No I/O and no clock: callers pass the time.
import type { OrderSlot } from './slot-phases.ts';

/** How long a routine poll waits at a time while the replica is saturated (until its deferral bound). */
export const pollDeferralStepMs = 5_000;

/** A machine state value as a label: `"a"`, `{"a":"b"}` -> `a.b`, parallel regions joined by `+`. */
export function stateLabel(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object')
    return Object.entries(value)
      .map(([key, inner]) => `${key}.${stateLabel(inner)}`)
      .join('+');
  return 'unknown';
}

/** Nothing of the order waits to be written: no write scheduled, no event pending, its latest record durable. */
export function writtenThrough(slot: OrderSlot): boolean {
  return !slot.persistScheduled && slot.pendingEvents.length === 0 && slot.durableRev === slot.record.rev;
}

/**
 * A routine poll due at `wakeAt`, put off at `now` by one step, never past `bound`: it moves by a whole step from
 * where it was due, so each order keeps its phase within the step (polls put off together must not all come due
 * together once the load eases).
 */
export function pollPutOffTo(wakeAt: number, now: number, bound: number): number {
  const late = now - wakeAt;
  return Math.min(bound, now + pollDeferralStepMs - (late % pollDeferralStepMs));
}
