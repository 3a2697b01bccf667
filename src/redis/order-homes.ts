// The partition each order lives on, shared by every replica. A replica holds only its own partitions' state, so
// an order.create that a producer sent to another partition than its order's (the key is right, the partition was
// chosen by hand) would otherwise look like a new order: the first create records its partition here (SET NX) and
// a later one elsewhere is refused. Kept longer than a finished order stays in the state topic. Redis restarted
// empty forgets it: a misrouted create of an existing order during that time is a double fault we accept.
import { z } from 'zod';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

const homeSchema = z.coerce.number().int().min(0);

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
  async claim(orderId: string, partition: number): Promise<number> {
    try {
      const key = orderHomeKey(orderId);
      if ((await this.#redis.set(key, String(partition), 'EX', this.#ttlSeconds, 'NX')) === 'OK')
        return partition;
      const home = homeSchema.safeParse(await this.#redis.get(key));
      // Expired between the two calls, or unreadable: this partition is as good a home as any.
      return home.success ? home.data : partition;
    } catch (error) {
      throw toRedisWorkerError(error, `record the partition of order ${orderId}`);
    }
  }
}
