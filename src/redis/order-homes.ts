// The partition each order lives on, shared by every replica. A new order's home is the canonical partition of its
// order_id (command-routing.ts), where its create claims it here (SET NX); an order created before that rule lives
// where its first create arrived, and a create of it that reaches the canonical partition first finds that home
// here and is forwarded to it. Kept longer than a finished order stays in the state topic, and marked retired
// when the retention sweep removes the order from it (retire): a create of the order replayed after that (the
// commands topic may keep it longer than the state topic keeps the order) is refused instead of starting a second
// exchange order. Redis restarted empty forgets both: a replayed create of an old order during that time (or one of
// an order created under the old rule, before its record is read) is a double fault we accept.
import { z } from 'zod';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

/** A home as stored: the partition, prefixed `retired:` once the order left the state topic. */
const homeSchema = z
  .string()
  .regex(/^(retired:)?\d{1,9}$/)
  .transform((value) => ({
    partition: Number(value.slice(value.lastIndexOf(':') + 1)),
    retired: value.startsWith('retired:'),
  }));

/** Where an order lives, and whether it already ran its course there and left the state topic. */
export interface OrderHome {
  partition: number;
  retired: boolean;
}

/** How long a home is kept (from the create, and again from its retirement): twice the retention, 30 days at least. */
export function orderHomeTtlMs(finishedOrderRetentionMs: number): number {
  return Math.max(30 * 86_400_000, 2 * finishedOrderRetentionMs);
}

export function orderHomeKey(orderId: string): string {
  return `order-home:${orderId}`;
}

export class OrderHomes {
  readonly #redis: Pick<RedisPort, 'get' | 'set'>;
  readonly #ttlSeconds: number;

  constructor(redis: Pick<RedisPort, 'get' | 'set'>, opts: { ttlMs: number }) {
    this.#redis = redis;
    this.#ttlSeconds = Math.ceil(opts.ttlMs / 1000);
    if (!Number.isSafeInteger(this.#ttlSeconds) || this.#ttlSeconds <= 0)
      throw invalidArgument(`ttlMs must be a positive number of milliseconds, got ${opts.ttlMs}`);
  }

  /** Records `partition` as the order's home unless it has one; resolves to its home. Throws WorkerError. */
  async claim(orderId: string, partition: number): Promise<OrderHome> {
    try {
      const key = orderHomeKey(orderId);
      if ((await this.#redis.set(key, String(partition), 'EX', this.#ttlSeconds, 'NX')) === 'OK')
        return { partition, retired: false };
      const home = homeSchema.safeParse(await this.#redis.get(key));
      // Expired between the two calls, or unreadable: this partition is as good a home as any.
      return home.success ? home.data : { partition, retired: false };
    } catch (error) {
      throw toRedisWorkerError(error, `record the partition of order ${orderId}`);
    }
  }

  /**
   * Marks the order's home retired (its finished order is about to leave the state topic), for the ttl from now.
   * Throws WorkerError: the caller keeps the order until a retire succeeds.
   */
  async retire(orderId: string, partition: number): Promise<void> {
    try {
      await this.#redis.set(orderHomeKey(orderId), `retired:${partition}`, 'EX', this.#ttlSeconds);
    } catch (error) {
      throw toRedisWorkerError(error, `mark order ${orderId} as retired`);
    }
  }
}
