// The order's context and the inputs derived from it: the tunables resolved once, the request normalised, the
// initial (or restored) context, and the inputs of the quote and create calls. Pure; times are epoch ms.

import { defaultBackoffPolicy, seedFromString } from './backoff.ts';
import type { ExchangeStatus } from './domain.ts';
import type {
  CreateOrderInput,
  OrderConfig,
  OrderConfigInput,
  OrderContext,
  OrderCreateInput,
  OrderInput,
  OrderRequest,
  QuoteRequest,
} from './order-types.ts';

export const defaultOrderConfig: OrderConfig = {
  pollIntervalMs: 30_000,
  maxRequotes: 3,
  maxAttempts: 8,
  backoff: defaultBackoffPolicy,
  quoteCooldownMs: 15_000,
  fixedRateThrottleDelayMs: 20_000,
  createSettleMs: 60_000,
  parkedRecheckMs: 300_000,
  requoteLimits: { rate_id_invalid_or_expired: 1 },
};

/** The exchange recommends one GET per order every 30 to 60 seconds. */
export const pollIntervalBounds = { minMs: 30_000, maxMs: 60_000 } as const;

/** setTimeout overflows above 2^31-1 ms; longer deadlines are re-armed on the next entry (polls re-enter often). */
export const maxTimerDelayMs = 2_147_483_647;

/** The exchange status of an order waiting for its deposit. */
export const awaitingDepositStatus: ExchangeStatus = 'INITIAL';

export function resolveOrderConfig(input: OrderConfigInput | undefined): OrderConfig {
  const pollIntervalMs = Math.min(
    pollIntervalBounds.maxMs,
    Math.max(pollIntervalBounds.minMs, input?.pollIntervalMs ?? defaultOrderConfig.pollIntervalMs),
  );
  return {
    pollIntervalMs,
    maxRequotes: input?.maxRequotes ?? defaultOrderConfig.maxRequotes,
    maxAttempts: input?.maxAttempts ?? defaultOrderConfig.maxAttempts,
    backoff: { ...defaultOrderConfig.backoff, ...input?.backoff },
    quoteCooldownMs: input?.quoteCooldownMs ?? defaultOrderConfig.quoteCooldownMs,
    fixedRateThrottleDelayMs: input?.fixedRateThrottleDelayMs ?? defaultOrderConfig.fixedRateThrottleDelayMs,
    createSettleMs: input?.createSettleMs ?? defaultOrderConfig.createSettleMs,
    parkedRecheckMs: input?.parkedRecheckMs ?? defaultOrderConfig.parkedRecheckMs,
    requoteLimits: { ...defaultOrderConfig.requoteLimits, ...input?.requoteLimits },
  };
}

export function normaliseRequest(input: OrderCreateInput): OrderRequest {
  return {
    orderId: input.orderId,
    mode: input.mode,
    depositCurrency: input.depositCurrency,
    withdrawCurrency: input.withdrawCurrency,
    depositAmount: input.depositAmount ?? null,
    withdrawAmount: input.withdrawAmount ?? null,
    withdrawAddress: input.withdrawAddress,
    withdrawAddressExtraId: input.withdrawAddressExtraId ?? null,
    withdrawNetwork: input.withdrawNetwork ?? null,
    refundNetwork: input.refundNetwork ?? null,
    refundAddress: input.refundAddress ?? null,
    refundAddressExtraId: input.refundAddressExtraId ?? null,
    referralCode: input.referralCode ?? null,
    markup: input.markup ?? null,
    side: input.side ?? null,
    limitOrder: input.limitOrder ? { ttlSeconds: input.limitOrder.ttlSeconds ?? null } : null,
    preScreening: input.preScreening ? { ip: input.preScreening.ip } : null,
    userTimezone: input.userTimezone ?? null,
  };
}

