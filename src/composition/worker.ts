// The worker that runs the built parts (src/worker/worker.ts), with the topics ensured before the first command,
// the retention sweep, the memory-reducing collection after restores, what it closes last, and the gauges that
// read the parts.
import type { WorkerConfig } from '../config.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import type { FleetPeers } from '../fleet/fleet-peers.ts';
import type { FleetView } from '../fleet/fleet-view.ts';
import type { KafkaClient } from '../kafka/kafka-client.ts';
import type { OrderStateStore } from '../kafka/order-state-store.ts';
import type { KeyPartitioning } from '../kafka/partitioning.ts';
import { ensureTopics } from '../kafka/topics.ts';
import type { EventLoopLoad } from '../process/event-loop-load.ts';
import { HeapReducer } from '../process/heap-reducer.ts';
import { orderHomeTtlMs } from '../redis/order-homes.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import type { ExchangeActors } from '../worker/exchange-actors.ts';
import type { OrderHost } from '../worker/order-host.ts';
import type { RoutePublishing } from '../worker/route-publishing.ts';
import { retentionSweepIntervalMs, type StateRetention } from '../worker/state-retention.ts';
import { Worker, type WorkerParts } from '../worker/worker.ts';
import type { RedisParts } from './redis.ts';

export interface RunnerParts extends Pick<
  WorkerParts,
  'http' | 'writer' | 'hints' | 'consumer' | 'cluster' | 'health' | 'listing'
> {
  kafka: KafkaClient;
  store: OrderStateStore;
  host: OrderHost;
  partitioning: KeyPartitioning;
  retention: StateRetention;
  routePublishing: RoutePublishing;
  exchangeActors: ExchangeActors;
  client: ExchangeClient;
  eventLoopLoad: EventLoopLoad;
  redis: Pick<RedisParts, 'leases' | 'closeConnections'>;
  /** Announced from the start; withdrawn on close, before Redis closes. */
  peers: Pick<FleetPeers, 'start' | 'stop'>;
}

export function buildWorker(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  parts: RunnerParts,
): Worker {
  const { kafka, partitioning, host, retention, routePublishing, redis, peers } = parts;
  peers.start();
  return new Worker(config, logger, {
    http: parts.http,
    ensureTopics: async () => {
      const topics = await ensureTopics(kafka, config.topics, logger, {
        // A replayed create is recognised by its finished order, then by the order's retired home.
        replayRecognisedForMs:
          config.finishedOrderRetentionMs + orderHomeTtlMs(config.finishedOrderRetentionMs),
      });
      partitioning.usePartitionCount(topics.partitions);
      return topics;
    },
    writer: parts.writer,
    store: parts.store,
    hints: parts.hints,
    host,
    consumer: parts.consumer,
    cluster: parts.cluster,
    health: parts.health,
    retention: {
      sweep: (now) => retention.sweep(now),
      intervalMs: retentionSweepIntervalMs(config.finishedOrderRetentionMs),
    },
    ...(parts.listing ? { listing: parts.listing } : {}),
    heapReducer:
      config.heapReduceAfterRestoreMs > 0
        ? new HeapReducer({
            logger,
            delayMs: config.heapReduceAfterRestoreMs,
            // After the restore's follow-up too: the routes it held back and publishes once it is over.
            busy: () => host.restoring || routePublishing.busy,
            onReduced: telemetry.metrics.heapReduced,
          })
        : undefined,
    inflightExchangeCalls: parts.exchangeActors.inflight,
    close: async () => {
      parts.eventLoopLoad.stop();
      await redis.leases.stop().catch(() => {});
      await peers.stop();
      await parts.client.close().catch(() => {});
      await redis.closeConnections();
      await telemetry.shutdown().catch(() => {});
    },
  });
}

/** The gauges of the worker's parts and of the fleet this replica owns. */
export function observeWorker(
  config: WorkerConfig,
  telemetry: Telemetry,
  parts: {
    host: OrderHost;
    store: OrderStateStore;
    consumer: RunnerParts['consumer'] & { isPaused: boolean };
    exchangeActors: ExchangeActors;
    worker: Worker;
    fleet: FleetView;
  },
): void {
  const { host, store, consumer, worker, fleet } = parts;
  telemetry.metrics.observe({
    activeOrders: () => host.activeOrders,
    knownOrders: () => store.size(),
    openOrdersByState: () => host.openOrdersByState(),
    passivatedOrders: () => host.passivatedOrders,
    partitionsOwned: () => consumer.assigned.length,
    consumerPaused: () => consumer.isPaused,
    inflightExchangeCalls: parts.exchangeActors.inflight,
    consumerLag: () => worker.consumerLag,
    // The exchange's longest recommended interval between two confirmations of an order.
    confirmationFreshness: () => host.confirmationFreshness(Date.now(), 60_000),
  });
  telemetry.metrics.observeFleet({
    counts: () => {
      const owned = new Set(store.ownedPartitions());
      return fleet.counts(Date.now(), config.operations.stalledAfterMs, (order) =>
        owned.has(order.partition),
      );
    },
  });
}
