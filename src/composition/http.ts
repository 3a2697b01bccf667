// The HTTP face: health (Kafka, Redis, the exchange's reachability), the webhook receiver (signature check, dedupe,
// routing to this replica's order or the replica that holds it) and the operations server's read API.
import { connect } from 'node:net';
import type { WorkerConfig } from '../config.ts';
import { webhookVerifier } from '../exchange/webhook-signature.ts';
import { FleetPeers, httpAsk } from '../fleet/fleet-peers.ts';
import type { FleetView } from '../fleet/fleet-view.ts';
import { bearerCheck } from '../http/bearer-auth.ts';
import { HttpFace } from '../http/http-face.ts';
import { normalizeWebhook } from '../http/normalize-webhook.ts';
import { createOrdersApi, replicaOfLease } from '../http/orders-api.ts';
import { createWebhookReceiver, type WebhookReceiverDeps } from '../http/webhook-receiver.ts';
import type { BestEffortProducer } from '../kafka/best-effort-producer.ts';
import type { ClusterAdmin } from '../kafka/cluster-admin.ts';
import type { CommandConsumer } from '../kafka/command-consumer.ts';
import type { OrderStateStore } from '../kafka/order-state-store.ts';
import type { KeyPartitioning } from '../kafka/partitioning.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import { stuckHandlerAfterOf, WorkerHealth } from '../worker/health.ts';
import type { OrderHost } from '../worker/order-host.ts';
import { webhookRouting, type OrderRoutes } from '../worker/webhook-routing.ts';
import type { RedisParts } from './redis.ts';

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

export function buildHealth(
  config: WorkerConfig,
  parts: {
    consumer: CommandConsumer;
    cluster: ClusterAdmin;
    redis: Pick<RedisParts, 'redis'>;
    host: Pick<OrderHost, 'commandRunningForMs'>;
  },
): WorkerHealth {
  const { redis } = parts.redis;
  const { host } = parts;
  return new WorkerHealth({
    consumer: parts.consumer,
    // Not alive while a command handler runs past the session: the member is gone from the group meanwhile.
    commands: {
      runningForMs: () => host.commandRunningForMs(),
      stuckAfterMs: stuckHandlerAfterOf(config.kafkaSessionTimeoutMs),
    },
    kafka: parts.cluster,
    checks: {
      redis: async () => (await redis.ping()) === 'PONG',
      exchange: () => tcpReachable(config.exchange.baseUrl),
    },
    now: () => Date.now(),
  });
}

/**
 * The other replicas as the read API asks them (src/fleet/fleet-peers.ts), and this replica announced to them: its
 * address (OPS_ADVERTISE_URL, else 127.0.0.1 and METRICS_PORT) and the partitions it owns.
 */
export function buildFleetPeers(
  config: WorkerConfig,
  logger: Logger,
  parts: {
    store: Pick<OrderStateStore, 'ownedPartitions' | 'get'>;
    partitioning: Pick<KeyPartitioning, 'partitions'>;
    redis: Pick<RedisParts, 'fleetMembers'>;
  },
): FleetPeers {
  const { store, partitioning } = parts;
  const url = config.operations.advertiseUrl ?? `http://127.0.0.1:${config.metricsPort}`;
  return new FleetPeers({
    workerId: config.workerId,
    members: parts.redis.fleetMembers,
    ownedPartitions: () => store.ownedPartitions(),
    partitionCount: () => partitioning.partitions,
    partitionOf: (orderId) => store.get(orderId)?.partition,
    url: () => url,
    ask: httpAsk(config.workerId),
    logger: logger.child({ component: 'fleet-peers' }),
    now: () => Date.now(),
  });
}

export interface HttpParts {
  health: WorkerHealth;
  host: OrderHost;
  store: OrderStateStore;
  routes: OrderRoutes;
  hints: BestEffortProducer;
  fleet: FleetView;
  peers: FleetPeers;
  redis: Pick<RedisParts, 'dedupe' | 'leaseReads'>;
}

export function buildHttpFace(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  parts: HttpParts,
): HttpFace {
  const { health, host, redis } = parts;
  // config.ts refuses to start without a signing secret unless WEBHOOK_ALLOW_UNSIGNED=true.
  const verify =
    config.webhooks.secrets.length > 0 ? webhookSignatureCheck(config.webhooks.secrets) : undefined;
  const receiver = createWebhookReceiver({
    logger,
    verify,
    normalize: normalizeWebhook,
    firstSeen: (reference, status) => redis.dedupe.firstSeen(reference, status),
    forget: (reference, status) => redis.dedupe.forget(reference, status),
    ...webhookRouting({
      state: parts.store,
      routes: parts.routes,
      producer: parts.hints,
      deliverLocally: (hint, options) => host.deliverHint(hint, options),
      topics: config.topics,
      now: () => Date.now(),
    }),
    now: () => Date.now(),
  });
  telemetry.metrics.observeWebhookReceiver(receiver);
  const ordersApi = createOrdersApi({
    auth: bearerCheck(config.operations.apiTokens),
    view: parts.fleet,
    peers: parts.peers,
    replicaOf: replicaOfLease(redis.leaseReads),
    workerId: config.workerId,
    now: () => Date.now(),
  });
  return new HttpFace({
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
}
