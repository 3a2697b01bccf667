// The POST /orders/ calls out right now, per sibling key (create-in-flight-1.lua): what keeps the lookup of a create
// in doubt from taking an exchange order that another order's POST has just made and is about to claim. A create
// marks itself before its POST leaves and clears the mark after it claimed the answer's reference (or lost the
// answer); a lookup that finds an unclaimed candidate while another order's mark is up waits and looks again. The
// key is a digest of what makes orders siblings (mode, pair, withdraw address), so it is short and holds no address.
import { createHash } from 'node:crypto';
import { toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

export interface CreatesInFlight {
  /** Marks `orderId`'s POST as out for at most `ttlMs`; throws (retryable) when Redis does not answer. */
  open(siblings: string, orderId: string, ttlMs: number): Promise<void>;
  /** Clears the mark; throws when Redis does not answer (the mark then expires on its own). */
  close(siblings: string, orderId: string): Promise<void>;
  /** Milliseconds until the last mark of an order other than `orderId` expires; 0 when none is out. */
  othersOut(siblings: string, orderId: string): Promise<number>;
}

/** The Redis key of a sibling key (a digest: siblings' addresses are up to 256 characters). */
export function createInFlightKey(siblings: string): string {
  return `create-in-flight:${createHash('sha256').update(siblings).digest('hex').slice(0, 32)}`;
}

export class RedisCreatesInFlight implements CreatesInFlight {
  readonly #redis: Pick<RedisPort, 'createInFlight'>;

  constructor(redis: Pick<RedisPort, 'createInFlight'>) {
    this.#redis = redis;
  }

  async open(siblings: string, orderId: string, ttlMs: number): Promise<void> {
    try {
      await this.#redis.createInFlight(createInFlightKey(siblings), 'open', orderId, Math.max(1, ttlMs));
    } catch (error) {
      throw toRedisWorkerError(error, 'mark a create in flight');
    }
  }

  async close(siblings: string, orderId: string): Promise<void> {
    try {
      await this.#redis.createInFlight(createInFlightKey(siblings), 'close', orderId);
    } catch (error) {
      throw toRedisWorkerError(error, 'clear a create in flight');
    }
  }

  async othersOut(siblings: string, orderId: string): Promise<number> {
    let reply: unknown;
    try {
      reply = await this.#redis.createInFlight(createInFlightKey(siblings), 'others', orderId);
    } catch (error) {
      throw toRedisWorkerError(error, 'read the creates in flight');
    }
    const remaining = Number(reply);
    if (!Number.isFinite(remaining) || remaining < 0)
      throw toRedisWorkerError(
        new Error('create-in-flight-1.lua: unexpected reply'),
        'read the creates in flight',
      );
    return remaining;
  }
}
