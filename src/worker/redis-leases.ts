// The order host's view of leases, on Redis: OrderLease hands out fenced grants, LeaseKeeper keeps them renewed
// and says whether one may still act. A grant's fence is recorded in the order's state record; on restore it is
// passed back as minFence so fences stay monotonic even after Redis restarts empty.
import { LeaseKeeper, type LeaseLossReason } from '../redis/lease-keeper.ts';
import type { OrderLease } from '../redis/order-lease.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { OrderLeases } from './order-host.ts';

export class RedisOrderLeases implements OrderLeases {
  private readonly lease: OrderLease;
  private readonly keeper: LeaseKeeper;
  private readonly owner: string;
  private readonly ttlMs: number;
  private lostHandler: (orderId: string) => void = () => {};

  constructor(opts: { lease: OrderLease; owner: string; ttlMs: number; logger: Logger }) {
    this.lease = opts.lease;
    this.owner = opts.owner;
    this.ttlMs = opts.ttlMs;
    const log = opts.logger.child({ component: 'leases' });
    this.keeper = new LeaseKeeper(opts.lease, {
      onLost: (orderId: string, reason: LeaseLossReason) => {
        log.warn({ orderId, reason }, 'order lease lost');
        // Deferred: onLost may be called from inside isValid, which callers use as a plain predicate.
        setImmediate(() => this.lostHandler(orderId));
      },
      onRenewError: (orderId, error) =>
        log.debug({ orderId, code: error.code }, 'lease renewal failed; retrying'),
    });
  }

  onLost(handler: (orderId: string) => void): void {
    this.lostHandler = handler;
  }

  async acquire(orderId: string, minFence: number): Promise<{ fence: number } | null> {
    const grant = await this.lease.acquire(orderId, this.owner, this.ttlMs, minFence);
    if (!grant) {
      // Our own earlier incarnation (same owner) may still hold it after a restart: its lease simply expires.
      return null;
    }
    this.keeper.keep(grant);
    return { fence: grant.fence };
  }

  async release(orderId: string): Promise<void> {
    await this.keeper.release(orderId);
  }

  isValid(orderId: string): boolean {
    return this.keeper.isValid(orderId);
  }

  async stop(): Promise<void> {
    await this.keeper.releaseAll();
  }
}
