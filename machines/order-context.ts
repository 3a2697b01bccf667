// The order's context and the inputs derived from it: the tunables resolved once, the request normalised, the
// initial (or restored) context, and the inputs of the quote and create calls. Pure; times are epoch ms.

import { defaultBackoffPolicy, seedFromString } from './backoff.ts';
import type { ExchangeOrderView, ExchangeStatus } from './domain.ts';
import { paymentDeadlineOf } from './order-event-builders.ts';
import { orderRequestKeys } from './order-request.ts';
import type {
  CheckAddressInput,
  CreateOrderInput,
  FetchOrderInput,
  OrderConfig,
  OrderConfigInput,
  OrderContext,
  OrderInput,
  OrderRequest,
  PreScreenInput,
  QuoteRequest,
  SubmitDepositInput,
} from './order-types.ts';

export const defaultOrderConfig: OrderConfig = {
  pollIntervalMs: 30_000,
  webhookPollIntervalMs: 60_000,
  hintCoalesceMs: 3_000,
  hintCoalesceMaxMs: 10_000,
  maxRequotes: 3,
  maxAttempts: 8,
  backoff: defaultBackoffPolicy,
  quoteCooldownMs: 15_000,
  fixedRateThrottleDelayMs: 20_000,
  createSettleMs: 60_000,
  parkedRecheckMs: 300_000,
  parkedRecheckMaxMs: 21_600_000,
  requoteLimits: { rate_id_invalid_or_expired: 1 },
};

/** The exchange recommends one GET per order every 30 to 60 seconds. */
export const pollIntervalBounds = { minMs: 30_000, maxMs: 60_000 } as const;

/**
 * The order's routine poll interval now: spaced out to webhookPollIntervalMs while webhooks keep it informed,
 * pollIntervalMs otherwise (and for snapshots written before the adaptive interval existed).
 */
export function pollIntervalOf(context: {
  readonly config: OrderConfig;
  readonly webhooksInformed?: boolean;
}): number {
  const { pollIntervalMs, webhookPollIntervalMs } = context.config;
  return context.webhooksInformed === true ? (webhookPollIntervalMs ?? pollIntervalMs) : pollIntervalMs;
}

/**
 * The routine poll after a bulk listing confirmed the order: the longest interval the exchange recommends. The listing
 * re-confirms the order every round (LIST_RECONCILE_INTERVAL_MS, at most 60 s, 30 s by default), so this poll only
 * happens when rounds stop reaching the order (the listing fails, or the order left the statuses listed).
 */
export const listedPollIntervalMs = pollIntervalBounds.maxMs;

/** A bulk listing row as the machine receives it: the status listed and when the page was requested (epoch ms). */
export interface ListingRow {
  readonly status: string;
  readonly at: number;
}

/** A listing page requested before the last confirmation (GET or listing) cannot tell anything newer. */
export function isStaleListing(context: Pick<OrderContext, 'confirmedAt'>, at: number): boolean {
  return context.confirmedAt != null && at < context.confirmedAt;
}

/** The listing shows the status last confirmed: a confirmation, no GET needed (a stale listing: neither). */
export function listingConfirms(
  context: Pick<OrderContext, 'confirmedAt' | 'lastStatus'>,
  listing: ListingRow,
): boolean {
  return !isStaleListing(context, listing.at) && listing.status === context.lastStatus;
}

/** What a confirming listing changes: the order counts as confirmed then, and its routine poll moves out. */
export function listingConfirmation(
  context: Pick<OrderContext, 'now' | 'nextPollAt'>,
  at: number,
): Pick<OrderContext, 'now' | 'confirmedAt' | 'nextPollAt'> {
  return {
    now: Math.max(context.now, at),
    confirmedAt: at,
    nextPollAt: Math.max(context.nextPollAt ?? 0, at + listedPollIntervalMs),
  };
}

/**
 * What a confirming GET's answer changes (not one behind the status already confirmed): the exchange order as seen,
 * when it was confirmed, its next routine poll (the shorter interval again when the answer shows a change no webhook
 * announced: webhooks are not keeping the order informed), and the poll's bookkeeping cleared. The machine's
 * observeOrder, and the runtime's confirmation of a resting order (confirmedByPoll), both take it from here.
 */
