// The ports of the order runtime that adapters implement: declared here, below the runtime, so that an adapter
// (src/redis/redis-leases.ts) depends on the port it fills and never on the host that uses it.

/** One order's lease asked for with others (`OrderLeases.acquireMany`): as `acquire`'s arguments. */
export interface LeaseRequest {
  readonly orderId: string;
  readonly minFence: number;
  readonly onLost: () => void;
}

export interface OrderLeases {
  /**
   * Acquires the lease with a fencing token above minFence; null when another owner holds it. `onLost` runs (once,
   * never synchronously) if the lease is lost while held: expired, taken, or Redis restarted empty.
   */
  acquire(orderId: string, minFence: number, onLost: () => void): Promise<{ fence: number } | null>;
  /**
   * Acquires the leases of many orders in one round trip, each as `acquire` would: per request, in order, its grant
   * or null (held by another owner). A restore asks this way when it can; a failure rejects the whole call.
   */
  acquireMany?(requests: readonly LeaseRequest[]): Promise<Array<{ fence: number } | null>>;
  release(orderId: string): Promise<void>;
  /** False once the lease may have passed to someone else (lost, expired, or unrenewed for too long). */
  isValid(orderId: string): boolean;
  /**
   * A resting order: stop renewing its lease without giving it up (it runs out on its ttl). Returns when it was
   * last renewed if it is still valid (for keepAgain), else undefined. `onLost` no longer runs for it.
   */
  suspend(orderId: string): number | undefined;
  /**
   * Keeps a suspended lease again, synchronously and without Redis, while a third of its ttl of validity is left
   * (time for its renewal to come back); else false.
   */
  keepAgain(orderId: string, fence: number, lastRenewedAt: number, onLost: () => void): boolean;
  /**
   * Takes a suspended lease up again: the same fence when the lease is still ours in Redis, else a new grant above
   * `fence` (null when another owner holds it). A fence above `fence + 1` means someone else held it in between.
   */
  resume(orderId: string, fence: number, onLost: () => void): Promise<{ fence: number } | null>;
  /**
   * Frees a suspended lease if it may still be ours (a resting order leaving this replica); nothing when it ran out
   * long ago (`lastRenewedAt` as suspend gave it).
   */
  releaseSuspended(orderId: string, fence: number, lastRenewedAt: number): Promise<void>;
}

/** What a bulk listing's row did to the order it names (OrderHost.deliverListing). */
export type ListingOutcome = 'confirmed' | 'differed' | 'ignored' | 'not_here';
