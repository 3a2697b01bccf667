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
}

export function referenceClaimKey(uniqueReference: string): string {
  return `reference-claim:${uniqueReference}`;
}

export class RedisReferenceClaims implements ReferenceClaims {
  readonly #redis: Pick<RedisPort, 'referenceClaim'>;

  constructor(redis: Pick<RedisPort, 'referenceClaim'>) {
    this.#redis = redis;
  }

  async claim(uniqueReference: string, orderId: string): Promise<boolean> {
    try {
      return (
        (await this.#redis.referenceClaim(referenceClaimKey(uniqueReference), orderId, claimRetentionMs)) ===
        1
      );
    } catch (error) {
      // No claim without Redis: the caller must not adopt (a retryable failure, not a "no").
      throw toRedisWorkerError(error, 'reference claim');
    }
  }
}
