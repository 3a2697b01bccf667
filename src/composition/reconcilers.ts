// The reconcilers beside the order host: the CeFi listing (orders confirmed in bulk, one walk per interval between
// all replicas) and the retention sweep (finished orders tombstoned past their retention, their routes forgotten).
import type { WorkerConfig } from '../config.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import type { OrderStateStore } from '../kafka/order-state-store.ts';
import type { TransactionalWriter } from '../kafka/transactional-writer.ts';
import { ListingShare } from '../redis/listing-share.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import { CefiListing, listedModes } from '../worker/cefi-listing.ts';
import type { OrderHost } from '../worker/order-host.ts';
import { StateRetention } from '../worker/state-retention.ts';
import type { OrderRoutes } from '../worker/webhook-routing.ts';
import type { RedisParts } from './redis.ts';

export function buildListing(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  parts: { client: ExchangeClient; host: OrderHost; redis: Pick<RedisParts, 'redis'> },
): CefiListing {
  // CeFi orders are confirmed in bulk (GET /orders/?status=<code>) for every CeFi mode with a key (keys are per mode).
  return new CefiListing({
    source: parts.client,
    target: parts.host,
    modes: listedModes.filter((mode) => config.exchange.credentials[mode] !== undefined),
    intervalMs: config.listReconcileIntervalMs,
    now: () => Date.now(),
    logger,
    metrics: telemetry.metrics.listingObserver(),
    // One walk per interval between all replicas of the deployment (the listing names every order of the key).
    ...(config.listReconcileIntervalMs > 0
      ? { share: new ListingShare(parts.redis.redis, { intervalMs: config.listReconcileIntervalMs }) }
      : {}),
  });
}

export function buildRetention(
  config: WorkerConfig,
  logger: Logger,
  parts: {
    store: OrderStateStore;
    writer: TransactionalWriter;
    redis: Pick<RedisParts, 'leases' | 'homes'>;
    routes: Pick<OrderRoutes, 'forget'>;
  },
): StateRetention {
  const { routes } = parts;
  return new StateRetention({
    store: parts.store,
    writer: parts.writer,
    leases: parts.redis.leases,
    stateTopic: config.topics.state,
    retentionMs: config.finishedOrderRetentionMs,
    logger,
    homes: parts.redis.homes,
    onTombstoned: ({ uniqueReference }) => {
      if (uniqueReference) routes.forget(uniqueReference);
    },
  });
}
