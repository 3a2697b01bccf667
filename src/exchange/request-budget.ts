// The request budget: at most `limit` requests per `windowMs` per API key (the exchange's global throttle is
// 2500/min), admitted by GCRA with a tolerance per priority so money-moving calls overtake polling. Invariants:
// the parameters keep every sliding window of `windowMs` under the limit with a safety margin; waiters of one
// process queue locally by priority and only the head asks the limiter, for itself and the waiters of its priority
// behind it (one decision for a run of them, as that many single ones in a row), so a backlog never floods Redis.
// A share (requestShares) holds a kind of request to a fraction of the key's budget on top of that: it is admitted by
// the share's own limiter first, then by the key's at its priority, so it never takes more than its fraction.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

export const requestPriorities = ['high', 'normal', 'low'] as const;
export type RequestPriority = (typeof requestPriorities)[number];

/**
 * Kinds of request held to a fraction of their key's budget, whatever else waits: the lookups of parked creates
 * (GET /orders/ scans re-checked for hours; docs/decisions/exchange-request-budget.md) take at most a tenth.
 */
export const requestShares = { parked_lookup: 0.1 } as const;
export type RequestShare = keyof typeof requestShares;

/**
 * The port the client depends on: wait for a slot of `key`'s budget (and first of the share's part of it, when the
 * request belongs to one); after a 429, hold every caller of `key`.
 */
export interface RequestBudget {
  acquire(key: string, priority: RequestPriority, signal?: AbortSignal, share?: RequestShare): Promise<void>;
  penalize(key: string, retryAfterMs: number): Promise<void>;
}

/** The documented global throttle: 2500 requests per minute per API key. */
export const exchangeThrottle = { limit: 2500, windowMs: 60_000 } as const;

export interface BudgetPolicyInput {
  /** Requests allowed per window by the exchange. Default 2500. */
  readonly limit?: number;
  /** Window length in ms. Default 60 000. */
  readonly windowMs?: number;
  /** Fraction of the limit kept free for clock and latency jitter between admission and arrival. Default 0.01. */
  readonly safetyMargin?: number;
  /** Requests a priority may take at once from an idle budget; high must be the largest. */
  readonly burst?: Readonly<Record<RequestPriority, number>>;
}

/** GCRA parameters: one request per `intervalUs` sustained; `capacity[p]` back-to-back for priority p. */
export interface BudgetPolicy {
  readonly limit: number;
  readonly windowMs: number;
  readonly intervalUs: number;
  readonly capacity: Readonly<Record<RequestPriority, number>>;
  /** Requests the policy can admit in any window of `windowMs` (sustained rate plus the largest burst). */
  readonly maxPerWindow: number;
}

const defaultBurst: Readonly<Record<RequestPriority, number>> = { high: 25, normal: 15, low: 5 };

/**
 * In any window W, GCRA admits at most W/T + capacity.high. With target = limit - margin, T is chosen so that
 * W/T = target - capacity.high: the sliding-window count stays at or below target < limit.
 */
export function budgetPolicy(input: BudgetPolicyInput = {}): BudgetPolicy {
  const limit = input.limit ?? exchangeThrottle.limit;
  const windowMs = input.windowMs ?? exchangeThrottle.windowMs;
  const requested = input.burst ?? defaultBurst;
  const scale = Math.min(1, limit / 200); // small limits (tests, fallbacks) get proportionally small bursts
  const capacity = {
    high: Math.max(1, Math.floor(requested.high * scale)),
    normal: Math.max(1, Math.floor(requested.normal * scale)),
    low: Math.max(1, Math.floor(requested.low * scale)),
  };
  if (!(capacity.high >= capacity.normal && capacity.normal >= capacity.low))
    throw new RangeError('request budget: burst must not grow as priority falls');
  const margin = Math.ceil(limit * (input.safetyMargin ?? 0.01));
  const sustained = limit - margin - capacity.high;
  if (sustained < 1)
    throw new RangeError(`request budget: limit ${limit} too small for burst ${capacity.high}`);
  const intervalUs = Math.ceil((windowMs * 1000) / sustained);
  return {
    limit,
    windowMs,
    intervalUs,
    capacity,
    maxPerWindow: Math.floor((windowMs * 1000) / intervalUs) + capacity.high,
  };
}

/**
 * The policy of a share of a key's budget: its fraction of the limit, over the same window (admitted at `low`, its
 * sustained rate plus the low burst stays under the fraction).
 */