export function observation(
  context: OrderContext,
  observed: { readonly order: ExchangeOrderView; readonly at: number },
): Pick<
  OrderContext,
  | 'now'
  | 'order'
  | 'lastStatus'
  | 'paymentDeadline'
  | 'pollStartedAt'
  | 'pollAttempt'
  | 'hintPending'
  | 'webhooksInformed'
  | 'nextPollAt'
  | 'confirmedAt'
> {
  const { order, at } = observed;
  const unannounced = context.lastStatus !== order.status && context.hintedStatus !== order.status;
  const webhooksInformed = unannounced ? false : context.webhooksInformed === true;
  return {
    now: at,
    order,
    lastStatus: order.status,
    paymentDeadline: paymentDeadlineOf(order) ?? context.paymentDeadline,
    pollStartedAt: null,
    pollAttempt: 0,
    hintPending: false,
    webhooksInformed,
    nextPollAt: at + pollIntervalOf({ config: context.config, webhooksInformed }),
    confirmedAt: Math.max(at, context.confirmedAt ?? at),
  };
}

/** The bounds of hint coalescing (OrderConfigInput.hintCoalesceMs and hintCoalesceMaxMs). */
export const hintCoalesceBounds = { maxMs: 10_000, maxWaitMs: 30_000 } as const;

/** How long a hint naming an open status waits for the hints after it, and at most (0: not at all). */
export function hintCoalescingOf(config: OrderConfig): { readonly quietMs: number; readonly maxMs: number } {
  const quietMs = config.hintCoalesceMs ?? defaultOrderConfig.hintCoalesceMs ?? 0;
  return {
    quietMs,
    maxMs: Math.max(quietMs, config.hintCoalesceMaxMs ?? defaultOrderConfig.hintCoalesceMaxMs ?? 0),
  };
}

/** setTimeout overflows above 2^31-1 ms; longer deadlines are re-armed on the next entry (polls re-enter often). */
export const maxTimerDelayMs = 2_147_483_647;

/** The exchange status of an order waiting for its deposit. */
export const awaitingDepositStatus: ExchangeStatus = 'INITIAL';

/**
 * The restore router of the open order's deposit region (`open.deposit.resuming`), as data: each guard in turn, the
 * state it leads to, and the state it falls back to. The machine builds its router and its guards from these, and
 * passivation asks the same router where a resting order would come back to (depositResumeTarget).
 */
export const depositResumeGuards = {
  depositRecorded: ({ context }: { readonly context: OrderContext }) => context.depositRecorded !== null,
  depositRetryScheduled: ({ context }: { readonly context: OrderContext }) =>
    context.deposit !== null && context.depositRetryAt !== null,
  depositPending: ({ context }: { readonly context: OrderContext }) => context.deposit !== null,
} as const;
export const depositResumeRoutes = [
  { guard: 'depositRecorded', target: 'submitted' },
  { guard: 'depositRetryScheduled', target: 'submitting.waiting' },
  // A PATCH that may have gone out is simply repeated: "already exists" counts as success.
  { guard: 'depositPending', target: 'submitting.calling' },
] as const satisfies ReadonlyArray<{ guard: keyof typeof depositResumeGuards; target: string }>;
export const depositResumeFallback = 'awaiting';
export type DepositResumeTarget =
  (typeof depositResumeRoutes)[number]['target'] | typeof depositResumeFallback;

/** Where the deposit region's restore router leads an order with this context (a state under `open.deposit`). */
export function depositResumeTarget(context: OrderContext): DepositResumeTarget {
  for (const route of depositResumeRoutes)
    if (depositResumeGuards[route.guard]({ context })) return route.target;
  return depositResumeFallback;
}

/** The exchange region's router (`open.exchange.resuming`): a poll in flight is made again. */
export const exchangeResumeGuards = {
  pollInFlight: ({ context }: { readonly context: OrderContext }) => context.pollStartedAt !== null,
} as const;

