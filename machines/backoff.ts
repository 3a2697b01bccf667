// Pure retry-delay math for the order machine: exponential backoff with "equal jitter", capped.
// No Math.random: jitter comes from a seeded PRNG whose state lives in the machine's context, so a
// machine restored from its persisted form draws exactly the numbers it would have drawn, and tests are exact.

export interface BackoffPolicy {
  /** Ceiling of the first retry delay. */
  readonly baseMs: number;
  /** Largest ceiling any retry delay may have. */
  readonly maxMs: number;
  /** Growth of the ceiling per consecutive failure. */
  readonly factor: number;
}

export const defaultBackoffPolicy: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000, factor: 2 };

/**
 * mulberry32: a tiny 32-bit PRNG. `state` is any uint32; returns a value in [0, 1) and the next state.
 * Chosen because its whole state is one JSON number.
 */
export function nextRandom(state: number): { readonly value: number; readonly state: number } {
  const next = (state + 0x6d2b79f5) >>> 0;
  let t = next;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  const value = ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  return { value, state: next };
}

/** A stable uint32 seed from a string (FNV-1a), so two orders never share a jitter sequence by default. */
export function seedFromString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The ceiling for the `attempt`-th consecutive failure (0-based): min(maxMs, baseMs * factor^attempt). */
export function backoffCeiling(policy: BackoffPolicy, attempt: number): number {
  const grown = policy.baseMs * Math.pow(policy.factor, Math.max(0, attempt));
  return Math.min(policy.maxMs, Number.isFinite(grown) ? grown : policy.maxMs);
}

/**
 * Equal jitter: a delay in [ceiling/2, ceiling], so the delay still grows visibly with each failure
 * while replicas retrying the same thing spread out. Returns the delay and the advanced PRNG state.
 */
export function backoffDelay(
  policy: BackoffPolicy,
  attempt: number,
  rngState: number,
): { readonly delayMs: number; readonly rngState: number } {
  const ceiling = backoffCeiling(policy, attempt);
  const draw = nextRandom(rngState);
  return { delayMs: Math.round(ceiling / 2 + (draw.value * ceiling) / 2), rngState: draw.state };
}
