// The composition root: loads configuration, builds every part in dependency order (Kafka, Redis, the exchange
// client, the order machine's actors, the writer, the state store, the order host, the consumer, the HTTP face,
// telemetry), hands each what it needs - dependencies flow forward only - then starts the worker and owns
// shutdown. Nothing else reads process.env.
import pLimit from 'p-limit';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { allocatorEnvMissing } from './allocator-env.ts';
import { ConfigError, configWarnings, loadConfig, secretValues, type WorkerConfig } from './config.ts';
import { createOrderTimeoutMs, ExchangeClient } from './exchange/client.ts';
import { RedisRequestBudget } from './exchange/redis-request-budget.ts';
import { webhookVerifier } from './exchange/webhook-signature.ts';
import { FleetView } from './fleet/fleet-view.ts';
import { bearerCheck } from './http/bearer-auth.ts';
import { HttpFace } from './http/http-face.ts';
import { createOrdersApi } from './http/orders-api.ts';
import { normalizeWebhook } from './http/normalize-webhook.ts';
import { createWebhookReceiver, type WebhookReceiverDeps } from './http/webhook-receiver.ts';
import { BestEffortProducer } from './kafka/best-effort-producer.ts';
import { ClusterAdmin } from './kafka/cluster-admin.ts';
import { CommandConsumer } from './kafka/command-consumer.ts';
import { createKafka } from './kafka/kafka-client.ts';
import { OrderStateStore } from './kafka/order-state-store.ts';
import { KeyPartitioning } from './kafka/partitioning.ts';
import { ensureTopics } from './kafka/topics.ts';
import { TransactionalWriter } from './kafka/transactional-writer.ts';
import { explainKafkaAccess, transactionalIdOf, workerAcls } from './kafka/worker-acls.ts';
import { closeRedis, createRedis, whenRedisReady, type CreateRedisOptions } from './redis/connect.ts';
import { primariesShortOfReplicas, replicaAcks } from './redis/replica-acks.ts';
import { OrderHomes, orderHomeTtlMs } from './redis/order-homes.ts';
import { ListingShare } from './redis/listing-share.ts';
import { OrderIndex } from './redis/order-index.ts';
import { OrderLease } from './redis/order-lease.ts';
import { QuoteCooldown } from './redis/quote-cooldown.ts';
import { RedisCreatesInFlight } from './redis/creates-in-flight.ts';
import { RedisReferenceClaims } from './redis/reference-claims.ts';
import { CurrencyCatalog } from './exchange/currency-catalog.ts';
import { tradingModes } from '../machines/domain.ts';
import { WebhookDedupe } from './redis/webhook-dedupe.ts';
import { createLogger, onceEvery, type Logger } from './telemetry/logger.ts';
import { startTelemetry, type Telemetry } from './telemetry/sdk.ts';
import { CefiListing, listedModes } from './worker/cefi-listing.ts';
import { createExchangeActors } from './worker/exchange-actors.ts';
import { WorkerHealth } from './worker/health.ts';
import { OrderHost } from './worker/order-host.ts';
import { OrderJournal } from './worker/order-journal.ts';
import { OperatorAuthority } from './worker/operator-authority.ts';
import { callsSettleTimeoutOf } from './worker/order-reload.ts';
import { commandWaitBoundOf } from './timeouts.ts';
import { HeapReducer } from './worker/heap-reducer.ts';
import { EventLoopLoad } from './worker/event-loop-load.ts';
import { RedisOrderLeases } from './worker/redis-leases.ts';
import { retentionSweepIntervalMs, StateRetention } from './worker/state-retention.ts';
import { webhookRouting, type OrderRoutes } from './worker/webhook-routing.ts';
import { Worker } from './worker/worker.ts';
import { createXStateBinding } from './worker/xstate-binding.ts';

