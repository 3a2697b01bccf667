// The composition root of the worker process: configuration and telemetry first, then every part built in
// dependency order by the builders of src/composition/ - each handed what it needs, dependencies flowing forward
// only - then the worker started, with shutdown on a signal or when Kafka fails for good. Nothing else reads
// process.env.
import { FleetView } from './fleet/fleet-view.ts';
import { KeyPartitioning } from './kafka/partitioning.ts';
import { EventLoopLoad } from './process/event-loop-load.ts';
import type { Logger } from './telemetry/logger.ts';
import type { Telemetry } from './telemetry/sdk.ts';
import type { WorkerConfig } from './config.ts';
import { OrderJournal } from './worker/order-journal.ts';
import { RoutePublishing } from './worker/route-publishing.ts';
import { buildExchangeActors, buildExchangeClient } from './composition/exchange.ts';
import { buildHost, buildOperatorAuthority } from './composition/host.ts';
import { buildFleetPeers, buildHealth, buildHttpFace } from './composition/http.ts';
import {
  buildConsumer,
  buildKafka,
  buildKafkaSidecars,
  buildStateStore,
  buildWriter,
  kafkaAccessOf,
  type KafkaFailures,
} from './composition/kafka.ts';
import { buildListing, buildRetention } from './composition/reconcilers.ts';
import { buildRedis } from './composition/redis.ts';
import { installShutdown } from './composition/shutdown.ts';
import {
  configOrExit,
  logStartupWarnings,
  logUnsafeSettings,
  workerLogger,
  workerTelemetry,
} from './composition/telemetry.ts';
import { buildWorker, observeWorker } from './composition/worker.ts';

async function run(config: WorkerConfig, logger: Logger, telemetry: Telemetry): Promise<void> {
  const kafka = buildKafka(config, logger);
  const redis = buildRedis(config, logger);
  // Where each order lives and its claim again, published by the owner of its partition (held during restores).
  const routePublishing = new RoutePublishing({
    index: redis.orderIndex,
    claims: redis.referenceClaims,
    logger,
    onClaimedElsewhere: () => telemetry.metrics.createDoubts.add(1, { kind: 'route_claimed_elsewhere' }),
  });
  const routes = routePublishing.routes;
  const exchange = buildExchangeClient(config, logger, telemetry, redis);
  const exchangeActors = buildExchangeActors(config, logger, telemetry, exchange, redis);

  const failures: KafkaFailures = { fatal: new AbortController(), writerFailed: new AbortController() };
  const writer = buildWriter(config, logger, telemetry, kafka, failures);
  // Shares the state store's records of open orders (it is fed the very objects the store holds).
  const fleet = new FleetView({ sharesRecords: true });
  const store = buildStateStore(config, logger, { kafka, writer, routes, fleet });
  const journal = new OrderJournal({ writer, store, topics: config.topics, now: () => Date.now() });
  const consumer = buildConsumer(config, logger, kafka, failures);
  const eventLoopLoad = new EventLoopLoad();
  // An order's home, before it has a record: the partition the Java client's partitioner gives its order_id (the
  // commands topic's partition count is known once the topics are ensured, before any command is consumed).
  const partitioning = new KeyPartitioning();

  const host = buildHost(config, logger, telemetry, {
    operatorAuthority: buildOperatorAuthority(config, logger),
    store,
    journal,
    redis,
    exchangeActors,
    writerFailed: failures.writerFailed.signal,
    eventLoopLoad,
    consumer,
    partitioning,
  });
  routePublishing.holdWhile(() => host.restoring);
  const listing = buildListing(config, logger, telemetry, { client: exchange.client, host, redis });
  const retention = buildRetention(config, logger, { store, writer, redis, routes });

  const { hints, cluster } = buildKafkaSidecars(kafka);
  const health = buildHealth(config, { consumer, cluster, redis, host });
  const peers = buildFleetPeers(config, logger, { store, partitioning, redis });
  const http = buildHttpFace(config, logger, telemetry, {
    health,
    host,
    store,
    routes,
    hints,
    fleet,
    peers,
    redis,
  });

  const worker = buildWorker(config, logger, telemetry, {
    http,
    kafka,
    writer,
    store,
    hints,
    host,
    consumer,
    cluster,
    health,
    partitioning,
    retention,
    listing,
    routePublishing,
    exchangeActors,
    client: exchange.client,
    eventLoopLoad,
    redis,
    peers,
  });
  observeWorker(config, telemetry, { host, store, consumer, exchangeActors, worker, fleet });
  logUnsafeSettings(config, logger);
  installShutdown(config, logger, { worker, fatal: failures.fatal.signal });
  await worker.start();
}

const config = configOrExit(process.env);
const logger = workerLogger(config);
logStartupWarnings(config, logger, process.env);
// Before anything else runs, so that every span, metric and log line of the process is covered.
const telemetry = workerTelemetry(config, logger);
run(config, logger, telemetry).catch((error: unknown) => {
  logger.fatal(
    {
      err: { message: (error as Error).message, stack: (error as Error).stack },
      ...kafkaAccessOf(error, config),
    },
    'worker failed to start',
  );
  logger.flush();
  process.exit(1);
});
