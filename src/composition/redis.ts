// The Redis parts: the shared connection and its adapters (cooldown, claims, creates in flight, order index,
// webhook dedupe, order homes), the leases on a connection of their own when replicas must acknowledge them, and the
// read API's connection (lease holders, the fleet's members). `close` ends every connection this builder opened.
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '../config.ts';
import { closeRedis, createRedis, whenRedisReady, type CreateRedisOptions } from '../redis/connect.ts';
import { RedisCreatesInFlight } from '../redis/creates-in-flight.ts';
import { FleetMembers } from '../redis/fleet-members.ts';
import { OrderHomes, orderHomeTtlMs } from '../redis/order-homes.ts';
import { OrderIndex } from '../redis/order-index.ts';
import { OrderLease } from '../redis/order-lease.ts';
import { QuoteCooldown } from '../redis/quote-cooldown.ts';
import { RedisOrderLeases } from '../redis/redis-leases.ts';
import { RedisReferenceClaims } from '../redis/reference-claims.ts';
import { primariesShortOfReplicas, replicaAcks } from '../redis/replica-acks.ts';
import { WebhookDedupe } from '../redis/webhook-dedupe.ts';
import type { Logger } from '../telemetry/logger.ts';

export type RedisParts = ReturnType<typeof buildRedis>;

/** "redis unavailable" after 5 s without an error: one line an outage, not one per failed command. */
function outageWarnings(log: Logger): CreateRedisOptions['onError'] {
  const last = { errorAt: 0 };
  return (error) => {
    if (Date.now() - last.errorAt > 5_000) log.warn({ code: error.code }, 'redis unavailable');
    last.errorAt = Date.now();
  };
}

export function buildRedis(config: WorkerConfig, logger: Logger) {
  const redisLog = logger.child({ component: 'redis' });
  const redisOptions: CreateRedisOptions = {
    keyPrefix: `eow:${config.consumerGroup}:`,
    security: config.security.redis,
    onError: outageWarnings(redisLog),
  };
  const redis = createRedis(config.redis.topology, redisOptions);
  // With replicas to acknowledge them, the leases get a connection of their own: the WAIT after a grant or renewal
  // holds up the connection it is sent on until the replicas answer (src/redis/replica-acks.ts).
  const { leaseReplication } = config.redis;
  const leaseRedis = leaseReplication.replicas > 0 ? createRedis(config.redis.topology, redisOptions) : redis;
  const leaseAcks = replicaAcks(leaseRedis, leaseReplication);
  if (leaseAcks)
    void whenRedisReady(leaseRedis, 30_000)
      .then(() => primariesShortOfReplicas(leaseRedis, leaseAcks.replicas))
      .then((short) => {
        for (const primary of short)
          redisLog.error(
            { primary: primary.address, replicas: primary.replicas, required: leaseAcks.replicas },
            'a Redis primary has fewer replicas than REDIS_LEASE_MIN_REPLICAS: no lease on it is trusted until it has them',
          );
      })
      .catch(() => {});
  const leases = new RedisOrderLeases({
    lease: new OrderLease(leaseRedis, leaseAcks ? { replicaAcks: leaseAcks } : {}),
    owner: `${config.workerId}:${process.pid}:${randomUUID().slice(0, 8)}`,
    ttlMs: config.leaseTtlMs,
    logger,
  });
  const cooldown = new QuoteCooldown(redis, {
    onDegraded: (error) =>
      redisLog.warn({ code: error.code }, 'quote cooldown refused: Redis did not answer'),
  });
  const referenceClaims = new RedisReferenceClaims(redis);
  const createsInFlight = new RedisCreatesInFlight(redis);
  // The routes of other replicas' orders this one routed webhooks for lately (about 2 MiB at most): an order's
  // later webhooks are routed without reading Redis again.
  const orderIndex = new OrderIndex(redis, { cacheEntries: 10_000 });
  const dedupe = new WebhookDedupe(redis, {
    onDegraded: (error) => redisLog.warn({ code: error.code }, 'webhook dedupe degraded'),
  });
  // Where each order lives, kept from its create and again from the retention sweep's tombstone (marked retired).
  const homes = new OrderHomes(redis, { ttlMs: orderHomeTtlMs(config.finishedOrderRetentionMs) });
  // A connection of its own: a read of the API must not queue behind the lease renewals of every open order.
  const readsRedis = createRedis(config.redis.topology, {
    keyPrefix: `eow:${config.consumerGroup}:`,
    security: config.security.redis,
    onError: () => {},
  });
  return {
    redis,
    leases,
    cooldown,
    referenceClaims,
    createsInFlight,
    orderIndex,
    dedupe,
    homes,
    /** The read API's view of leases. */
    leaseReads: new OrderLease(readsRedis),
    /** The replicas' read API addresses and partitions (the read API asks the owner of an order it does not hold). */
    fleetMembers: new FleetMembers(readsRedis),
    /** Closes every connection this builder opened (after the leases stopped and the exchange's calls ended). */
    closeConnections: async (): Promise<void> => {
      await closeRedis(redis).catch(() => {});
      await closeRedis(readsRedis).catch(() => {});
      if (leaseRedis !== redis) await closeRedis(leaseRedis).catch(() => {});
    },
  };
}
