// A replica paused (SIGSTOP) past its consumer session while its command handler waits on a lease that another
// holder keeps: the group gives its partitions away meanwhile. Once it runs again it must come back to the group (or
// exit, for its pod to be restarted) within 60 s, whatever the lease does: a handler that waits without bound keeps
// the replica out of the group for good. No command is lost: every order sent completes, exactly once.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../support/cleanups.ts';
import { assertExactlyOnce, completeAll } from '../support/order-outcomes.ts';
import { planOrders } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster } from '../support/worker-cluster.ts';
import type { WorkerProcess } from '../support/worker-process.ts';

const cleanups = cleanupsAfterEach();
const sessionTimeoutMs = 6_000;

const fastQuotes = (config: Parameters<NonNullable<Parameters<typeof startCluster>[0]['sandbox']>>[0]) => ({
  ...config,
  quotes: { ttlSeconds: 300, actionableDelayMs: 1_500 },
  limits: { sameChainFixedRateQuotesPerMinute: 10_000, crossChainFixedRateQuotesPerMinute: 10_000 },
});

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = check();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await sleep(100);
  }
}

/** The log lines of a worker (pino JSON) from `from` (a character offset) on, that say `message`. */
function logSays(worker: WorkerProcess, message: string, from = 0, orderId?: string): boolean {
  return worker
    .log()
    .slice(from)
    .split('\n')
    .some((line) => line.includes(message) && (orderId === undefined || line.includes(orderId)));
}

describe('a replica paused while its handler waits on a lease', () => {
  it('rejoins or exits within 60 s of SIGCONT while the lease stays held, and every command sent is carried out', async () => {
    const cluster = await startCluster({
      workers: 2,
      partitions: 2,
      sandbox: fastQuotes,
      env: { KAFKA_SESSION_TIMEOUT_MS: String(sessionTimeoutMs) },
    });
    cleanups.push(() => cluster.stop());
    const redis = new Redis(services().redisUrl, { lazyConnect: true });
    await redis.connect();
    cleanups.push(() => Promise.resolve(redis.disconnect()));
    const leaseKey = (orderId: string) => `eow:${cluster.env['CONSUMER_GROUP']}:lease:{${orderId}}`;

    const orders = planOrders(6, { variant: 5, orderId: (i) => uniqueName(`paused${i}`) });
    const [waiting, ...others] = orders;
    // Another holder keeps the first order's lease (a previous owner whose exchange call has not settled): the
    // replica that takes its order.create waits for it inside the Kafka handler.
    await redis.set(leaseKey(waiting!.orderId), '999999:another-holder', 'PX', 600_000);
    await cluster.send(waiting!.command);
    const victim = await until(
      'a replica waiting for the held lease',
      () =>
        cluster.workers.find((w) =>
          logSays(w, 'waiting for the order lease held by another replica', 0, waiting!.orderId),
        ),
      60_000,
    );

    victim.child.kill('SIGSTOP');
    // Commands sent while it sleeps (to both partitions): each must be carried out, by whichever replica.
    for (const order of others) await cluster.send(order.command);
    // Past the session: the group evicts the sleeper and hands its partitions to the other replica.
    await sleep(sessionTimeoutMs * 2);
    const logAtWake = victim.log().length;
    victim.child.kill('SIGCONT');
    const wokeAt = Date.now();

    // The lease stays held throughout: coming back must not depend on it.
    await until(
      'the woken replica to rejoin the group or exit',
      () =>
        victim.child.exitCode !== null ||
        victim.child.signalCode !== null ||
        logSays(victim, 'rejoined the group as a new member', logAtWake),
      60_000,
    );
    expect(Date.now() - wokeAt).toBeLessThanOrEqual(60_000);

    // The holder lets go: the waiting order is created too, and every order completes exactly once.
    await redis.del(leaseKey(waiting!.orderId));
    await completeAll(cluster, orders, 180_000);
    assertExactlyOnce(cluster, orders);
  });
});
