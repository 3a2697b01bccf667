// A lease's local validity is measured on a monotonic clock: setting the wall clock back (an NTP step, an operator)
// must not make a replica trust a lease Redis has already expired, and setting it forward must not drop every lease
// at once. Redis stands behind a port whose renewals fail (unreachable), so only the local deadline decides.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseKeeper, type LeaseLossReason } from '../../../src/redis/lease-keeper.ts';
import { OrderLease } from '../../../src/redis/order-lease.ts';
import type { RedisPort } from '../../../src/redis/redis-port.ts';

/** Grants every acquire (fence 1); every renewal fails as an unreachable Redis does. */
function unreachableAfterGrant(): RedisPort {
  return {
    leaseAcquire: () => Promise.resolve(1),
    leaseRenew: () =>
      Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    leaseRelease: () => Promise.resolve(0),
  } as unknown as RedisPort;
}

async function keptLease(ttlMs: number) {
  const lease = new OrderLease(unreachableAfterGrant());
  const lost: Array<{ orderId: string; reason: LeaseLossReason }> = [];
  const keeper = new LeaseKeeper(lease, {
    onLost: (orderId, reason) => lost.push({ orderId, reason }),
    retryDelayMs: 20,
  });
  const grant = await lease.acquire('order-1', 'replica-a', ttlMs);
  if (!grant) throw new Error('expected a grant');
  keeper.keep(grant);
  return { keeper, lost };
}

const waitUntil = async (condition: () => boolean, timeoutMs: number): Promise<void> => {
  const deadline = performance.now() + timeoutMs;
  while (!condition() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
};

afterEach(() => {
  vi.useRealTimers();
});

describe('lease validity on a monotonic clock', () => {
  it('loses a lease whose renewals fail at its ttl even when the wall clock is set back an hour', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const { keeper, lost } = await keptLease(300);
    vi.setSystemTime(Date.now() - 3_600_000);
    await waitUntil(() => lost.length > 0, 2_000);
    expect(lost).toEqual([{ orderId: 'order-1', reason: 'unreachable' }]);
    expect(keeper.isValid('order-1')).toBe(false);
  });

  it('keeps a lease valid within its ttl when the wall clock jumps an hour forward', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const { keeper, lost } = await keptLease(60_000);
    vi.setSystemTime(Date.now() + 3_600_000);
    expect(keeper.isValid('order-1')).toBe(true);
    expect(lost).toEqual([]);
    await keeper.releaseAll();
  });
});
