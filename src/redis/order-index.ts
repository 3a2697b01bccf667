// Routes an exchange webhook (which names the exchange's unique_reference) to our order id and the partition that
// order lives on, for a replica that does not hold that partition. A cache, not a record: entries expire, and the
// owner of a partition re-puts the mapping of every order whenever it catches the partition up from Kafka, so a
// Redis that restarted empty is refilled as partitions move. A miss only costs the webhook: the poll covers it.
import { z } from 'zod';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

/** An entry with its partition (what `put` with a partition stores); a bare order id is an older entry. */
const routeSchema = z.object({ order_id: z.string().min(1), partition: z.number().int().min(0) });

function parseEntry(value: string): { orderId: string; partition?: number } {
  if (!value.startsWith('{')) return { orderId: value };
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return { orderId: value };
  }
  const route = routeSchema.safeParse(json);
  return route.success
    ? { orderId: route.data.order_id, partition: route.data.partition }
    : { orderId: value };
}

export interface OrderIndexOptions {
  /** How long a mapping lives without being put again (default 30 days). */
  ttlSeconds?: number;
  /**
   * Routes `locate` found (with their partition) kept in process, at most this many, the oldest forgotten first
   * (default 0: none). A reference's order and the partition that order lives on never change (the order's home is
   * fixed at its first command), so a kept route is never wrong, only possibly gone: a hint routed with it to an
   * order that left is dropped by its partition's owner, as a hint for an unknown order always is. An order gets
   * several webhooks in its life, and a replica routes those of the orders it does not drive: one Redis read each.
   */
  cacheEntries?: number;
}

type Route = { orderId: string; partition: number };

export function orderIndexKey(uniqueReference: string): string {
  return `order-index:${uniqueReference}`;
}

export class OrderIndex {
  readonly #redis: RedisPort;
  readonly #ttlSeconds: number;
  readonly #cacheEntries: number;
  readonly #found = new Map<string, Route>();

  constructor(redis: RedisPort, opts: OrderIndexOptions = {}) {
    this.#redis = redis;
    this.#ttlSeconds = opts.ttlSeconds ?? 30 * 24 * 60 * 60;
    if (!Number.isSafeInteger(this.#ttlSeconds) || this.#ttlSeconds <= 0)
      throw invalidArgument(`ttlSeconds must be a positive integer, got ${this.#ttlSeconds}`);
    this.#cacheEntries = opts.cacheEntries ?? 0;
    if (!Number.isSafeInteger(this.#cacheEntries) || this.#cacheEntries < 0)
      throw invalidArgument(`cacheEntries must be a non-negative integer, got ${this.#cacheEntries}`);
  }

  /**
   * Maps uniqueReference to orderId, and to the partition it lives on when given (overwriting, and restarting the
   * ttl). Throws WorkerError on Redis failure.
   */
  async put(uniqueReference: string, orderId: string, partition?: number): Promise<void> {
    if (!uniqueReference || !orderId) throw invalidArgument('uniqueReference and orderId must not be empty');
    const value =
      partition === undefined
        ? orderId
        : JSON.stringify({ order_id: orderId, partition } satisfies z.input<typeof routeSchema>);
    this.#found.delete(uniqueReference);
    try {
      await this.#redis.set(orderIndexKey(uniqueReference), value, 'EX', this.#ttlSeconds);
    } catch (error) {
      throw toRedisWorkerError(error, `index order ${orderId}`);
    }
  }

  /** The order id for uniqueReference, or null when unknown. Throws WorkerError on Redis failure. */
  async get(uniqueReference: string): Promise<string | null> {
    return (await this.locate(uniqueReference))?.orderId ?? null;
  }

  /** The order id and (when it was put with one) its partition, or null. Throws WorkerError on Redis failure. */
  async locate(uniqueReference: string): Promise<{ orderId: string; partition?: number } | null> {
    const kept = this.#found.get(uniqueReference);
    if (kept) return { ...kept };
    let value: string | null;
    try {
      value = await this.#redis.get(orderIndexKey(uniqueReference));
    } catch (error) {
      throw toRedisWorkerError(error, 'look up order by unique reference');
    }
    if (value === null) return null;
    const entry = parseEntry(value);
    if (entry.partition !== undefined)
      this.#keep(uniqueReference, { orderId: entry.orderId, partition: entry.partition });
    return entry;
  }

  #keep(uniqueReference: string, route: Route): void {
    if (this.#cacheEntries === 0) return;
    if (this.#found.size >= this.#cacheEntries && !this.#found.has(uniqueReference))
      this.#found.delete(this.#found.keys().next().value as string);
    this.#found.set(uniqueReference, route);
  }

  /** Drops the mapping (the order left the state topic). Throws WorkerError on Redis failure. */
  async forget(uniqueReference: string): Promise<void> {
    this.#found.delete(uniqueReference);
    try {
      await this.#redis.del(orderIndexKey(uniqueReference));
    } catch (error) {
      throw toRedisWorkerError(error, 'forget the order of a unique reference');
    }
  }
}
