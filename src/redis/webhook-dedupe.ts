// Drops webhook deliveries already seen (the exchange retries and may send one status twice). Best effort by
// design: when Redis fails, a delivery counts as first seen (at-least-once), since the order machine confirms
// every webhook with a GET of the order before acting on it.
import type { WorkerError } from '../errors.ts';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

export interface WebhookDedupeOptions {
  /** Redis failed and a delivery was let through unchecked. */
  onDegraded?: (error: WorkerError) => void;
}

export function webhookSeenKey(uniqueReference: string, status: string): string {
  return `webhook-seen:${uniqueReference}:${status}`;
}

export class WebhookDedupe {
  readonly #redis: RedisPort;
  readonly #opts: WebhookDedupeOptions;

  constructor(redis: RedisPort, opts: WebhookDedupeOptions = {}) {
    this.#redis = redis;
    this.#opts = opts;
  }

  /** True the first time (uniqueReference, status) is seen within ttlSeconds, and whenever Redis fails. */
  async firstSeen(uniqueReference: string, status: string, ttlSeconds = 86_400): Promise<boolean> {
    if (!uniqueReference) throw invalidArgument('uniqueReference must not be empty');
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0)
      throw invalidArgument(`ttlSeconds must be a positive integer, got ${ttlSeconds}`);
    try {
      return (
        (await this.#redis.set(webhookSeenKey(uniqueReference, status), '1', 'EX', ttlSeconds, 'NX')) === 'OK'
      );
    } catch (error) {
      this.#opts.onDegraded?.(toRedisWorkerError(error, 'webhook dedupe (letting the delivery through)'));
      return true;
    }
  }

  /**
   * Drops the mark of a delivery whose hint could not be routed, so the next delivery of the same status (from
   * another webhook configuration, or a later one) is not taken for a duplicate. Throws redis_unavailable.
   */
  async forget(uniqueReference: string, status: string): Promise<void> {
    if (!uniqueReference) throw invalidArgument('uniqueReference must not be empty');
    try {
      await this.#redis.del(webhookSeenKey(uniqueReference, status));
    } catch (error) {
      throw toRedisWorkerError(error, 'webhook dedupe forget');
    }
  }
}
