// The composition root: loads configuration, builds the adapters (Kafka, Redis, the exchange client), provides
// them to the order machine, starts the worker and owns shutdown. Nothing else reads process.env.
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { ConfigError, loadConfig, secretValues, type WorkerConfig } from './config.ts';
import { ExchangeClient, RedisRequestBudget, webhookVerifier } from './exchange/index.ts';
import { createKafka } from './kafka/kafka-client.ts';
import { closeRedis, createRedis } from './redis/connect.ts';
import { OrderLease } from './redis/order-lease.ts';
import { QuoteCooldown } from './redis/quote-cooldown.ts';
import { RedisReferenceClaims } from './redis/reference-claims.ts';
import { CurrencyCatalog } from './exchange/currency-catalog.ts';
import { tradingModes } from '../machines/domain.ts';
import { WebhookDedupe } from './redis/webhook-dedupe.ts';
import { createLogger, type Logger } from './telemetry/logger.ts';
import { startTelemetry, type Telemetry } from './telemetry/sdk.ts';
import { normalizeWebhook } from './http/normalize-webhook.ts';
import { createExchangeActors } from './worker/exchange-actors.ts';
import { RedisOrderLeases } from './worker/redis-leases.ts';
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

async function run(config: WorkerConfig, logger: Logger, telemetry: Telemetry): Promise<void> {
  const kafka = createKafka({
    clientId: `exchange-order-worker.${config.workerId}`,
    brokers: config.kafkaBrokers,
    logger,
    security: config.security.kafka,
  });
  const redisLog = logger.child({ component: 'redis' });
  let lastRedisError = 0;
  const redis = createRedis(config.redisUrl, {
    keyPrefix: `eow:${config.consumerGroup}:`,
    security: config.security.redis,
    onError: (error) => {
      if (Date.now() - lastRedisError > 5_000) redisLog.warn({ code: error.code }, 'redis unavailable');
      lastRedisError = Date.now();
    },
  });
  const leases = new RedisOrderLeases({
    lease: new OrderLease(redis),
    owner: `${config.workerId}:${process.pid}:${randomUUID().slice(0, 8)}`,
    ttlMs: config.leaseTtlMs,
    logger,
  });
  const cooldown = new QuoteCooldown(redis, {
    onDegraded: (error) => redisLog.warn({ code: error.code }, 'quote cooldown degraded to local'),
  });
  const referenceClaims = new RedisReferenceClaims(redis);
  const dedupe = new WebhookDedupe(redis, {
    onDegraded: (error) => redisLog.warn({ code: error.code }, 'webhook dedupe degraded'),
  });
  const budget = new RedisRequestBudget({
    redis,
    limit: config.exchange.budgetPerMinute,
    logger: logger.child({ component: 'budget' }),
  });
  const client = new ExchangeClient({
    baseUrl: config.exchange.baseUrl,
    credentials: Object.fromEntries(
      Object.entries(config.exchange.credentials).filter(([, v]) => v !== undefined),
    ),
    ...(config.exchange.referralToken ? { referralToken: config.exchange.referralToken } : {}),
    referralTokens: config.exchange.referralTokens,
    budget,
    tracer: telemetry.tracer,
    observer: telemetry.metrics.exchangeObserver(),
    logger: logger.child({ component: 'exchange' }),
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
  let actors: ReturnType<typeof createExchangeActors> | undefined;
  const worker = new Worker(config, logger, {
    kafka,
    leases,
    binding: (host) => {
      actors = createExchangeActors({
        client,
        cooldown,
        durable: (orderId) => host().durable(orderId),
        mayAct: (orderId) => host().mayAct(orderId),
        claims: referenceClaims,
        ownerOfReference: (reference) => host().ownerOfReference(reference),
        ...(catalog ? { catalog } : {}),
        onUnchecked: (orderId, unchecked) =>
          pairingLog.warn({ orderId, unchecked }, 'address pairing could not verify everything'),
        now: () => Date.now(),
      });
      return createXStateBinding({
        actors,
        orderConfig: {
          pollIntervalMs: config.pollIntervalMs,
          quoteCooldownMs: config.quoteCooldownMs,
          createSettleMs: config.createSettleMs,
          parkedRecheckMs: config.parkedRecheckMs,
        },
      });
    },
    inflightExchangeCalls: () => actors?.inflight() ?? 0,
    callsSettled: (orderId, timeoutMs) => actors?.settled(orderId, timeoutMs) ?? Promise.resolve(),
    metrics: telemetry.metrics,
    webhooks: {
      // config.ts refuses to start without a signing secret unless WEBHOOK_ALLOW_UNSIGNED=true.
      verify:
        config.webhooks.secrets.length > 0
          ? (() => {
              const verifier = webhookVerifier(config.webhooks.secrets);
              return (raw: Buffer, headers: Readonly<Record<string, string | string[] | undefined>>) => {
                const verdict = verifier(raw, headers);
                return verdict.ok
                  ? { ok: true as const, secretIndex: verdict.secretIndex }
                  : { ok: false as const, reason: verdict.reason };
              };
            })()
          : undefined,
      normalize: normalizeWebhook,
      firstSeen: (reference, status) => dedupe.firstSeen(reference, status),
      forget: (reference, status) => dedupe.forget(reference, status),
    },
    checks: {
      redis: async () => (await redis.ping()) === 'PONG',
      exchange: () => tcpReachable(config.exchange.baseUrl),
    },
    close: async () => {
      await leases.stop().catch(() => {});
      await client.close().catch(() => {});
      await closeRedis(redis).catch(() => {});
      await telemetry.shutdown().catch(() => {});
    },
  });

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
  await worker.start((error) => {
    logger.fatal(
      { err: { message: error.message } },
      'Kafka writer failed for good; stopping so another replica takes over',
    );
    shutdown('fatal', 1);
  });
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
// Before anything else runs, so that every span, metric and log line of the process is covered.
const telemetry = startTelemetry({
  workerId: config.workerId,
  exportTraces: config.telemetry.exportTraces,
  serviceName: config.telemetry.serviceName,
  logger,
});
run(config, logger, telemetry).catch((error: unknown) => {
  logger.fatal(
    { err: { message: (error as Error).message, stack: (error as Error).stack } },
    'worker failed to start',
  );
  logger.flush();
  process.exit(1);
});