/** Where the exchange region's restore router leads an order with this context (a state under `open.exchange`). */
export function exchangeResumeTarget(context: OrderContext): 'polling' | 'monitoring' {
  return exchangeResumeGuards.pollInFlight({ context }) ? 'polling' : 'monitoring';
}

export function resolveOrderConfig(input: OrderConfigInput | undefined): OrderConfig {
  const pollIntervalMs = Math.min(
    pollIntervalBounds.maxMs,
    Math.max(pollIntervalBounds.minMs, input?.pollIntervalMs ?? defaultOrderConfig.pollIntervalMs),
  );
  const webhookPollIntervalMs = Math.min(
    pollIntervalBounds.maxMs,
    Math.max(pollIntervalMs, input?.webhookPollIntervalMs ?? defaultOrderConfig.webhookPollIntervalMs ?? 0),
  );
  const hintCoalesceMs = Math.min(
    hintCoalesceBounds.maxMs,
    Math.max(0, input?.hintCoalesceMs ?? defaultOrderConfig.hintCoalesceMs ?? 0),
  );
  const hintCoalesceMaxMs = Math.min(
    hintCoalesceBounds.maxWaitMs,
    Math.max(hintCoalesceMs, input?.hintCoalesceMaxMs ?? defaultOrderConfig.hintCoalesceMaxMs ?? 0),
  );
  const createSettleMs = input?.createSettleMs ?? defaultOrderConfig.createSettleMs;
  const parkedRecheckMs = Math.max(
    createSettleMs,
    input?.parkedRecheckMs ?? defaultOrderConfig.parkedRecheckMs,
  );
  return {
    pollIntervalMs,
    webhookPollIntervalMs,
    hintCoalesceMs,
    hintCoalesceMaxMs,
    maxRequotes: input?.maxRequotes ?? defaultOrderConfig.maxRequotes,
    maxAttempts: input?.maxAttempts ?? defaultOrderConfig.maxAttempts,
    backoff: { ...defaultOrderConfig.backoff, ...input?.backoff },
    quoteCooldownMs: input?.quoteCooldownMs ?? defaultOrderConfig.quoteCooldownMs,
    fixedRateThrottleDelayMs: input?.fixedRateThrottleDelayMs ?? defaultOrderConfig.fixedRateThrottleDelayMs,
    createSettleMs,
    // A parked order re-checks by repeating the POST (DeFi) or by a lookup (CeFi): never sooner after the failure
    // that parked it than a doubt's own check (scheduleDoubtCheck), or the repeat could overlap the POST in doubt.
    parkedRecheckMs,
    parkedRecheckMaxMs: Math.max(
      parkedRecheckMs,
      input?.parkedRecheckMaxMs ?? defaultOrderConfig.parkedRecheckMaxMs ?? 0,
    ),
    requoteLimits: { ...defaultOrderConfig.requoteLimits, ...input?.requoteLimits },
  };
}

/** The request's fields from an input (or a stored request): each field of the schema, absent as null. */
export function requestOf(fields: object): OrderRequest {
  const given = fields as Readonly<Record<string, unknown>>;
  return Object.fromEntries(orderRequestKeys.map((key) => [key, given[key] ?? null])) as OrderRequest;
}

