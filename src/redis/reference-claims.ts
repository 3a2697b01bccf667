// Which order owns which exchange order. An exchange order found by the lookup of a create in doubt may have been
// created for a sibling order (same pair, address and amount); a Redis claim, taken atomically before an order
// adopts or records a unique_reference, makes sure one exchange order is never published by two orders. The
// durable owner is the state topic (order.created carries the reference); this claim covers the window before
// that record exists. Redis restarted empty during such a race is a double fault we accept (see
// docs/decisions/create-in-doubt.md).
import { toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

/** Kept far longer than any create can stay in doubt. */
const claimRetentionMs = 30 * 24 * 3_600_000;

export interface ReferenceClaims {
  /** True when `uniqueReference` is now (or already was) claimed by `orderId`; false when another order holds it. */
  claim(uniqueReference: string, orderId: string): Promise<boolean>;
  /** The order that claimed `uniqueReference`, null when none has: a read, nothing is taken. */
  owner(uniqueReference: string): Promise<string | null>;
}

export function referenceClaimKey(uniqueReference: string): string {
  return `reference-claim:${uniqueReference}`;
}

/** Claims this process took and has not re-asserted yet, at most (the oldest are forgotten first). */
const maxRecentClaims = 10_000;

export class RedisReferenceClaims implements ReferenceClaims {
  readonly #redis: Pick<RedisPort, 'referenceClaim' | 'get'>;
  /** reference -> order id: claims taken here whose route was not published yet (see reassert). */
  readonly #recent = new Map<string, string>();

  constructor(redis: Pick<RedisPort, 'referenceClaim' | 'get'>) {
    this.#redis = redis;
  }

  async owner(uniqueReference: string): Promise<string | null> {
    try {
      return await this.#redis.get(referenceClaimKey(uniqueReference));
    } catch (error) {
      // Not knowing is not "nobody": the caller must not conclude anything from it.
      throw toRedisWorkerError(error, 'reference claim owner');
    }
  }

  async claim(uniqueReference: string, orderId: string): Promise<boolean> {
    let ours: boolean;
    try {
      ours =
        (await this.#redis.referenceClaim(referenceClaimKey(uniqueReference), orderId, claimRetentionMs)) ===
        1;
    } catch (error) {
      // No claim without Redis: the caller must not adopt (a retryable failure, not a "no").
      throw toRedisWorkerError(error, 'reference claim');
    }
    if (ours) {
      // The oldest goes first: a claim whose route never came (an order that failed after it) must not stay.
      if (this.#recent.size >= maxRecentClaims)
        this.#recent.delete(this.#recent.keys().next().value as string);
      this.#recent.set(uniqueReference, orderId);
    }
    return ours;
  }

  /**
   * The claim again, as the owner of a partition asserts it for every order it reads (a Redis that restarted empty
   * gets its claims back). A claim this process took for the same order and has not re-asserted yet is not asked
   * again: a created order's route is published milliseconds after its create claimed the reference (that was one
   * Redis round trip in ten per created order). Redis restarting empty within those milliseconds is the double
   * fault docs/decisions/create-in-doubt.md accepts.
   */
  async reassert(uniqueReference: string, orderId: string): Promise<boolean> {
    const recent = this.#recent.get(uniqueReference);
    if (recent !== undefined) {
      this.#recent.delete(uniqueReference);
      if (recent === orderId) return true;
    }
    return this.claim(uniqueReference, orderId).finally(() => this.#recent.delete(uniqueReference));
  }
}
