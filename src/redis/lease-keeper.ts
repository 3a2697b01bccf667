// Keeps the leases this process holds alive and says, before every action, whether one may still act.
// A lease is only trusted up to lastRenewedAt + ttl - safetyMargin on the local monotonic clock (lastRenewedAt is
// taken before the renewal was SENT, so it never overstates; a wall-clock step changes nothing, monotonic-clock.ts): past that, Redis may have expired it and given the
// order to another replica, whether because Redis was unreachable or because this process was paused (GC,
// CPU throttling, a stopped container). Once a lease is reported lost it stays lost: re-acquire for a new fence.
import type { WorkerError } from '../errors.ts';
import { monotonicNow } from './monotonic-clock.ts';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { LeaseGrant, OrderLease } from './order-lease.ts';

/**
 * not_held: Redis says the lease expired or another owner holds it.
 * unreachable: no renewal succeeded within the ttl because Redis could not be reached.
 * expired: the local deadline passed without a renewal (a process pause, or renewals too slow).
 */
export type LeaseLossReason = 'not_held' | 'unreachable' | 'expired';

export interface LeaseKeeperOptions {
  /** Called once per lost lease, synchronously from a timer or from isValid: stop driving the order. Must not throw. */
  onLost: (orderId: string, reason: LeaseLossReason) => void;
  /** A renewal failed (the keeper retries until the lease's deadline); for metrics and rate-limited logs. */
  onRenewError?: (orderId: string, error: WorkerError) => void;
  /** Stop trusting a lease this long before its ttl runs out (default: 10% of the lease's ttl). */
  safetyMarginMs?: number;
  /** Delay between attempts after a failed renewal (default: min(ttl/3, 500 ms)). */
  retryDelayMs?: number;
  /** The clock of `LeaseGrant.acquiredAt` (default: monotonic milliseconds, as OrderLease stamps its grants). */
  now?: () => number;
}

const maxTimerDelayMs = 2 ** 31 - 1;

interface Kept {
  grant: LeaseGrant;
  lastRenewedAt: number;
  lastError: WorkerError | undefined;
  renewTimer: NodeJS.Timeout | undefined;
  deadlineTimer: NodeJS.Timeout | undefined;
  /** Put aside by suspend(): a renewal still in flight must not release it (its holder may take it up again). */
  suspended?: boolean;
}

export class LeaseKeeper {
  readonly #lease: OrderLease;
  readonly #opts: LeaseKeeperOptions;
  readonly #now: () => number;
  readonly #kept = new Map<string, Kept>();

  constructor(lease: OrderLease, opts: LeaseKeeperOptions) {
    this.#lease = lease;
    this.#opts = opts;
    this.#now = opts.now ?? monotonicNow;
  }

  /** Starts renewing a fresh grant every ttl/3. Replaces a grant kept earlier for the same order. */
  keep(grant: LeaseGrant): void {
    const margin = this.#safetyMargin(grant);
    if (margin < 0 || margin >= grant.ttlMs / 2) {
      throw invalidArgument(
        `safety margin ${margin} ms must be at least 0 and below half the ttl (${grant.ttlMs} ms)`,
      );
    }
    this.#keepFrom(this.#fresh(grant), grant.ttlMs / 3);
  }

