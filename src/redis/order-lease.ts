// Per-order lease: at most one replica drives an order at a time, across Kafka rebalances and process pauses.
// Every grant carries a fencing token that increases per order on every acquire, also across a Redis that
// restarted empty (the caller passes the highest fence it recorded in Kafka as `minFence`); downstream writes
// carry the fence so a stale holder's late writes can be rejected. Only the token holder renews or releases.
import { WorkerError } from '../errors.ts';
import { monotonicNow } from './monotonic-clock.ts';
import { invalidArgument, redisErrorCodes, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

export interface LeaseGrant {
  readonly orderId: string;
  readonly owner: string;
  /** Fencing token: strictly greater than every fence handed out before for this order. */
  readonly fence: number;
  readonly ttlMs: number;
  /**
   * The local monotonic clock (monotonic-clock.ts, not epoch ms) just BEFORE the acquire was sent: the lease is ours at
   * most until acquiredAt + ttlMs.
   */
  readonly acquiredAt: number;
}

export interface LeaseHolder {
  readonly owner: string;
  readonly fence: number;
  /** Milliseconds until the lease expires unless renewed. */
  readonly remainingMs: number;
}

export interface OrderLeaseOptions {
  /** How long an idle fence counter is kept (default 7 days, 0 = forever). After that, monotonicity rests on minFence. */
  fenceRetentionMs?: number;
  now?: () => number;
}

const defaultFenceRetentionMs = 7 * 24 * 60 * 60 * 1000;

// The order id in braces is a Redis Cluster hash tag: lease and fence counter live in one slot, as the
// acquire script touches both.
export function leaseKey(orderId: string): string {
  return `lease:{${orderId}}`;
}

export function fenceKey(orderId: string): string {
  return `lease:{${orderId}}:fence`;
}

function leaseToken(fence: number, owner: string): string {
  return `${fence}:${owner}`;
}

function parseToken(value: string): { fence: number; owner: string } | null {
  const colon = value.indexOf(':');
  const fence = Number(value.slice(0, colon));
  if (colon <= 0 || !Number.isSafeInteger(fence)) return null;
  return { fence, owner: value.slice(colon + 1) };
}

function requirePositiveInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0)
    throw invalidArgument(`${name} must be a positive integer, got ${value}`);
}

function requireNonEmpty(name: string, value: string): void {
  if (value.length === 0) throw invalidArgument(`${name} must not be empty`);
}

export class OrderLease {
  readonly #redis: RedisPort;
  readonly #fenceRetentionMs: number;
  readonly #now: () => number;

  constructor(redis: RedisPort, opts: OrderLeaseOptions = {}) {
    this.#redis = redis;
    this.#fenceRetentionMs = opts.fenceRetentionMs ?? defaultFenceRetentionMs;
    this.#now = opts.now ?? monotonicNow;
  }

  /**
   * Takes the lease when nobody holds it. Returns null when it is held (by anyone, this owner included: an
   * owner names one process incarnation, and a restarted process must wait for its old lease to expire).
   * Throws WorkerError redis_unavailable (retryable) when Redis cannot be reached.
   */
  async acquire(orderId: string, owner: string, ttlMs: number, minFence = 0): Promise<LeaseGrant | null> {
    requireNonEmpty('orderId', orderId);
    requireNonEmpty('owner', owner);
    requirePositiveInteger('ttlMs', ttlMs);
    if (!Number.isSafeInteger(minFence) || minFence < 0)
      throw invalidArgument(`minFence must be a non-negative integer, got ${minFence}`);
    const acquiredAt = this.#now();
    let fence: number | null;
    try {
      fence = await this.#redis.leaseAcquire(
        leaseKey(orderId),
        fenceKey(orderId),
        owner,
        ttlMs,
        String(minFence),
        this.#fenceRetentionMs,
      );
    } catch (error) {
      throw toRedisWorkerError(error, `acquire lease of order ${orderId}`);
    }
    if (fence === null) return null;
    return { orderId, owner, fence: Number(fence), ttlMs, acquiredAt };
  }

  /**
   * Takes the leases of many orders in one round trip (a partition's restore), each exactly as `acquire` would:
   * one result per request, in order, null where the lease is held. Throws WorkerError redis_unavailable
   * (retryable) when Redis cannot be reached; then none was granted, or some were and run out on their ttl.
   */
  async acquireMany(
    requests: ReadonlyArray<{ readonly orderId: string; readonly minFence: number }>,
    owner: string,
    ttlMs: number,
  ): Promise<Array<LeaseGrant | null>> {
    requireNonEmpty('owner', owner);
    requirePositiveInteger('ttlMs', ttlMs);
    if (requests.length === 0) return [];
    const keys: string[] = [];
    const minFences: string[] = [];
    for (const { orderId, minFence } of requests) {
      requireNonEmpty('orderId', orderId);
      if (!Number.isSafeInteger(minFence) || minFence < 0)
        throw invalidArgument(`minFence must be a non-negative integer, got ${minFence}`);
      keys.push(leaseKey(orderId), fenceKey(orderId));
      minFences.push(String(minFence));
    }
    const acquiredAt = this.#now();
    let fences: number[];
    try {
      fences = await this.#redis.leaseAcquireMany(
        keys.length,
        ...keys,
        owner,
        ttlMs,
        this.#fenceRetentionMs,
        ...minFences,
      );
    } catch (error) {
      throw toRedisWorkerError(error, `acquire the leases of ${requests.length} orders`);
    }
    return requests.map(({ orderId }, i) => {
      const fence = Number(fences[i]);
      return fence > 0 ? { orderId, owner, fence, ttlMs, acquiredAt } : null;
    });
  }

  /** Extends the lease by its ttl. false: the lease expired or someone else holds it now (it is lost). */
  async renew(grant: LeaseGrant): Promise<boolean> {
    try {
      return (
        (await this.#redis.leaseRenew(
          leaseKey(grant.orderId),
          leaseToken(grant.fence, grant.owner),
          grant.ttlMs,
        )) === 1
      );
    } catch (error) {
      throw toRedisWorkerError(error, `renew lease of order ${grant.orderId}`);
    }
  }

  /** Frees the lease for other replicas. false: it was no longer ours (expired or taken), nothing was touched. */
  async release(grant: LeaseGrant): Promise<boolean> {
    try {
      return (
        (await this.#redis.leaseRelease(leaseKey(grant.orderId), leaseToken(grant.fence, grant.owner))) === 1
      );
    } catch (error) {
      throw toRedisWorkerError(error, `release lease of order ${grant.orderId}`);
    }
  }

  /** Who holds the lease right now, or null when it is free. */
  async holder(orderId: string): Promise<LeaseHolder | null> {
    let reply: [string, number] | null;
    try {
      reply = await this.#redis.leaseHolder(leaseKey(orderId));
    } catch (error) {
      throw toRedisWorkerError(error, `read lease of order ${orderId}`);
    }
    if (!reply) return null;
    const parsed = parseToken(reply[0]);
    if (!parsed)
      throw new WorkerError(
        redisErrorCodes.commandFailed,
        `lease of order ${orderId} holds a value this worker did not write`,
      );
    return { ...parsed, remainingMs: Math.max(0, Number(reply[1])) };
  }
}
