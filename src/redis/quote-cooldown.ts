// The exchange refuses an actionable-quote request identical (same mode, pair and amount) to one made in the
// last ~15 s, whichever order or replica made it. One Redis key per request shape, claimed with SET NX PX,
// spaces them out across the fleet. This process also remembers its own claims, so after Redis restarted empty the
// cooldown still holds for them. While Redis cannot answer, nothing is granted: another replica may hold the slot
// (and a command that timed out may have claimed it for us), so a local grant could send an identical request
// inside the cooldown. The caller retries shortly; its order waits, as it would for its lease.
import type { TradingMode } from '../../machines/domain.ts';
import { normalizeDecimal } from '../decimal.ts';
import type { WorkerError } from '../errors.ts';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

export type CooldownDecision = { granted: true } | { granted: false; /** epoch ms */ retryAt: number };

export interface QuoteCooldownOptions {
  /** Redis failed and the request was refused for now (the error carries no secrets). */
  onDegraded?: (error: WorkerError) => void;
  now?: () => number;
}

/** One key per request shape: "1.50" and "1.5" are one amount; anything but a plain non-negative decimal is refused. */
export function quoteCooldownKey(mode: TradingMode, pair: string, amount: string): string {
  const normalizedPair = pair.trim().toUpperCase();
  if (!normalizedPair) throw invalidArgument('pair must not be empty');
  const normalizedAmount = normalizeDecimal(amount);
  if (normalizedAmount === undefined)
    throw invalidArgument(`not a decimal amount: ${JSON.stringify(amount)}`);
  return `quote-cooldown:${mode}:${normalizedPair}:${normalizedAmount}`;
}

const sweepAboveEntries = 256;
/**
 * How long a refusal seen in Redis (another claim's window) answers for Redis here. Only so long: the claim's holder
 * shortens its window (from the hold while its request is in flight, up to 75 s, to the bare cooldown once it has
 * completed), and a refusal remembered for the whole hold made an identical quote wait 75 s instead of 15.
 */
export const refusalRecheckMs = 1_000;
/** How soon a request refused because Redis could not answer may ask again. */
export const unreachableRetryMs = 1_000;

export class QuoteCooldown {
  readonly #redis: RedisPort;
  readonly #opts: QuoteCooldownOptions;
  /**
   * key -> epoch ms until which this process must not repeat the request: our own claim (with its token), or a
   * refusal Redis gave at `seenAt` (another claim's window as it was then).
   */
  readonly #local = new Map<string, { until: number; token: string | undefined; seenAt?: number }>();
  #sweptAt = -Infinity;
  #sizeAfterSweep = 0;

  constructor(redis: RedisPort, opts: QuoteCooldownOptions = {}) {
    this.#redis = redis;
    this.#opts = opts;
  }

  /**
   * Claims the right to request this actionable quote now, for `windowMs`; refused with the epoch ms from which it
   * may be requested again. With a `token`, a claim made with the same token is extended instead (the caller
   * re-arms its window as its request leaves and once it has completed). Never throws for Redis trouble (it is
   * refused, to ask again in `unreachableRetryMs`), only for invalid arguments.
   */
  async tryAcquire(
    mode: TradingMode,
    pair: string,
    amount: string,
    windowMs: number,
    nowMs: number = (this.#opts.now ?? Date.now)(),
    token?: string,
  ): Promise<CooldownDecision> {
    if (!Number.isSafeInteger(windowMs) || windowMs <= 0)
      throw invalidArgument(`cooldownMs must be a positive integer, got ${windowMs}`);
    const key = quoteCooldownKey(mode, pair, amount);
    this.#sweep(nowMs);
    const local = this.#local.get(key);
    const ours = token !== undefined && local?.token === token;
    // Our own claim holds here whatever Redis says (it may have restarted empty); another's only until we ask again.
    const fresh = local?.seenAt === undefined || nowMs - local.seenAt < refusalRecheckMs;
    if (local !== undefined && local.until > nowMs && !ours && fresh)
      return { granted: false, retryAt: local.until };

    let remainingMs: number;
    try {
      remainingMs = Number(await this.#redis.quoteCooldown(key, windowMs, token ?? ''));
    } catch (error) {
      this.#opts.onDegraded?.(toRedisWorkerError(error, 'quote cooldown (refused until Redis answers)'));
      return { granted: false, retryAt: nowMs + Math.min(windowMs, unreachableRetryMs) };
    }
    if (remainingMs < 0) {
      this.#local.set(key, { until: nowMs + windowMs, token });
      return { granted: true };
    }
    const retryAt = nowMs + remainingMs;
    // A refusal answered while this process's own claim was being made (two orders asking at once) is that claim's
    // window: it must not take the claim's place here, or the claim's holder is refused its own re-arm.
    const current = this.#local.get(key);
    if (current?.token === undefined || current.until <= nowMs)
      this.#local.set(key, { until: retryAt, token: undefined, seenAt: nowMs });
    return { granted: false, retryAt };
  }

  /**
   * Drops expired entries: once above `sweepAboveEntries`, at most once a second or when the map doubled since the
   * last sweep. Sweeping on every request made each one walk every entry of the window (thousands of distinct
   * amounts while a burst of DeFi orders is created: quadratic in the burst).
   */
  #sweep(nowMs: number): void {
    const size = this.#local.size;
    if (size <= sweepAboveEntries) return;
    if (nowMs - this.#sweptAt < 1_000 && size < 2 * this.#sizeAfterSweep) return;
    for (const [key, entry] of this.#local) if (entry.until <= nowMs) this.#local.delete(key);
    this.#sweptAt = nowMs;
    this.#sizeAfterSweep = this.#local.size;
  }

  /** Entries remembered locally (expired ones until the next sweep). */
  get localEntries(): number {
    return this.#local.size;
  }
}