export function sharePolicy(policy: BudgetPolicy, share: RequestShare): BudgetPolicy {
  return budgetPolicy({
    // At least 3: the smallest limit a policy can pace (one for the margin, one burst, one sustained).
    limit: Math.max(3, Math.floor(policy.limit * requestShares[share])),
    windowMs: policy.windowMs,
  });
}

/** The limiter key of a share of `key`'s budget (its own GCRA state; a 429 of the key holds it too). */
export function shareKey(key: string, share: RequestShare): string {
  return `${key}~${share}`;
}

/** Budget keys are fingerprints: the API key itself never reaches Redis, logs or metrics. */
export function apiKeyFingerprint(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 16);
}

/**
 * One decision of the limiter: admitted (`granted` of the requests asked for together, at least one; 1 when
 * absent), or the wait until the head waiter may ask again.
 */
export type Admission =
  | { readonly admitted: true; readonly granted?: number }
  | { readonly admitted: false; readonly waitMs: number };

/** Waiters of one priority admitted by one decision at most (one Redis round trip for a run of them). */
export const maxAdmittedTogether = 64;

/** Pure GCRA step (the Lua script does the same against Redis time). Times in microseconds. */
export function gcraStep(
  tatUs: number,
  nowUs: number,
  intervalUs: number,
  capacity: number,
): { admitted: boolean; waitUs: number; tatUs: number } {
  const newTat = Math.max(tatUs, nowUs) + intervalUs;
  const allowAt = newTat - capacity * intervalUs;
  if (allowAt > nowUs) return { admitted: false, waitUs: allowAt - nowUs, tatUs };
  return { admitted: true, waitUs: 0, tatUs: newTat };
}

/** In-process GCRA limiter with a penalty box; the decision source of LocalRequestBudget and the Redis fallback. */
export class LocalLimiter {
  readonly #policy: BudgetPolicy;
  readonly #tat = new Map<string, number>();
  readonly #penaltyUntil = new Map<string, number>();
  readonly #nowMs: () => number;

  constructor(policy: BudgetPolicy, nowMs: () => number = () => performance.timeOrigin + performance.now()) {
    this.#policy = policy;
    this.#nowMs = nowMs;
  }

