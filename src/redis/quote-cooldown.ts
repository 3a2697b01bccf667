// The exchange refuses an actionable-quote request identical (same mode, pair and amount) to one made in the
// last ~15 s, whichever order or replica made it. One Redis key per request shape, claimed with SET NX PX,
// spaces them out across the fleet. This process also remembers its own claims, so while Redis is unreachable
// (or after it restarted empty) the cooldown still holds locally: conservative, never looser than Redis.
import type { TradingMode } from '../../machines/domain.ts';
import type { WorkerError } from '../errors.ts';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

export type CooldownDecision = { granted: true } | { granted: false; /** epoch ms */ retryAt: number };

export interface QuoteCooldownOptions {
  /** Redis failed and the local map decided instead (the error carries no secrets). */
  onDegraded?: (error: WorkerError) => void;
  now?: () => number;
}

/** "1.50", "01.5", "+1.5" and "1.5" are one amount; rejects anything but a plain non-negative decimal. */
export function normalizeDecimal(amount: string): string {
  const match = /^\+?(\d*)(?:\.(\d*))?$/.exec(amount.trim());
  const whole = match?.[1] ?? '';
  const fraction = match?.[2] ?? '';
  if (!match || whole.length + fraction.length === 0)
    throw invalidArgument(`not a decimal amount: ${JSON.stringify(amount)}`);
  const integer = whole.replace(/^0+/, '') || '0';
  const decimals = fraction.replace(/0+$/, '');
  return decimals ? `${integer}.${decimals}` : integer;
}

export function quoteCooldownKey(mode: TradingMode, pair: string, amount: string): string {
  const normalizedPair = pair.trim().toUpperCase();
  if (!normalizedPair) throw invalidArgument('pair must not be empty');
  return `quote-cooldown:${mode}:${normalizedPair}:${normalizeDecimal(amount)}`;
}

const sweepAboveEntries = 256;

export class QuoteCooldown {
  readonly #redis: RedisPort;
  readonly #opts: QuoteCooldownOptions;
  /** key -> epoch ms until which this process must not repeat the request. */
  readonly #local = new Map<string, number>();

  constructor(redis: RedisPort, opts: QuoteCooldownOptions = {}) {
    this.#redis = redis;
    this.#opts = opts;
  }

  /**
   * Claims the right to request this actionable quote now; refused with the epoch ms from which it may be
   * requested again. Never throws for Redis trouble (the local map decides), only for invalid arguments.
   */
  async tryAcquire(
    mode: TradingMode,
    pair: string,
    amount: string,
    cooldownMs: number,
    nowMs: number = (this.#opts.now ?? Date.now)(),
  ): Promise<CooldownDecision> {
    if (!Number.isSafeInteger(cooldownMs) || cooldownMs <= 0)
      throw invalidArgument(`cooldownMs must be a positive integer, got ${cooldownMs}`);
    const key = quoteCooldownKey(mode, pair, amount);
    this.#sweep(nowMs);
    const localUntil = this.#local.get(key);
    if (localUntil !== undefined && localUntil > nowMs) return { granted: false, retryAt: localUntil };

    let remainingMs: number;
    try {
      remainingMs = Number(await this.#redis.quoteCooldown(key, cooldownMs));
    } catch (error) {
      this.#opts.onDegraded?.(toRedisWorkerError(error, 'quote cooldown (deciding locally)'));
      this.#local.set(key, nowMs + cooldownMs);
      return { granted: true };
    }
    if (remainingMs < 0) {
      this.#local.set(key, nowMs + cooldownMs);
      return { granted: true };
    }
    const retryAt = nowMs + remainingMs;
    this.#local.set(key, retryAt);
    return { granted: false, retryAt };
  }

  #sweep(nowMs: number): void {
    if (this.#local.size <= sweepAboveEntries) return;
    for (const [key, until] of this.#local) if (until <= nowMs) this.#local.delete(key);
  }
}
