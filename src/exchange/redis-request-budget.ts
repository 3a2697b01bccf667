// The request budget shared by every replica: admissions decided atomically in Redis by request-budget-2.lua (GCRA
// with a tolerance per priority, on the Redis clock), a 429 penalty that holds the key for all replicas, and a
// conservative in-process limit whenever Redis does not answer in time - never no limit at all.
// Invariants: keys are API-key fingerprints; one Redis round trip per decision per process (local queue), which
// admits the head waiter and up to 63 of its priority right behind it together. A share of a key (requestShares)
// has a GCRA state of its own beside the key's, held by the key's penalty too, and is admitted before the key.
import { withTimeout } from '../timeouts.ts';
import {
  AdmissionQueue,
  LocalLimiter,
  budgetPolicy,
  exchangeThrottle,
  sharePolicy,
  shareKey,
  type Admission,
  type BudgetPolicy,
  type BudgetPolicyInput,
  type RequestBudget,
  type RequestPriority,
  type RequestShare,
} from './request-budget.ts';

/**
 * The one Redis call this budget makes: the Lua command src/redis/request-budget-2.lua, which src/redis/scripts.ts
 * registers on every client it builds (createRedis; `defineRedisScripts` for a client built elsewhere). The reply
 * is checked here, not trusted.
 */
export interface BudgetRedis {
  requestBudget(
    tatKey: string,
    penaltyKey: string,
    ...args:
      ['acquire', intervalUs: number, capacity: number, count: number] | ['penalize', backOffMs: number]
  ): Promise<unknown>;
}

export interface RedisRequestBudgetOptions extends BudgetPolicyInput {
  /** Prefer a connection with `enableOfflineQueue: false`, so an outage fails fast into the fallback. */
  readonly redis: BudgetRedis;
  /** Default "exchange:budget". */
  readonly keyPrefix?: string;
  /** Requests per window this replica allows itself while Redis is unreachable. Default: a tenth of the limit. */
  readonly fallbackLimit?: number;
  /** A Redis answer slower than this counts as unreachable. Default 250 ms. */
  readonly redisTimeoutMs?: number;
  /** After a failure, how long to stay on the fallback before asking Redis again. Default 1000 ms. */
  readonly retryRedisAfterMs?: number;
  readonly logger?: { warn(fields: Record<string, unknown>, message: string): void };
}

function readReply(reply: unknown, count: number): Admission {
  if (!Array.isArray(reply) || reply.length !== 2) throw new Error('request-budget-2.lua: unexpected reply');
  const [admitted, waitUs] = reply.map(Number) as [number, number];
  if (!Number.isInteger(admitted) || admitted < 0 || admitted > count || !(waitUs >= 0))
    throw new Error('request-budget-2.lua: unexpected reply');
  return admitted > 0 ? { admitted: true, granted: admitted } : { admitted: false, waitMs: waitUs / 1000 };
}