export function initialOrderContext(input: OrderInput): OrderContext {
  if ('restore' in input) {
    // The stored context is taken as it was; only the clock moves and the router learns where to resume. Fields
    // added since the record was written get their initial values; a config stored before a new tunable existed
    // takes its default.
    const stored = input.restore.context;
    return {
      ...stored,
      request: { ...stored.request, ...requestOf(stored.request) },
      config: resolveOrderConfig(stored.config),
      lookupScans: stored.lookupScans ?? 0,
      requotesByCode: stored.requotesByCode ?? {},
      parkedAt: stored.parkedAt ?? null,
      parkedRechecks: stored.parkedRechecks ?? 0,
      lookupUnreachableAt: stored.lookupUnreachableAt ?? null,
      adoptReference: stored.adoptReference ?? null,
      confirmedAt: stored.confirmedAt ?? null,
      queuedHintsMayWait: stored.queuedHintsMayWait ?? false,
      hintDueAt: stored.hintDueAt ?? null,
      hintSince: stored.hintSince ?? null,
      depositRejected: stored.depositRejected ?? null,
      now: input.now,
      resumeFrom: input.restore.resumeFrom,
    };
  }
  return {
    request: requestOf(input),
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
    parkedRechecks: 0,
    lookupUnreachableAt: null,
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
    queuedHintsMayWait: false,
    hintDueAt: null,
    hintSince: null,
    webhooksInformed: false,
    hintedStatus: null,
    confirmedAt: null,
    deposit: null,
    depositRecorded: null,
    depositAttempt: 0,
    depositRetryAt: null,
    depositRejected: null,
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
    ...orderRefOf(context),
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

/** The order every call is about. */
function orderRefOf(context: OrderContext): {
  readonly orderId: string;
  readonly mode: OrderRequest['mode'];
} {
  return { orderId: context.request.orderId, mode: context.request.mode };
}

export function checkAddressInputOf(context: OrderContext): CheckAddressInput {
  const { request } = context;
  return {
    ...orderRefOf(context),
    depositCurrency: request.depositCurrency,
    withdrawCurrency: request.withdrawCurrency,
    withdrawAddress: request.withdrawAddress,
    withdrawNetwork: request.withdrawNetwork,
    refundAddress: request.refundAddress,
    refundNetwork: request.refundNetwork,
  };
}

/** Exactly one of the two amounts is sent. */
export function preScreenInputOf(context: OrderContext): PreScreenInput {
  const { request } = context;
  return {
    ...orderRefOf(context),
    ip: request.preScreening?.ip ?? '',
    pair: pairName(request),
    depositAmount: request.depositAmount,
    withdrawAmount: request.depositAmount === null ? request.withdrawAmount : null,
  };
}

export function submitDepositInputOf(context: OrderContext): SubmitDepositInput {
  return {
    ...fetchOrderInputOf(context),
    txHash: context.deposit?.txHash ?? '',
  };
}

export function fetchOrderInputOf(context: OrderContext): FetchOrderInput {
  return { ...orderRefOf(context), uniqueReference: context.order?.uniqueReference ?? '' };
}

export function createInputOf(context: OrderContext): CreateOrderInput {
  const {
    limitOrder,
    withdrawNetwork: _withdrawNetwork,
    refundNetwork: _refundNetwork,
    preScreening: _preScreening,
    ...sent
  } = context.request;
  const intent = context.pendingIntent;
  const create = intent?.kind === 'create' ? intent : null;
  return {
    ...sent,
    attempt: create ? create.attempt : context.createAttempts,
    rateId: create ? create.rateId : boundRateId(context),
    isLimitOrder: limitOrder !== null,
    limitTtlSeconds: limitOrder?.ttlSeconds ?? null,
    // What a doubt knows, only when it knows something (absent reads as false, none, none).
    ...(create?.outcome === 'unknown' ? { repeatsDoubt: true } : {}),
    ...(create?.reference != null ? { knownReference: create.reference } : {}),
    ...(create?.foreign !== undefined && create.foreign.length > 0
      ? { foreignReferences: create.foreign }
      : {}),
  };
}

/** Exchange orders of other orders a doubt remembers, at most (the newest kept): siblings are few. */
export const maxForeignReferences = 16;

/**
 * When a parked order re-checks next, from `at`: parkedRecheckMs after it was parked, then twice the wait after
 * each re-check that changed nothing, up to parkedRecheckMaxMs. No jitter: the schedule follows from context alone,
 * so a restored order keeps it (parkedAt spreads parked orders out).
 */
export function parkedRecheckAt(
  context: Pick<OrderContext, 'config' | 'parkedRechecks'>,
  at: number,
): number {
  const { parkedRecheckMs } = context.config;
  const maxMs = Math.max(parkedRecheckMs, context.config.parkedRecheckMaxMs ?? parkedRecheckMs);
  const grown = parkedRecheckMs * 2 ** Math.min(40, context.parkedRechecks ?? 0);
  return at + Math.min(maxMs, grown);
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