function tcpReachable(url: string, timeoutMs = 2_000): Promise<boolean> {
  const target = new URL(url);
  const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host: target.hostname, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** For a Kafka authorization failure, `access`: what the broker refused and the ACLs that cover it. */
function kafkaAccessOf(error: unknown, config: WorkerConfig): { access?: string } {
  const access = explainKafkaAccess(
    error,
    workerAcls({ ...config.topics, consumerGroup: config.consumerGroup }),
  );
  return access === undefined ? {} : { access };
}

/** The receiver's signature check over every configured secret (the newest first). */
function webhookSignatureCheck(secrets: readonly string[]): NonNullable<WebhookReceiverDeps['verify']> {
  const verifier = webhookVerifier(secrets);
  return (raw, headers) => {
    const verdict = verifier(raw, headers);
    return verdict.ok
      ? { ok: true, secretIndex: verdict.secretIndex }
      : { ok: false, reason: verdict.reason };
  };
}

async function run(config: WorkerConfig, logger: Logger, telemetry: Telemetry): Promise<void> {
  const kafka = createKafka({
    clientId: `exchange-order-worker.${config.workerId}`,
    brokers: config.kafkaBrokers,
    logger,
    security: config.security.kafka,
  });
  const redisLog = logger.child({ component: 'redis' });
  let lastRedisError = 0;
  const redisOptions: CreateRedisOptions = {
    keyPrefix: `eow:${config.consumerGroup}:`,
    security: config.security.redis,
    onError: (error) => {
      if (Date.now() - lastRedisError > 5_000) redisLog.warn({ code: error.code }, 'redis unavailable');
      lastRedisError = Date.now();
    },
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
  const routeLog = logger.child({ component: 'order-routes' });
  // Reading a state topic of 100k orders records 100k routes: a bounded number in flight, the rest queued, so
  // they never crowd out (time out) the lease and budget commands that share the connection. While a partition is
  // being restored they wait for it: the restore's own Redis commands (a lease per open order) come first, and the
  // routes (a cache for other replicas' webhooks, which fall back to the poll on a miss) follow at once after.
  const routeWrites = pLimit(32);
  const publishRoute = (reference: string, orderId: string, partition: number): void => {
    void routeWrites(async () => {
      await orderIndex
        .put(reference, orderId, partition)
        .catch((error: unknown) =>
          routeLog.debug({ orderId, err: { message: (error as Error).message } }, 'route not recorded'),
        );
      await referenceClaims.reassert(reference, orderId).then(
        (ours) => {
          if (ours) return;
          // This order published the exchange order (its record names it), yet another order claims it: both
          // may have handed its deposit address out. Nothing is undone automatically (docs/operations.md).
          telemetry.metrics.createDoubts.add(1, { kind: 'route_claimed_elsewhere' });
          routeLog.error(
            { orderId, uniqueReference: reference },
            'exchange order claimed by another order: two orders may have published it (worker_create_doubts{kind="route_claimed_elsewhere"}; see docs/operations.md)',
          );
        },
        () => {},
      );
    });
  };
  let restoring = (): boolean => false;
  let heldRoutes: Array<[reference: string, orderId: string, partition: number]> = [];
  const releaseRoutes = (): void => {
    if (restoring()) {
      setTimeout(releaseRoutes, 100).unref();
      return;
    }
    const held = heldRoutes;
    heldRoutes = [];
    for (const route of held) publishRoute(...route);
  };
  const orderRoutes: OrderRoutes = {
    // The owner of a partition publishes where its orders live, and claims their references again: a Redis that
    // restarted empty gets both back as partitions are read (the claim guards adoption across partitions).
    record: (reference, orderId, partition) => {
      if (!restoring() && heldRoutes.length === 0) {
        publishRoute(reference, orderId, partition);
        return;
      }
      heldRoutes.push([reference, orderId, partition]);
      if (heldRoutes.length === 1) setTimeout(releaseRoutes, 100).unref();
    },
    locate: async (reference) => {
      const found = await orderIndex.locate(reference);
      return found?.partition === undefined
        ? undefined
        : { orderId: found.orderId, partition: found.partition };
    },
    forget: (reference) => void orderIndex.forget(reference).catch(() => {}),
  };
  const dedupe = new WebhookDedupe(redis, {
    onDegraded: (error) => redisLog.warn({ code: error.code }, 'webhook dedupe degraded'),
  });
  const budget = new RedisRequestBudget({
    redis,
    limit: config.exchange.budgetPerMinute,
    logger: logger.child({ component: 'budget' }),
  });
  const exchangeObserver = telemetry.metrics.exchangeObserver();
  const exchangeLog = logger.child({ component: 'exchange' });
  const client = new ExchangeClient({
    baseUrl: config.exchange.baseUrl,
    credentials: Object.fromEntries(
      Object.entries(config.exchange.credentials).filter(([, v]) => v !== undefined),
    ),
    ...(config.exchange.referralToken ? { referralToken: config.exchange.referralToken } : {}),
    referralTokens: config.exchange.referralTokens,
    budget,
    retryAfterMaxMs: config.exchange.retryAfterMaxMs,
    tracer: telemetry.tracer,
    observer: exchangeObserver,
    logger: exchangeLog,
  });

  // Market data needs only a key: the catalogue is read with the first mode that has one.
  const catalogMode = tradingModes.find((mode) => config.exchange.credentials[mode] !== undefined);
  const catalog =
    catalogMode === undefined
      ? undefined
      : new CurrencyCatalog({
          source: client,
          mode: catalogMode,
          refreshIntervalMs: config.exchange.currencyCatalogRefreshMs,
          logger: logger.child({ component: 'currency-catalog' }),
        });
  const pairingLog = logger.child({ component: 'address-pairing' });
  // Status reads out at once: what the request budget admits in 30 s (the poll interval); one read more would only
  // wait behind them in memory, and its order polls again anyway.
  const maxStatusReads = Math.max(100, Math.ceil(config.exchange.budgetPerMinute / 2));
  const statusReadsRefusedWarning = onceEvery(60_000);
  const exchangeActors = createExchangeActors({
    client,
    cooldown,
    claims: referenceClaims,
    inFlight: createsInFlight,
    onCreateDoubt: ({ kind, orderId, uniqueReference, message }) => {
      telemetry.metrics.createDoubts.add(1, { kind });
      exchangeLog.warn(
        { orderId, kind, ...(uniqueReference ? { uniqueReference } : {}) },
        `create in doubt: ${message} (worker_create_doubts{kind="${kind}"}; see docs/operations.md)`,
      );
    },
    ...(catalog ? { catalog } : {}),
    onUnchecked: (orderId, unchecked) =>
      pairingLog.warn({ orderId, unchecked }, 'address pairing could not verify everything'),
    now: () => Date.now(),
    maxStatusReads,
    onStatusReadRefused: () => {
      exchangeObserver.attemptFailed({
        operation: 'getOrder',
        errorType: 'status_reads_at_capacity',
        action: 'throttled',
      });
      if (!statusReadsRefusedWarning(Date.now())) return;
      exchangeLog.warn(
        { maxStatusReads },
        'status reads refused: as many are already waiting for the request budget or the exchange as it admits in 30 s; their orders poll again later (worker_exchange_errors_total{error_type="status_reads_at_capacity"})',
      );
    },
  });

  // The process stops when Kafka can no longer be written or read for good; another replica takes over.
  const fatal = new AbortController();
  // Aborted first when the writer fails: the order host stops every actor before any waiter of a write resumes.
  const writerFailed = new AbortController();
  const writer = new TransactionalWriter({
    kafka,
    transactionalId: transactionalIdOf(config.consumerGroup, config.workerId),
    consumerGroupId: config.consumerGroup,
    transactionTimeoutMs: config.kafkaTransactionTimeoutMs,
    lingerMs: config.kafkaTransactionLingerMs,
    logger,
    compressedTopics: [config.topics.state],
    onFatal: (error) => {
      writerFailed.abort(error);
      fatal.abort(error);
    },
    onTransaction: ({ outcome, seconds }) => {
      telemetry.metrics.kafkaCommitDuration.record(seconds, { outcome });
      if (outcome === 'committed') telemetry.metrics.kafkaTransactions.add(1);
    },
  });
  const fleet = new FleetView();
  const store = new OrderStateStore({
    kafka,
    topic: config.topics.state,
    workerId: config.workerId,
    writer,
    logger,
    transactionTimeoutMs: config.kafkaTransactionTimeoutMs,
    onReference: (reference, orderId, partition) => orderRoutes.record(reference, orderId, partition),
    // Every replica's read view of every order: the read API answers for any order from it.
    onRecord: (record) => ('forgotten' in record ? fleet.forget(record.forgotten) : fleet.apply(record)),
  });
  const journal = new OrderJournal({ writer, store, topics: config.topics, now: () => Date.now() });
  const eventLoopLoad = new EventLoopLoad();
  // Where each order lives, kept from its create and again from the retention sweep's tombstone (marked retired).
  const homes = new OrderHomes(redis, { ttlMs: orderHomeTtlMs(config.finishedOrderRetentionMs) });
  // An order's home, before it has a record: the partition the Java client's partitioner gives its order_id (the
  // commands topic's partition count is known once the topics are ensured, before any command is consumed).
  const partitioning = new KeyPartitioning();
  const operatorLog = logger.child({ component: 'operator-authority' });
  const operatorAuthority = new OperatorAuthority({
    keys: config.operations.operatorKeys,
    allowUnsigned: config.operations.operatorCommandsUnsigned,
    maxAgeMs: config.operations.operatorSignatureMaxAgeMs,
    // Counted as messaging_client_consumed_messages_total{result="rejected",reason="unauthorized"}; the line says who tried.
    onRefused: ({ orderId, keyId, problem }) =>
      operatorLog.warn(
        { orderId, keyId, problem },
        'operator command refused: not signed by an operator key',
      ),
  });
  const host = new OrderHost({
    operatorAuthority,
    state: store,
    journal,
    leases,
    binding: (barrier) =>
      createXStateBinding({
        actors: exchangeActors.actors(barrier),
        orderConfig: {
          pollIntervalMs: config.pollIntervalMs,
          webhookPollIntervalMs: config.webhookPollIntervalMs,
          hintCoalesceMs: config.webhookCoalesceMs,
          hintCoalesceMaxMs: config.webhookCoalesceMaxMs,
          quoteCooldownMs: config.quoteCooldownMs,
          createSettleMs: config.createSettleMs,
          parkedRecheckMs: config.parkedRecheckMs,
        },
      }),
    writerFailed: writerFailed.signal,
    logger,
    now: () => Date.now(),
    callsSettled: exchangeActors.settled,
    // A lease is let go of, and a reload acts, once the order's calls ended: at most the create timeout and a margin.
    callsSettleTimeoutMs: callsSettleTimeoutOf(createOrderTimeoutMs),
    // A command's waits end well within the Kafka session: a handler still waiting past it leaves a zombie member.
    commandWaitBoundMs: commandWaitBoundOf(config.kafkaSessionTimeoutMs),
    callInFlight: exchangeActors.busy,
    passivateIdleMs: config.passivateIdleMs,
    // Routine polls of resting orders wait (up to 60 s after their last confirmation) while the thread is saturated
    // or commands wait for it: a backlog of creations on two shared cores need not keep the thread busy to be one.
    pollsMayWait: () => eventLoopLoad.saturated() || consumer.commandsWaiting(),
    pollResting: exchangeActors.pollResting,
    // The other half of the calls in flight stays for commands: polls at rest alone never pause consumption.
    maxPollsAtRest: Math.max(1, Math.floor(config.maxInflightExchangeCalls / 2)),
    commandPipelineDepth: config.commandPipelineDepth,
    // The consumer is built below; a rewind is asked for only once commands flow.
    rewind: (partition, offset) => consumer.rewind(partition, offset),
    maxCommandBytes: config.maxCommandBytes,
    metrics: telemetry.metrics.hostObserver({
      topic: config.topics.commands,
      consumerGroup: config.consumerGroup,
    }),
    homes,
    canonicalPartition: (orderId) => partitioning.partitionOf(orderId),
  });
  restoring = () => host.restoring;
  // CeFi orders are confirmed in bulk (GET /orders/?status=<code>) for every CeFi mode with a key (keys are per mode).
  const listing = new CefiListing({
    source: client,
    target: host,
    modes: listedModes.filter((mode) => config.exchange.credentials[mode] !== undefined),
    intervalMs: config.listReconcileIntervalMs,
    now: () => Date.now(),
    logger,
    metrics: telemetry.metrics.listingObserver(),
    // One walk per interval between all replicas of the deployment (the listing names every order of the key).
    ...(config.listReconcileIntervalMs > 0
      ? { share: new ListingShare(redis, { intervalMs: config.listReconcileIntervalMs }) }
      : {}),
  });
  const retention = new StateRetention({
    store,
    writer,
    leases,
    stateTopic: config.topics.state,
    retentionMs: config.finishedOrderRetentionMs,
    logger,
    homes,
    onTombstoned: ({ uniqueReference }) => {
      if (uniqueReference) orderRoutes.forget(uniqueReference);
    },
  });
  const consumer = new CommandConsumer({
    kafka,
    topic: config.topics.commands,
    groupId: config.consumerGroup,
    logger,
    onFatal: (error) => fatal.abort(error),
    sessionTimeoutMs: config.kafkaSessionTimeoutMs,
  });

  const hints = new BestEffortProducer(kafka);
  const cluster = new ClusterAdmin(kafka);
  const health = new WorkerHealth({
    consumer,
    kafka: cluster,
    checks: {
      redis: async () => (await redis.ping()) === 'PONG',
      exchange: () => tcpReachable(config.exchange.baseUrl),
    },
    now: () => Date.now(),
  });
  // config.ts refuses to start without a signing secret unless WEBHOOK_ALLOW_UNSIGNED=true.
  const verify =
    config.webhooks.secrets.length > 0 ? webhookSignatureCheck(config.webhooks.secrets) : undefined;
  const receiver = createWebhookReceiver({
    logger,
    verify,
    normalize: normalizeWebhook,
    firstSeen: (reference, status) => dedupe.firstSeen(reference, status),
    forget: (reference, status) => dedupe.forget(reference, status),
    ...webhookRouting({
      state: store,
      routes: orderRoutes,
      producer: hints,
      deliverLocally: (hint, options) => host.deliverHint(hint, options),
      topics: config.topics,
      now: () => Date.now(),
    }),
    now: () => Date.now(),
  });
  telemetry.metrics.observeWebhookReceiver(receiver);
  // A connection of its own: a read of the API must not queue behind the lease renewals of every open order.
  const readsRedis = createRedis(config.redis.topology, {
    keyPrefix: `eow:${config.consumerGroup}:`,
    security: config.security.redis,
    onError: () => {},
  });
  const leaseReads = new OrderLease(readsRedis);
  const ordersApi = createOrdersApi({
    auth: bearerCheck(config.operations.apiTokens),
    view: fleet,
    replicaOf: async (orderId) => {
      const holder = await leaseReads.holder(orderId);
      // A lease owner is `<WORKER_ID>:<pid>:<random>` (WORKER_ID has no colon).
      return holder
        ? {
            worker_id: holder.owner.split(':')[0] ?? holder.owner,
            fence: holder.fence,
            lease_remaining_ms: holder.remainingMs,
          }
        : null;
    },
    workerId: config.workerId,
    now: () => Date.now(),
  });
  const http = new HttpFace({
    logger,
    receiver,
    limits: {
      maxConnections: config.webhooks.maxConnections,
      maxUnverifiedBytes: config.webhooks.maxUnverifiedBytes,
    },
    verify,
    routes: ordersApi,
    readiness: () => health.readiness(),
    liveness: () => health.liveness(),
    startup: () => health.startup(),
    acceptsWebhooks: () => health.acceptsWebhooks(),
    metrics: { render: () => telemetry.metrics.render(), webhooks: telemetry.metrics.webhookObserver() },
  });

  const worker = new Worker(config, logger, {
    http,
    ensureTopics: async () => {
      const topics = await ensureTopics(kafka, config.topics, logger, {
        // A replayed create is recognised by its finished order, then by the order's retired home.
        replayRecognisedForMs:
          config.finishedOrderRetentionMs + orderHomeTtlMs(config.finishedOrderRetentionMs),
      });
      partitioning.usePartitionCount(topics.partitions);
      return topics;
    },
    writer,
    store,
    hints,
    host,
    consumer,
    cluster,
    health,
    retention: {
      sweep: (now) => retention.sweep(now),
      intervalMs: retentionSweepIntervalMs(config.finishedOrderRetentionMs),
    },
    listing,
    heapReducer:
      config.heapReduceAfterRestoreMs > 0
        ? new HeapReducer({
            logger,
            delayMs: config.heapReduceAfterRestoreMs,
            // After the restore's follow-up too: the routes it held back and publishes once it is over.
            busy: () =>
              host.restoring ||
              heldRoutes.length > 0 ||
              routeWrites.activeCount + routeWrites.pendingCount > 0,
            onReduced: telemetry.metrics.heapReduced,
          })
        : undefined,
    inflightExchangeCalls: exchangeActors.inflight,
    close: async () => {
      eventLoopLoad.stop();
      await leases.stop().catch(() => {});
      await client.close().catch(() => {});
      await closeRedis(redis).catch(() => {});
      await closeRedis(readsRedis).catch(() => {});
      if (leaseRedis !== redis) await closeRedis(leaseRedis).catch(() => {});
      await telemetry.shutdown().catch(() => {});
    },
  });
  telemetry.metrics.observe({
    activeOrders: () => host.activeOrders,
    knownOrders: () => store.size(),
    openOrdersByState: () => host.openOrdersByState(),
    passivatedOrders: () => host.passivatedOrders,
    partitionsOwned: () => consumer.assigned.length,
    consumerPaused: () => consumer.isPaused,
    inflightExchangeCalls: exchangeActors.inflight,
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

  if (config.operations.operatorKeys.length === 0)
    logger.warn(
      {
        variable: config.operations.operatorCommandsUnsigned
          ? 'OPERATOR_COMMANDS_UNSIGNED'
          : 'OPERATOR_PUBLIC_KEYS',
      },
      config.operations.operatorCommandsUnsigned
        ? 'operator commands (order.settle) are accepted UNSIGNED (OPERATOR_COMMANDS_UNSIGNED=true): anyone who can write the commands topic can abandon an order; development only'
        : 'no OPERATOR_PUBLIC_KEYS: every operator command (order.settle) is refused (command.rejected, unauthorized)',
    );
  if (config.webhooks.secrets.length === 0)
    logger.warn(
      { variable: 'WEBHOOK_ALLOW_UNSIGNED' },
      'webhooks are accepted UNSIGNED (WEBHOOK_ALLOW_UNSIGNED=true): anyone who reaches HTTP_PORT can trigger order polls; development only',
    );

  let shuttingDown = false;
  const shutdown = (reason: string, code: number): void => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ reason }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'graceful shutdown timed out; exiting');
      process.exit(code || 1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    void worker.stop().finally(() => {
      logger.info('stopped');
      logger.flush();
      process.exit(code);
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM', 0));
  process.once('SIGINT', () => shutdown('SIGINT', 0));
  fatal.signal.addEventListener(
    'abort',
    () => {
      logger.fatal(
        {
          err: { message: (fatal.signal.reason as Error).message },
          ...kafkaAccessOf(fatal.signal.reason, config),
        },
        'Kafka writer failed for good; stopping so another replica takes over',
      );
      shutdown('fatal', 1);
    },
    { once: true },
  );
  await worker.start();
}

let config: WorkerConfig;
try {
  config = loadConfig(process.env);
} catch (error) {
  if (error instanceof ConfigError) {
    for (const problem of error.problems) console.error(`config: ${problem}`);
    process.exit(2);
  }
  throw error;
}
const logger = createLogger({
  level: config.logLevel,
  workerId: config.workerId,
  secrets: [...secretValues(config), ...config.telemetry.exporterHeaderValues],
});
for (const warning of configWarnings(config, { createOrderTimeoutMs })) logger.warn(warning);
const untunedAllocator = allocatorEnvMissing(process.env);
if (untunedAllocator.length > 0)
  logger.info(
    { missing: untunedAllocator },
    'glibc allocator settings of the worker image absent (src/allocator-env.ts): RSS after restores may be twice as high',
  );
// Before anything else runs, so that every span, metric and log line of the process is covered.
const telemetry = startTelemetry({
  workerId: config.workerId,
  exportTraces: config.telemetry.exportTraces,
  serviceName: config.telemetry.serviceName,
  sampler: config.telemetry.sampler,
  logger,
});
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