export class RedisRequestBudget implements RequestBudget {
  #unanswered(): Error {
    return new Error(`redis did not answer within ${this.#redisTimeoutMs} ms`);
  }

  readonly policy: BudgetPolicy;
  readonly fallbackPolicy: BudgetPolicy;
  readonly #redis: BudgetRedis;
  readonly #prefix: string;
  readonly #fallback: LocalLimiter;
  readonly #redisTimeoutMs: number;
  readonly #retryRedisAfterMs: number;
  readonly #logger: RedisRequestBudgetOptions['logger'];
  readonly #queues = new Map<string, AdmissionQueue>();
  /** Redis failed and has not answered since; decisions come from the fallback. */
  #down = false;
  /** While down, the earliest time to try Redis again. */
  #probeAt = 0;
  #fallbackAdmissions = 0;

  constructor(options: RedisRequestBudgetOptions) {
    this.policy = budgetPolicy(options);
    const limit = options.limit ?? exchangeThrottle.limit;
    this.fallbackPolicy = budgetPolicy({
      limit: options.fallbackLimit ?? Math.max(1, Math.floor(limit / 10)),
      windowMs: this.policy.windowMs,
    });
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix ?? 'exchange:budget';
    this.#fallback = new LocalLimiter(this.fallbackPolicy);
    this.#redisTimeoutMs = options.redisTimeoutMs ?? 250;
    this.#retryRedisAfterMs = options.retryRedisAfterMs ?? 1_000;
    this.#logger = options.logger;
  }

  /** True while decisions come from the local fallback. */
  get degraded(): boolean {
    return this.#down;
  }

  /** Admissions granted by the fallback since construction (for tests and metrics). */
  get fallbackAdmissions(): number {
    return this.#fallbackAdmissions;
  }

  async acquire(
    key: string,
    priority: RequestPriority,
    signal?: AbortSignal,
    share?: RequestShare,
  ): Promise<void> {
    if (share !== undefined) {
      const part = shareKey(key, share);
      const limits = { ...this.#sharePolicies(share), fallbackKey: part };
      await this.#queue(part, (p, count) =>
        this.#decide(key, p, count, limits, this.#shareTatKey(key, share)),
      ).enter(priority, signal);
    }
    return this.#queue(key, (p, count) =>
      this.#decide(
        key,
        p,
        count,
        { policy: this.policy, fallback: this.#fallback, fallbackKey: key },
        this.#keys(key)[0],
      ),
    ).enter(priority, signal);
  }

  #queue(
    name: string,
    decide: (priority: RequestPriority, count: number) => Promise<Admission>,
  ): AdmissionQueue {
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = new AdmissionQueue(decide);
      this.#queues.set(name, queue);
    }
    return queue;
  }

  readonly #shares = new Map<RequestShare, { policy: BudgetPolicy; fallback: LocalLimiter }>();

  /** A share's policy, and its local fallback (the share of the fallback limit), made once. */
  #sharePolicies(share: RequestShare): { policy: BudgetPolicy; fallback: LocalLimiter } {
    let policies = this.#shares.get(share);
    if (policies === undefined) {
      policies = {
        policy: sharePolicy(this.policy, share),
        fallback: new LocalLimiter(sharePolicy(this.fallbackPolicy, share)),
      };
      this.#shares.set(share, policies);
    }
    return policies;
  }

  /** The share's GCRA state, in the key's hash tag (one Cluster slot with the key's penalty). */
  #shareTatKey(key: string, share: RequestShare): string {
    return `${this.#prefix}:{${key}}:share:${share}:tat`;
  }

  async penalize(key: string, retryAfterMs: number): Promise<void> {
    const backOff = Math.max(1, Math.ceil(retryAfterMs));
    this.#fallback.penalize(key, backOff);
    if (!this.#redisWorthAsking()) return;
    try {
      await withTimeout(
        this.#redis.requestBudget(...this.#keys(key), 'penalize', backOff),
        this.#redisTimeoutMs,
        () => this.#unanswered(),
      );
      this.#markUp();
    } catch (err) {
      this.#markDown(err);
    }
  }

  #keys(key: string): [string, string] {
    // One hash tag per API key keeps both keys in one slot on a Redis Cluster.
    return [`${this.#prefix}:{${key}}:tat`, `${this.#prefix}:{${key}}:penalty`];
  }

  async #decide(
    key: string,
    priority: RequestPriority,
    count: number,
    limits: { policy: BudgetPolicy; fallback: LocalLimiter; fallbackKey: string },
    tatKey: string,
  ): Promise<Admission> {
    if (this.#redisWorthAsking()) {
      try {
        const reply = await withTimeout(
          this.#redis.requestBudget(
            tatKey,
            this.#keys(key)[1],
            'acquire',
            limits.policy.intervalUs,
            limits.policy.capacity[priority],
            count,
          ),
          this.#redisTimeoutMs,
          () => this.#unanswered(),
        );
        this.#markUp();
        return readReply(reply, count);
      } catch (err) {
        this.#markDown(err);
      }
    }
    // The fallback's share is held by the key's penalty as the script holds it (a 429 stops the key's shares too).
    const held = limits.fallback === this.#fallback ? 0 : this.#fallback.penaltyWaitMs(key);
    const admission: Admission =
      held > 0
        ? { admitted: false, waitMs: held }
        : limits.fallback.tryAcquire(limits.fallbackKey, priority, count);
    if (admission.admitted) this.#fallbackAdmissions += admission.granted ?? 1;
    // While degraded, ask Redis again no later than when it may be back.
    return admission.admitted
      ? admission
      : { admitted: false, waitMs: Math.min(admission.waitMs, this.#retryRedisAfterMs) };
  }

  #redisWorthAsking(): boolean {
    return !this.#down || Date.now() >= this.#probeAt;
  }

  #markUp(): void {
    if (!this.#down) return;
    this.#down = false;
    this.#logger?.warn({}, 'request budget: Redis reachable again, shared budget restored');
  }

  #markDown(err: unknown): void {
    this.#probeAt = Date.now() + this.#retryRedisAfterMs;
    if (this.#down) return;
    this.#down = true;
    this.#logger?.warn(
      { error: err instanceof Error ? err.message : String(err), fallbackLimit: this.fallbackPolicy.limit },
      'request budget: Redis unreachable, using the conservative local limit',
    );
  }
}