  /** Admits up to `count` requests of `priority` at once: as many as that many single steps in a row would. */
  tryAcquire(key: string, priority: RequestPriority, count = 1): Admission {
    const nowMs = this.#nowMs();
    const penaltyUntil = this.#penaltyUntil.get(key) ?? 0;
    if (penaltyUntil > nowMs) return { admitted: false, waitMs: penaltyUntil - nowMs };
    let tat = this.#tat.get(key) ?? 0;
    let granted = 0;
    for (; granted < count; granted++) {
      const step = gcraStep(tat, nowMs * 1000, this.#policy.intervalUs, this.#policy.capacity[priority]);
      if (!step.admitted) {
        if (granted === 0) return { admitted: false, waitMs: step.waitUs / 1000 };
        break;
      }
      tat = step.tatUs;
    }
    this.#tat.set(key, tat);
    return count === 1 ? { admitted: true } : { admitted: true, granted };
  }

  /** How long a 429 still holds `key` (0 when it does not). */
  penaltyWaitMs(key: string): number {
    return Math.max(0, (this.#penaltyUntil.get(key) ?? 0) - this.#nowMs());
  }

  penalize(key: string, retryAfterMs: number): void {
    const until = this.#nowMs() + retryAfterMs;
    if (until > (this.#penaltyUntil.get(key) ?? 0)) this.#penaltyUntil.set(key, until);
  }
}

interface Waiter {
  readonly priority: RequestPriority;
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

const rank: Record<RequestPriority, number> = { high: 0, normal: 1, low: 2 };

/**
 * Local waiting room of one key: waiters ordered by priority then arrival; one pump asks the limiter for the head
 * waiter and the waiters of its priority right behind it (up to `maxAdmittedTogether`), admits as many as it is
 * granted from the head, sleeps the wait it is told when none was, and is woken early when a waiter of higher
 * priority arrives.
 */
export class AdmissionQueue {
  readonly #ask: (priority: RequestPriority, count: number) => Promise<Admission>;
  readonly #waiters: Waiter[] = [];
  #seq = 0;
  #pumping = false;
  #wake: AbortController | undefined;
  #sleepingFor: RequestPriority | undefined;

  constructor(ask: (priority: RequestPriority, count: number) => Promise<Admission>) {
    this.#ask = ask;
  }

  /** The head waiter and those of its priority right behind it, at most `maxAdmittedTogether`. */
  #run(priority: RequestPriority): number {
    let count = 1;
    while (count < maxAdmittedTogether && this.#waiters[count]?.priority === priority) count++;
    return count;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  enter(priority: RequestPriority, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        seq: this.#seq++,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const at = this.#waiters.indexOf(waiter);
          if (at >= 0) this.#waiters.splice(at, 1);
          reject(signal?.reason as Error);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#insert(waiter);
      if (this.#sleepingFor !== undefined && rank[priority] < rank[this.#sleepingFor]) this.#wake?.abort();
      // The pump starts once the current task's callers have entered too: one question for all of them.
      if (!this.#pumping) {
        this.#pumping = true;
        queueMicrotask(() => void this.#pump());
      }
    });
  }

  #insert(waiter: Waiter): void {
    let at = this.#waiters.length;
    while (at > 0) {
      const before = this.#waiters[at - 1];
      if (before === undefined || rank[before.priority] <= rank[waiter.priority]) break;
      at -= 1;
    }
    this.#waiters.splice(at, 0, waiter);
  }

  async #pump(): Promise<void> {
    try {
      for (;;) {
        const head = this.#waiters[0];
        if (head === undefined) return;
        let admission: Admission;
        try {
          admission = await this.#ask(head.priority, this.#run(head.priority));
        } catch (err) {
          // The limiter itself failed (no fallback left): fail the head rather than admit it unmetered.
          this.#waiters.shift();
          head.signal?.removeEventListener('abort', head.onAbort);
          head.reject(err);
          continue;
        }
        if (admission.admitted) {
          // The slots go to the waiters at the head now: one that aborted while we asked leaves its slot to the
          // next, one of higher priority that arrived meanwhile takes one first; none goes to a lower priority than
          // asked for (its tolerance is smaller). Slots nobody is left for lapse.
          const granted = admission.granted ?? 1;
          let admitted = 0;
          while (admitted < granted) {
            const next = this.#waiters[admitted];
            if (next === undefined || rank[next.priority] > rank[head.priority]) break;
            admitted++;
          }
          for (const waiter of this.#waiters.splice(0, admitted)) {
            waiter.signal?.removeEventListener('abort', waiter.onAbort);
            waiter.resolve();
          }
          continue;
        }
        this.#wake = new AbortController();
        this.#sleepingFor = head.priority;
        try {
          await sleep(Math.max(1, Math.ceil(admission.waitMs)), undefined, { signal: this.#wake.signal });
        } catch {
          /* woken by a higher-priority arrival */
        } finally {
          this.#sleepingFor = undefined;
          this.#wake = undefined;
        }
      }
    } finally {
      this.#pumping = false;
    }
  }
}

/** A budget for one process: the in-process limiter behind a priority waiting room per key (and per share). */
export class LocalRequestBudget implements RequestBudget {
  readonly policy: BudgetPolicy;
  readonly #limiter: LocalLimiter;
  readonly #shareLimiters = new Map<RequestShare, LocalLimiter>();
  readonly #queues = new Map<string, AdmissionQueue>();

  constructor(policy: BudgetPolicyInput = {}) {
    this.policy = budgetPolicy(policy);
    this.#limiter = new LocalLimiter(this.policy);
  }

  async acquire(
    key: string,
    priority: RequestPriority,
    signal?: AbortSignal,
    share?: RequestShare,
  ): Promise<void> {
    if (share !== undefined) {
      let limiter = this.#shareLimiters.get(share);
      if (limiter === undefined)
        this.#shareLimiters.set(share, (limiter = new LocalLimiter(sharePolicy(this.policy, share))));
      const part = shareKey(key, share);
      await this.#queue(part, (p, count) => {
        // The key's 429 holds its shares too.
        const held = this.#limiter.penaltyWaitMs(key);
        return held > 0 ? { admitted: false, waitMs: held } : limiter.tryAcquire(part, p, count);
      }).enter(priority, signal);
    }
    return this.#queue(key, (p, count) => this.#limiter.tryAcquire(key, p, count)).enter(priority, signal);
  }

  #queue(key: string, decide: (priority: RequestPriority, count: number) => Admission): AdmissionQueue {
    let queue = this.#queues.get(key);
    if (queue === undefined) {
      queue = new AdmissionQueue((p, count) => Promise.resolve(decide(p, count)));
      this.#queues.set(key, queue);
    }
    return queue;
  }

  penalize(key: string, retryAfterMs: number): Promise<void> {
    this.#limiter.penalize(key, retryAfterMs);
    return Promise.resolve();
  }
}
