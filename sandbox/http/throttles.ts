// Request budgets on the sandbox clock: the global per-key (or per-IP) limit of the document, the tighter
// fixed-rate quote throttles (same-chain and cross-chain, per key), and the cooldown for identical actionable
// quote requests. Sliding windows: a request counts for exactly 60 s after it was admitted.

export type Verdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

class SlidingWindow {
  /**
   * Per identity, the times of its admitted requests, oldest first, from `head` on (the ones before it have left
   * the window): a request drops what left and counts the rest, without copying them (filtering the whole window
   * per request cost the simulator about 5 % of its CPU at a few thousand requests a minute).
   */
  readonly #hits = new Map<string, { times: number[]; head: number }>();
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  hit(identity: string, now: number): Verdict {
    let hits = this.#hits.get(identity);
    if (!hits) this.#hits.set(identity, (hits = { times: [], head: 0 }));
    // Sandbox time only moves forward, so the times are in order and what left the window is a prefix.
    while (hits.head < hits.times.length && hits.times[hits.head]! <= now - this.#windowMs) hits.head++;
    if (hits.head > 1024 && hits.head * 2 > hits.times.length) {
      hits.times = hits.times.slice(hits.head);
      hits.head = 0;
    }
    if (hits.times.length - hits.head >= this.#limit) {
      const oldest = hits.times[hits.head] ?? now;
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil((oldest + this.#windowMs - now) / 1000)),
      };
    }
    hits.times.push(now);
    return { allowed: true };
  }
}

/** A request the sandbox refused under one of its own limits (injected throttle faults are not recorded). */
export interface ThrottleRefusal {
  rule: 'global' | 'same-chain' | 'cross-chain' | 'actionable_cooldown';
  at: number;
  pair?: string;
  amount?: string;
}

export interface ThrottleLimits {
  globalRequestsPerMinute: number;
  sameChainFixedRateQuotesPerMinute: number;
  crossChainFixedRateQuotesPerMinute: number;
  actionableCooldownMs: number;
}

export class Throttles {
  readonly #global: SlidingWindow;
  readonly #sameChain: SlidingWindow;
  readonly #crossChain: SlidingWindow;
  readonly #cooldowns = new Map<string, number>();
  readonly #cooldownMs: number;
  readonly #refusals: ThrottleRefusal[] = [];

  constructor(limits: ThrottleLimits) {
    this.#global = new SlidingWindow(limits.globalRequestsPerMinute, 60_000);
    this.#sameChain = new SlidingWindow(limits.sameChainFixedRateQuotesPerMinute, 60_000);
    this.#crossChain = new SlidingWindow(limits.crossChainFixedRateQuotesPerMinute, 60_000);
    this.#cooldownMs = limits.actionableCooldownMs;
  }

  /** The document's global throttle: identity is the API key, or the client IP for unauthenticated access. */
  global(identity: string, now: number): Verdict {
    return this.#record(this.#global.hit(identity, now), { rule: 'global', at: now });
  }

  fixedRate(kind: 'same-chain' | 'cross-chain', apiKey: string, now: number): Verdict {
    const verdict = (kind === 'same-chain' ? this.#sameChain : this.#crossChain).hit(apiKey, now);
    return this.#record(verdict, { rule: kind, at: now });
  }

  /** Every refusal so far, oldest first (identities are not recorded: they are API keys). */
  refusals(): ThrottleRefusal[] {
    return this.#refusals.map((r) => ({ ...r }));
  }

  #record(verdict: Verdict, refusal: ThrottleRefusal): Verdict {
    if (!verdict.allowed) this.#refusals.push(refusal);
    return verdict;
  }

  /** Identical actionable requests (same key, pair and amount) within the cooldown are refused. */
  actionableCooldown(apiKey: string, pair: string, amount: string, now: number): Verdict {
    const key = `${apiKey}|${pair}|${amount}`;
    const last = this.#cooldowns.get(key);
    if (last !== undefined && now - last < this.#cooldownMs) {
      return this.#record(
        {
          allowed: false,
          retryAfterSeconds: Math.max(1, Math.ceil((last + this.#cooldownMs - now) / 1000)),
        },
        { rule: 'actionable_cooldown', at: now, pair, amount },
      );
    }
    this.#cooldowns.set(key, now);
    return { allowed: true };
  }
}
