// The exchange parts: the request budget shared by every replica, the client, the currency catalogue (when a mode
// has a key), and the machine's actors on the exchange and Redis (the create path's claims, cooldown and creates in
// flight, status reads bounded by what the budget admits).
import { tradingModes } from '../../machines/domain.ts';
import type { WorkerConfig } from '../config.ts';
import { ExchangeClient } from '../exchange/client.ts';
import { CurrencyCatalog } from '../exchange/currency-catalog.ts';
import { RedisRequestBudget } from '../exchange/redis-request-budget.ts';
import { onceEvery, type Logger } from '../telemetry/logger.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import { createExchangeActors } from '../worker/exchange-actors.ts';
import type { RedisParts } from './redis.ts';

export function buildExchangeClient(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  redis: Pick<RedisParts, 'redis'>,
) {
  const budget = new RedisRequestBudget({
    redis: redis.redis,
    limit: config.exchange.budgetPerMinute,
    logger: logger.child({ component: 'budget' }),
  });
  const observer = telemetry.metrics.exchangeObserver();
  const log = logger.child({ component: 'exchange' });
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
    observer,
    logger: log,
  });
  return { client, observer, log };
}

export type ExchangeClientParts = ReturnType<typeof buildExchangeClient>;

export function buildExchangeActors(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  exchange: ExchangeClientParts,
  redis: Pick<RedisParts, 'cooldown' | 'referenceClaims' | 'createsInFlight'>,
) {
  const { client, observer, log } = exchange;
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
  return createExchangeActors({
    client,
    cooldown: redis.cooldown,
    claims: redis.referenceClaims,
    inFlight: redis.createsInFlight,
    onCreateDoubt: ({ kind, orderId, uniqueReference, message }) => {
      telemetry.metrics.createDoubts.add(1, { kind });
      log.warn(
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
      observer.attemptFailed({
        operation: 'getOrder',
        errorType: 'status_reads_at_capacity',
        action: 'throttled',
      });
      if (!statusReadsRefusedWarning(Date.now())) return;
      log.warn(
        { maxStatusReads },
        'status reads refused: as many are already waiting for the request budget or the exchange as it admits in 30 s; their orders poll again later (worker_exchange_errors_total{error_type="status_reads_at_capacity"})',
      );
    },
  });
}
