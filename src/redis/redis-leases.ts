// The order host's view of leases, on Redis: OrderLease hands out fenced grants, LeaseKeeper keeps them renewed
// and says whether one may still act. A grant's fence is recorded in the order's state record; on restore it is
// passed back as minFence so fences stay monotonic even after Redis restarts empty. Whoever takes a lease says what
// to do when it is lost.
import { LeaseKeeper, type LeaseLossReason } from './lease-keeper.ts';
import { monotonicNow } from './monotonic-clock.ts';
import type { LeaseGrant, OrderLease } from './order-lease.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { LeaseRequest, OrderLeases } from '../worker/ports.ts';

export class RedisOrderLeases implements OrderLeases {
  private readonly lease: OrderLease;
  private readonly keeper: LeaseKeeper;
  private readonly owner: string;
  private readonly ttlMs: number;
  private readonly log: Logger;
  /** What to do when a held lease is lost, per order (given with the grant). */
  private readonly onLost = new Map<string, () => void>();

  constructor(opts: { lease: OrderLease; owner: string; ttlMs: number; logger: Logger }) {
    this.lease = opts.lease;
    this.owner = opts.owner;
    this.ttlMs = opts.ttlMs;
    const log = opts.logger.child({ component: 'leases' });
    this.log = log;
    this.keeper = new LeaseKeeper(opts.lease, {
      onLost: (orderId: string, reason: LeaseLossReason) => {
        log.warn({ orderId, reason }, 'order lease lost');
        // Deferred: onLost may be called from inside isValid, which callers use as a plain predicate.
        const handler = this.onLost.get(orderId);
        this.onLost.delete(orderId);
        if (handler) setImmediate(handler);
      },
      onRenewError: (orderId, error) =>
        log.debug({ orderId, code: error.code }, 'lease renewal failed; retrying'),
    });
  }

  async acquire(orderId: string, minFence: number, onLost: () => void): Promise<{ fence: number } | null> {
    const grant = await this.lease.acquire(orderId, this.owner, this.ttlMs, minFence);
    if (!grant) {
      // Our own earlier incarnation (same owner) may still hold it after a restart: its lease simply expires.
      return null;
    }
    this.onLost.set(orderId, onLost);
    this.keeper.keep(grant);
    this.log.debug({ orderId, fence: grant.fence, minFence }, 'order lease granted');
    return { fence: grant.fence };
  }

  async acquireMany(requests: readonly LeaseRequest[]): Promise<Array<{ fence: number } | null>> {
    const grants = await this.lease.acquireMany(requests, this.owner, this.ttlMs);
    return grants.map((grant, i) => {
      if (!grant) return null;
      this.onLost.set(grant.orderId, requests[i]!.onLost);
      this.keeper.keep(grant);
      return { fence: grant.fence };
    });
  }

  suspend(orderId: string): number | undefined {
    this.onLost.delete(orderId);
    return this.keeper.suspend(orderId);
  }

  keepAgain(orderId: string, fence: number, lastRenewedAt: number, onLost: () => void): boolean {
    if (!this.keeper.keepAgain(this.grantOf(orderId, fence, lastRenewedAt))) return false;
    this.onLost.set(orderId, onLost);
    return true;
  }

  async resume(orderId: string, fence: number, onLost: () => void): Promise<{ fence: number } | null> {
    // Still ours in Redis (its key not expired, or a renewal in flight at the suspension extended it): the same
    // fence, nobody held it in between. Else a new grant above it, as for any acquire.
    const sentAt = monotonicNow();
    const grant = this.grantOf(orderId, fence, sentAt);
    if (await this.lease.renew(grant)) {
      this.onLost.set(orderId, onLost);
      this.keeper.keep(grant);
      return { fence };
    }
    return this.acquire(orderId, fence, onLost);
  }

  async releaseSuspended(orderId: string, fence: number, lastRenewedAt: number): Promise<void> {
    // Run out for sure (a renewal in flight at the suspension extends it by one ttl at most): nothing to free.
    if (monotonicNow() > lastRenewedAt + 2 * this.ttlMs) return;
    await this.lease.release(this.grantOf(orderId, fence, lastRenewedAt));
  }

  private grantOf(orderId: string, fence: number, acquiredAt: number): LeaseGrant {
    return { orderId, owner: this.owner, fence, ttlMs: this.ttlMs, acquiredAt };
  }

  async release(orderId: string): Promise<void> {
    this.onLost.delete(orderId);
    await this.keeper.release(orderId);
  }

  isValid(orderId: string): boolean {
    return this.keeper.isValid(orderId);
  }

  async stop(): Promise<void> {
    this.onLost.clear();
    await this.keeper.releaseAll();
  }
}
