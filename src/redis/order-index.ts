// Routes an exchange webhook (which names the exchange's unique_reference) to our order id. A cache, not a
// record: entries expire, and the runtime re-puts the mapping whenever it restores an order from Kafka, so a
// Redis that restarted empty is refilled as orders resume.
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

export interface OrderIndexOptions {
  /** How long a mapping lives without being put again (default 30 days). */
  ttlSeconds?: number;
}

export function orderIndexKey(uniqueReference: string): string {
  return `order-index:${uniqueReference}`;
}

export class OrderIndex {
  readonly #redis: RedisPort;
  readonly #ttlSeconds: number;

  constructor(redis: RedisPort, opts: OrderIndexOptions = {}) {
    this.#redis = redis;
    this.#ttlSeconds = opts.ttlSeconds ?? 30 * 24 * 60 * 60;
    if (!Number.isSafeInteger(this.#ttlSeconds) || this.#ttlSeconds <= 0)
      throw invalidArgument(`ttlSeconds must be a positive integer, got ${this.#ttlSeconds}`);
  }

  /** Maps uniqueReference to orderId (overwriting, and restarting the ttl). Throws WorkerError on Redis failure. */
  async put(uniqueReference: string, orderId: string): Promise<void> {
    if (!uniqueReference || !orderId) throw invalidArgument('uniqueReference and orderId must not be empty');
    try {
      await this.#redis.set(orderIndexKey(uniqueReference), orderId, 'EX', this.#ttlSeconds);
    } catch (error) {
      throw toRedisWorkerError(error, `index order ${orderId}`);
    }
  }

  /** The order id for uniqueReference, or null when unknown. Throws WorkerError on Redis failure. */
  async get(uniqueReference: string): Promise<string | null> {
    try {
      return await this.#redis.get(orderIndexKey(uniqueReference));
    } catch (error) {
      throw toRedisWorkerError(error, 'look up order by unique reference');
    }
  }
}