export function initialOrderContext(input: OrderInput): OrderContext {
  if ('restore' in input) {
    // The stored context is taken as it was; only the clock moves and the router learns where to resume. Fields
    // added since the record was written get their initial values; a config stored before a new tunable existed
    // takes its default.
    const stored = input.restore.context;
    return {
      ...stored,
      config: resolveOrderConfig(stored.config),
      lookupScans: stored.lookupScans ?? 0,
      requotesByCode: stored.requotesByCode ?? {},
      parkedAt: stored.parkedAt ?? null,
      adoptReference: stored.adoptReference ?? null,
      now: input.now,
      resumeFrom: input.restore.resumeFrom,
    };
  }
  return {
    request: normaliseRequest(input),
    config: resolveOrderConfig(input.config),
    now: input.now,
    rngState: (input.seed ?? seedFromString(input.orderId)) >>> 0,
    resumeFrom: null,
    pendingIntent: null,
    attempt: 0,
    retryAt: null,
    requotes: 0,
    requotesByCode: {},
    createAttempts: 0,
    lookupScans: 0,
    parkedAt: null,
    adoptReference: null,
    quote: null,
    lastFailure: null,
    order: null,
    lastStatus: null,
    paymentDeadline: null,
    paymentDeadlineChecked: false,
    nextPollAt: null,
    pollAttempt: 0,
    pollStartedAt: null,
    hintPending: false,
    deposit: null,
    depositRecorded: null,
    depositAttempt: 0,
    depositRetryAt: null,
    failure: null,
    cancelReason: null,
  };
}

/** Pair name as the exchange spells it: base (withdraw, v2 `to`) then quote (deposit, v2 `from`). */
export function pairName(request: OrderRequest): string {
  return `${request.withdrawCurrency}${request.depositCurrency}`;
}

/** DeFi orders bind an actionable fixed-rate quote, CeFi fixed-rate orders a CeFi quote; limit and floating CeFi orders none. */
export function needsQuote(request: OrderRequest): boolean {
  return request.limitOrder === null && request.mode !== 'cefi';
}

export function quoteRequestOf(context: OrderContext): QuoteRequest {
  const { request } = context;
  return {
    orderId: request.orderId,
    mode: request.mode,
    pair: pairName(request),
    depositCurrency: request.depositCurrency,
    withdrawCurrency: request.withdrawCurrency,
    depositAmount: request.depositAmount,
    withdrawAmount: request.withdrawAmount,
    markup: request.markup,
    referralCode: request.referralCode,
    actionable: request.mode === 'defi',
  };
}

export function createInputOf(context: OrderContext): CreateOrderInput {
  const { request } = context;
  const intent = context.pendingIntent;
  return {
    orderId: request.orderId,
    mode: request.mode,
    attempt: intent?.kind === 'create' ? intent.attempt : context.createAttempts,
    depositCurrency: request.depositCurrency,
    withdrawCurrency: request.withdrawCurrency,
    depositAmount: request.depositAmount,
    withdrawAmount: request.withdrawAmount,
    withdrawAddress: request.withdrawAddress,
    withdrawAddressExtraId: request.withdrawAddressExtraId,
    refundAddress: request.refundAddress,
    refundAddressExtraId: request.refundAddressExtraId,
    referralCode: request.referralCode,
    markup: request.markup,
    side: request.side,
    rateId: intent?.kind === 'create' ? intent.rateId : boundRateId(context),
    isLimitOrder: request.limitOrder !== null,
    limitTtlSeconds: request.limitOrder?.ttlSeconds ?? null,
    userTimezone: request.userTimezone,
  };
}

export function boundRateId(context: OrderContext): string | null {
  return needsQuote(context.request) ? (context.quote?.rateId ?? null) : null;
}

export function isCreateInDoubt(context: OrderContext): boolean {
  return context.pendingIntent?.kind === 'create' && context.pendingIntent.outcome === 'unknown';
}

export function remainingMs(deadline: number | null, now: number): number {
  if (deadline === null) return maxTimerDelayMs;
  return Math.min(maxTimerDelayMs, Math.max(0, deadline - now));
}
