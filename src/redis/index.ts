// The Redis adapters of the worker runtime: coordination only (Kafka is the record), safe when Redis restarts
// empty. The composition root builds one client with createRedis and hands it to each adapter.
export {
  closeRedis,
  createRedis,
  whenRedisReady,
  type CreateRedisOptions,
  type RedisClient,
} from './connect.ts';
export { LeaseKeeper, type LeaseKeeperOptions, type LeaseLossReason } from './lease-keeper.ts';
export { OrderIndex, type OrderIndexOptions } from './order-index.ts';
export { OrderLease, type LeaseGrant, type LeaseHolder, type OrderLeaseOptions } from './order-lease.ts';
export {
  normalizeDecimal,
  QuoteCooldown,
  type CooldownDecision,
  type QuoteCooldownOptions,
} from './quote-cooldown.ts';
export { redisErrorCodes, toRedisWorkerError } from './redis-errors.ts';
export type { RedisPort, RedisScriptCommands } from './redis-port.ts';
export { WebhookDedupe, type WebhookDedupeOptions } from './webhook-dedupe.ts';
export { RedisReferenceClaims, referenceClaimKey, type ReferenceClaims } from './reference-claims.ts';