  #fresh(grant: LeaseGrant): Kept {
    return {
      grant,
      lastRenewedAt: grant.acquiredAt,
      lastError: undefined,
      renewTimer: undefined,
      deadlineTimer: undefined,
    };
  }

  #keepFrom(kept: Kept, renewInMs: number): void {
    this.#stopTimers(kept.grant.orderId);
    this.#kept.set(kept.grant.orderId, kept);
    this.#armDeadline(kept);
    this.#scheduleRenewal(kept, renewInMs);
  }

  /**
   * Whether this process may still act on the order: call it right before every side effect. False when the
   * order is not kept, was lost, or its local deadline passed (which reports the loss now, if not yet done).
   */
  isValid(orderId: string): boolean {
    const kept = this.#kept.get(orderId);
    if (!kept) return false;
    if (this.#now() <= this.#validUntil(kept)) return true;
    this.#lose(kept, kept.lastError ? 'unreachable' : 'expired');
    return false;
  }

  /** The grant kept for the order (its fence goes on every downstream write), while valid. */
  grant(orderId: string): LeaseGrant | undefined {
    return this.isValid(orderId) ? this.#kept.get(orderId)?.grant : undefined;
  }

  /** Orders currently kept (not yet lost or released). */
  orderIds(): string[] {
    return [...this.#kept.keys()];
  }

  /** Stops renewing and frees the lease in Redis. false: it was not ours any more (or not kept). */
  async release(orderId: string): Promise<boolean> {
    const kept = this.#kept.get(orderId);
    if (!kept) return false;
    this.#forget(kept);
    return this.#lease.release(kept.grant);
  }

  /**
   * Stops renewing a lease that is still ours without giving it up (a resting order: nothing to do until its next
   * event, so no renewal every ttl/3). Returns when it was last renewed (the local clock, before the renewal was
   * sent) if it is still valid, for keepAgain(); undefined when it was not kept or is no longer valid. The lease
   * runs out on its own ttl unless it is kept again in time; a renewal in flight meanwhile only extends it.
   */
  suspend(orderId: string): number | undefined {
    const kept = this.#kept.get(orderId);
    if (!kept) return undefined;
    const valid = this.#now() <= this.#validUntil(kept);
    kept.suspended = true;
    this.#forget(kept);
    return valid ? kept.lastRenewedAt : undefined;
  }

  /**
   * Keeps a suspended lease again without asking Redis, while it has a third of its ttl of validity left on the local
   * clock: nobody else can have taken it, since its key has not expired, and the renewal it then sends at once (or at
   * ttl/3 after the last one, if that is later) has that long to come back. `grant.acquiredAt` is when it was last
   * renewed (what suspend() returned). False (nothing kept) with less left, though it may still be valid: a renewal
   * sent with a second or less to spare, on a loaded replica, came back after the local deadline and lost a lease
   * nobody else wanted; take it up again from Redis (resume) instead.
   */
  keepAgain(grant: LeaseGrant): boolean {
    const kept = this.#fresh(grant);
    if (this.#now() > this.#validUntil(kept) - grant.ttlMs / 3) return false;
    this.#keepFrom(kept, grant.acquiredAt + grant.ttlMs / 3 - this.#now());
    return true;
  }

  /** Stops renewing without touching Redis: the lease runs out on its own ttl. */
  forget(orderId: string): void {
    const kept = this.#kept.get(orderId);
    if (kept) this.#forget(kept);
  }

  /** Releases every kept lease (best effort: an unreachable Redis lets them expire). For shutdown. */
  async releaseAll(): Promise<void> {
    const grants = [...this.#kept.values()].map((kept) => kept.grant);
    for (const kept of this.#kept.values()) this.#stopTimersOf(kept);
    this.#kept.clear();
    await Promise.allSettled(grants.map((grant) => this.#lease.release(grant)));
  }

  #safetyMargin(grant: LeaseGrant): number {
    return this.#opts.safetyMarginMs ?? Math.ceil(grant.ttlMs * 0.1);
  }

  #validUntil(kept: Kept): number {
    return kept.lastRenewedAt + kept.grant.ttlMs - this.#safetyMargin(kept.grant);
  }

  /**
   * Renewals are batched: a renewal is due at most `delayMs` from now, rounded DOWN to a grid of a fifteenth of the
   * ttl (renewing early is always safe), so the leases due around the same moment fire in one timers phase; they
   * are then sent together from one setImmediate, which the Redis client's auto-pipelining turns into one write.
   * Thousands of open orders renew in a few writes a second instead of one write each.
   */
  #scheduleRenewal(kept: Kept, delayMs: number): void {
    const now = this.#now();
    const grid = Math.max(1, Math.floor(kept.grant.ttlMs / 15));
    const due = Math.floor((now + Math.max(0, delayMs)) / grid) * grid;
    kept.renewTimer = setTimeout(
      () => this.#queueRenewal(kept),
      Math.min(maxTimerDelayMs, Math.max(0, due - now)),
    );
    kept.renewTimer.unref();
  }

  #dueRenewals: Kept[] = [];

  #queueRenewal(kept: Kept): void {
    kept.renewTimer = undefined;
    this.#dueRenewals.push(kept);
    if (this.#dueRenewals.length > 1) return;
    setImmediate(() => {
      const due = this.#dueRenewals;
      this.#dueRenewals = [];
      for (const each of due) void this.#renew(each);
    });
  }

  // Fires at the local deadline even when renewals hang or the event loop was blocked past it, so a loss is
  // reported without waiting for the next action.
  #armDeadline(kept: Kept): void {
    if (kept.deadlineTimer) clearTimeout(kept.deadlineTimer);
    const delay = Math.min(maxTimerDelayMs, Math.max(0, this.#validUntil(kept) - this.#now() + 1));
    kept.deadlineTimer = setTimeout(() => this.isValid(kept.grant.orderId), delay);
    kept.deadlineTimer.unref();
  }

  async #renew(kept: Kept): Promise<void> {
    const { orderId } = kept.grant;
    if (this.#kept.get(orderId) !== kept || !this.isValid(orderId)) return;
    const sentAt = this.#now();
    let renewed: boolean;
    try {
      renewed = await this.#lease.renew(kept.grant);
    } catch (error) {
      if (this.#kept.get(orderId) !== kept) return;
      kept.lastError = toRedisWorkerError(error, `renew lease of order ${orderId}`);
      this.#opts.onRenewError?.(orderId, kept.lastError);
      this.#scheduleRenewal(kept, this.#opts.retryDelayMs ?? Math.min(kept.grant.ttlMs / 3, 500));
      return;
    }
    const current = this.#kept.get(orderId);
    if (current !== kept) {
      // Reported lost or released while the renewal was in flight: do not leave a lease nobody drives
      // (unless the same grant is kept again).
      const sameGrant = current?.grant.fence === kept.grant.fence && current.grant.owner === kept.grant.owner;
      if (renewed && !sameGrant && !kept.suspended) await this.#lease.release(kept.grant).catch(() => false);
      return;
    }
    if (!renewed) {
      this.#lose(kept, 'not_held');
      return;
    }
    kept.lastRenewedAt = sentAt;
    kept.lastError = undefined;
    this.#armDeadline(kept);
    this.#scheduleRenewal(kept, kept.grant.ttlMs / 3);
  }

  #lose(kept: Kept, reason: LeaseLossReason): void {
    if (this.#kept.get(kept.grant.orderId) !== kept) return;
    this.#forget(kept);
    this.#opts.onLost(kept.grant.orderId, reason);
  }

  #forget(kept: Kept): void {
    this.#stopTimersOf(kept);
    if (this.#kept.get(kept.grant.orderId) === kept) this.#kept.delete(kept.grant.orderId);
  }

  #stopTimers(orderId: string): void {
    const kept = this.#kept.get(orderId);
    if (kept) this.#stopTimersOf(kept);
  }

  #stopTimersOf(kept: Kept): void {
    if (kept.renewTimer) clearTimeout(kept.renewTimer);
    if (kept.deadlineTimer) clearTimeout(kept.deadlineTimer);
    kept.renewTimer = undefined;
    kept.deadlineTimer = undefined;
  }
}
