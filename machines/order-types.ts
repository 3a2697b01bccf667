// The order machine's contract with the runtime: its input, context, accepted events, the actors the runtime
// must provide (with their input and output types); the domain events it emits are in order-events.ts.
// Everything here is JSON-serialisable; times are epoch milliseconds stamped by the runtime (the runtime is the clock).

import type { BackoffPolicy } from './backoff.ts';
import type { ExchangeFailure, ExchangeOrderView, TradingMode } from './domain.ts';
import type { CancelReason } from './order-events.ts';
import type { OrderRequestFields } from './order-request.ts';

// ---------------------------------------------------------------------------------------------------------------
// Input

/** Tunables of one order; every field is optional in the input and resolved once into context. */
export interface OrderConfigInput {
  /** Poll interval of GET /orders/{ref}/; default 30 000, clamped to 30 000–60 000 (the exchange's recommendation). */
  readonly pollIntervalMs?: number;
  /**
   * Poll interval while webhooks keep the order informed (a webhook named its status, and no poll has since found a
   * change no webhook announced); default 60 000, clamped to pollIntervalMs–60 000. Webhooks stay hints: they lead
   * to a confirming GET (see hintCoalesceMs); only the routine poll between them is spaced out.
   */
  readonly webhookPollIntervalMs?: number;
  /**
   * Hints that arrive together share one confirming GET: a webhook naming an open status that is ahead of the one
   * confirmed waits until no other hint came for this long (default 3 000, 0 to 10 000; 0: every such hint is
   * confirmed at once). A hint naming an end (COMPLETED, REFUNDED, CANCELED), an unknown status, or no status is
   * confirmed at once; one naming a status already confirmed, or behind it, needs no GET.
   */
  readonly hintCoalesceMs?: number;
  /** The longest a hint waits for the hints after it (default 10 000; hintCoalesceMs to 30 000). */
  readonly hintCoalesceMaxMs?: number;
  /** How many times a create may go back for a fresh quote before the order fails; default 3. */
  readonly maxRequotes?: number;
  /** Consecutive retryable failures of one step before the exchange order exists; default 8. */
  readonly maxAttempts?: number;
  readonly backoff?: Partial<BackoffPolicy>;
  /** Cooldown of an identical actionable quote request (same pair and amount); default 15 000. */
  readonly quoteCooldownMs?: number;
  /** Wait after a fixed-rate quote throttle (429) that came without Retry-After; default 20 000. */
  readonly fixedRateThrottleDelayMs?: number;
  /**
   * How long after a create fell into doubt (or after an order in doubt was taken over from another replica) its
   * lookup may conclude "not created", and its DeFi repeat may go out: covers a POST still in flight, the exchange's
   * create timeout and the lease TTL. Default 60 000.
   */
  readonly createSettleMs?: number;
  /**
   * When a parked order first re-checks the evidence (a DeFi repeat with the same rate_id, a CeFi scan); default
   * 300 000, never below createSettleMs (a re-check must not overlap the POST in doubt). Each re-check that changes
   * nothing doubles the wait, up to parkedRecheckMaxMs.
   */
  readonly parkedRecheckMs?: number;
  /** The longest wait between two re-checks of a parked order; default 21 600 000 (6 h). */
  readonly parkedRecheckMaxMs?: number;
  /**
   * Fresh quotes allowed per failure code, within maxRequotes. Default `{ rate_id_invalid_or_expired: 1 }`: the
   * interface document says to retry that message once with a fresh quote (docs/exchange-api.md, "Errors").
   */
  readonly requoteLimits?: Readonly<Record<string, number>>;
}

export interface OrderConfig {
  readonly pollIntervalMs: number;
  /** Absent in snapshots written before it existed: pollIntervalMs then. */
  readonly webhookPollIntervalMs?: number;
  /** Absent in snapshots written before hints were coalesced: the defaults then. */
  readonly hintCoalesceMs?: number;
  readonly hintCoalesceMaxMs?: number;
  readonly maxRequotes: number;
  readonly maxAttempts: number;
  readonly backoff: BackoffPolicy;
  readonly quoteCooldownMs: number;
  readonly fixedRateThrottleDelayMs: number;
  readonly createSettleMs: number;
  readonly parkedRecheckMs: number;
  /** Absent in snapshots written before re-checks backed off: the default then. */
  readonly parkedRecheckMaxMs?: number;
  readonly requoteLimits: Readonly<Record<string, number>>;
}

/** Input for a new order: the order.create command's fields in camelCase, plus the runtime's clock reading. */
export interface OrderCreateInput extends OrderRequestFields {
  readonly orderId: string;
  /** Epoch ms at which the command was taken. */
  readonly now: number;
  /** Seed of the jitter PRNG (uint32). Default: a hash of orderId. */
  readonly seed?: number;
  readonly config?: OrderConfigInput;
}

type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
/** Every field present: an optional one absent is null, so that context stays plain JSON. */
type AbsentAsNull<T> = {
  readonly [K in keyof T]-?: K extends OptionalKeys<T> ? Exclude<T[K], undefined> | null : T[K];
};

/**
 * The order as it was asked for, normalised (order-context.ts: requestOf); a field added since a record was stored
 * reads as null.
 */
export type OrderRequest = { readonly orderId: string } & AbsentAsNull<OrderRequestFields>;

/** Input for an order restored from its persisted form (see order-persistence.ts: restoreInput). */
export interface OrderRestoreInput {
  readonly restore: {
    /** The state the order was in when last stored, as a resume key ("quoting.coolingDown", "open", ...). */
    readonly resumeFrom: string;
    readonly context: OrderContext;
  };
  /** Epoch ms at which the order is restored: deadlines are re-armed with `deadline - now`. */
  readonly now: number;
}

export type OrderInput = OrderCreateInput | OrderRestoreInput;

// ---------------------------------------------------------------------------------------------------------------
// Context

/** A quote bound (or to be bound) to the order. */
export interface QuoteView {
  readonly rateId: string;
  readonly rate: string;
  /** Epoch ms at which the quote expires. */
  readonly expiresAt: number;
  readonly depositAmount: string | null;
  readonly withdrawAmount: string | null;
  readonly obtainedAt: number;
}

/**
 * The one side effect in flight before the exchange order exists, recorded on entry to the state that calls it
 * (so the persisted form written before the call says what may have happened).
 * `create.outcome` is 'unknown' once a create may or may not have taken effect: it must be verified
 * (CeFi: findExistingOrder; DeFi: the same POST with the same rate_id, which the exchange answers with 200 reuse).
 */
export type PendingIntent =
  | { readonly kind: 'pre_screen'; readonly startedAt: number }
  | { readonly kind: 'acquire_quote_slot'; readonly startedAt: number }
  | { readonly kind: 'request_quote'; readonly startedAt: number }
  | {
      readonly kind: 'create';
      /** 1-based count of POST /orders/ attempts for this order. */
      readonly attempt: number;
      readonly rateId: string | null;
      readonly startedAt: number;
      readonly outcome: 'in_flight' | 'unknown';
      /**
       * The exchange order a POST of this doubt was answered with, when the create could not finish with it (its
       * claim or its confirming GET failed, or another order holds it): the lookup asks for it first, and a doubt
       * that knows one never concludes "not created". Absent in older snapshots.
       */
      readonly reference?: string | null;
      /** Exchange orders an answer named that belong to other orders: never this order's. Absent: none. */
      readonly foreign?: readonly string[];
    };

/** A deposit transaction the client submitted; kept until the exchange has recorded it. */
export interface DepositIntent {
  readonly txHash: string;
  readonly acceptedAt: number;
  /** Set when a PATCH is (about to be) in flight. */
  readonly startedAt: number | null;
  /** The last failure of its PATCH, while a retry is scheduled (absent in older snapshots). */
  readonly failure?: { readonly code: string; readonly message: string } | null;
}

/** A deposit the exchange refused for good: its hash, when it was accepted, and the refusal. */
export interface RejectedDeposit {
  readonly txHash: string;
  readonly acceptedAt: number;
  readonly code: string;
  readonly message: string;
}

export interface FailureRecord {
  readonly action: ExchangeFailure['action'];
  readonly code: string;
  readonly message: string;
  readonly at: number;
}

export type OrderFailureReason =
  | 'compliance_rejected'
  | 'requote_limit_reached'
  | 'retries_exhausted'
  | 'mode_mismatch'
  | 'rejected'
  | 'unrestorable'
  | 'abandoned_by_operator'
  | 'address_pairing_rejected';

export interface OrderFailure {
  readonly reason: OrderFailureReason;
  readonly code: string;
  readonly message: string;
}

export interface OrderContext {
  readonly request: OrderRequest;
  readonly config: OrderConfig;
  /** The runtime's latest clock reading (event `at`, actor output `at`, or a deadline that fired). */
  readonly now: number;
  /** PRNG state of the backoff jitter (mulberry32); advances with every jittered delay. */
  readonly rngState: number;
  /** Set only while the `restoring` router picks the state to resume; the stored state's resume key. */
  readonly resumeFrom: string | null;

  // before the exchange order exists
  readonly pendingIntent: PendingIntent | null;
  /** Consecutive retryable failures of the current step. */
  readonly attempt: number;
  /** Absolute end of the current wait (backoff, throttle or quote cooldown). */
  readonly retryAt: number | null;
  readonly requotes: number;
  /** Fresh quotes taken, per failure code (see OrderConfig.requoteLimits). */
  readonly requotesByCode: Readonly<Record<string, number>>;
  readonly createAttempts: number;
  /** GET /orders/ scans made for the create in doubt. */
  readonly lookupScans: number;
  /** When the order was parked (its create's outcome could not be established), else null. */
  readonly parkedAt: number | null;
  /** Re-checks made since the order was parked: each doubles the wait before the next. Absent in older snapshots. */
  readonly parkedRechecks?: number;
  /**
   * When the lookup of the parked create was found never able to finish (its window is past the page cap): it is
   * not re-checked any more and waits for order.settle. Absent or null otherwise.
   */
  readonly lookupUnreachableAt?: number | null;
  /** The unique_reference an operator asked a parked order to adopt (order.settle), while it is being checked. */
  readonly adoptReference: string | null;
  readonly quote: QuoteView | null;
  readonly lastFailure: FailureRecord | null;

  // once the exchange order exists
  readonly order: ExchangeOrderView | null;
  /** The exchange status last published (status_changed is emitted only when a GET shows another one). */
  readonly lastStatus: string | null;
  /** Absolute payment deadline (fixed_rate_deadline, else created_on + payment_window_minutes). */
  readonly paymentDeadline: number | null;
  readonly paymentDeadlineChecked: boolean;
  readonly nextPollAt: number | null;
  readonly pollAttempt: number;
  /** A poll in flight (set on entry to polling). */
  readonly pollStartedAt: number | null;
  /** A webhook hint arrived while a poll was in flight: poll again when it returns (unless its answer settles it). */
  readonly hintPending: boolean;
  /**
   * Every hint queued while the poll was in flight named an open status (hintCoalesceMs): if the answer does not
   * reach it, its GET waits like a hint in monitoring. Absent in older snapshots (false: poll again at once).
   */
  readonly queuedHintsMayWait?: boolean;
  /** When the GET confirming hints that wait is due (hintCoalesceMs), null when none waits. Absent in older snapshots. */
  readonly hintDueAt?: number | null;
  /** When the first of the hints that wait arrived (bounds the wait by hintCoalesceMaxMs). */
  readonly hintSince?: number | null;
  /**
   * Webhooks keep this order informed: one named its status, and no poll has since found a change no webhook
   * announced. Polls are then spaced by webhookPollIntervalMs. Absent in older snapshots (false).
   */
  readonly webhooksInformed?: boolean;
  /** The status the latest webhook hint named (unconfirmed; only compared with what a GET shows). */
  readonly hintedStatus?: string | null;
  /**
   * When lastStatus was last confirmed: by a GET (its answer's clock) or by a listing page that showed the same
   * status (the page's request time). A listing older than this is stale. Absent in older snapshots (null).
   */
  readonly confirmedAt?: number | null;
  readonly deposit: DepositIntent | null;
  readonly depositRecorded: { readonly txHash: string; readonly alreadyRecorded: boolean } | null;
  readonly depositAttempt: number;
  readonly depositRetryAt: number | null;
  /**
   * The last deposit the exchange refused for good (order.deposit_rejected), until a deposit is recorded: an end
   * meanwhile reports it (order-deposits.ts). Absent in older snapshots (none).
   */
  readonly depositRejected?: RejectedDeposit | null;

  // outcome
  readonly failure: OrderFailure | null;
  readonly cancelReason: CancelReason | null;
}

// ---------------------------------------------------------------------------------------------------------------
// Events accepted from the runtime (commands and webhook hints). Every one carries the runtime's clock reading.

export interface SubmitDepositEvent {
  readonly type: 'SUBMIT_DEPOSIT';
  readonly txHash: string;
  readonly at: number;
}
export interface CancelEvent {
  readonly type: 'CANCEL';
  readonly at: number;
}
/** A webhook arrived for this order. Only triggers an immediate GET: its status is never believed. */
export interface WebhookHintEvent {
  readonly type: 'WEBHOOK_HINT';
  readonly status?: string;
  readonly at: number;
}
/**
 * The order appeared in a page of GET /orders/?status=<code> (CeFi orders only) requested at `at`. The same status
 * as the one last confirmed counts as a confirmation (the routine poll moves back); another one is only a hint, like
 * a webhook's: the machine GETs the order and believes the GET alone. Older than the last confirmation: ignored.
 */
export interface ListedEvent {
  readonly type: 'LISTED';
  readonly status: string;
  readonly at: number;
}
/**
 * The runtime made the order's routine poll (GET /orders/{unique_reference}/) while the order rested without an
 * actor (passivated), and the answer had news: taken in `monitoring` exactly as the answer to the machine's own poll
 * (the only way a status is believed). An answer older than the last confirmation is ignored.
 */
export interface PolledEvent {
  readonly type: 'POLLED';
  readonly output: FetchOrderOutput;
}
/** The runtime's poll of a resting order (see PolledEvent) failed: taken as a failure of the machine's own poll. */
export interface PollFailedEvent {
  readonly type: 'POLL_FAILED';
  readonly error: unknown;
}
/** An operator's decision about a parked order (command order.settle). */
export type SettleEvent =
  | {
      readonly type: 'SETTLE';
      readonly resolution: 'adopt';
      readonly uniqueReference: string;
      readonly at: number;
    }
  | { readonly type: 'SETTLE'; readonly resolution: 'abandon'; readonly at: number };
export type OrderEvent =
  | SubmitDepositEvent
  | CancelEvent
  | WebhookHintEvent
  | ListedEvent
  | PolledEvent
  | PollFailedEvent
  | SettleEvent;

// ---------------------------------------------------------------------------------------------------------------
// Actors the runtime provides (machine.provide({ actors })). Each throws ExchangeFailure (machines/domain.ts),
// optionally stamped with `at`; anything else thrown is treated as a retryable unexpected error.

/** An ExchangeFailure as thrown by the runtime's actors; `at` is the runtime's clock when the call failed. */
export type StampedExchangeFailure = ExchangeFailure & { readonly at?: number };

/** The quote request; two requests are identical (share one cooldown) when mode, pair and amounts are equal. */
export interface QuoteRequest {
  readonly orderId: string;
  readonly mode: TradingMode;
  /** Pair name: withdraw currency (base, v2 `to`) followed by deposit currency (quote, v2 `from`). */
  readonly pair: string;
  readonly depositCurrency: string;
  readonly withdrawCurrency: string;
  readonly depositAmount: string | null;
  readonly withdrawAmount: string | null;
  readonly markup: number | null;
  readonly referralCode: string | null;
  /** DeFi: GET /rate/?actionable_quote=true. */
  readonly actionable: boolean;
}

export interface AcquireQuoteSlotInput extends QuoteRequest {
  /** How long a granted slot blocks identical requests (every replica, every order). */
  readonly cooldownMs: number;
}
export type AcquireQuoteSlotOutput =
  | { readonly granted: true; readonly at: number }
  | { readonly granted: false; readonly retryAt: number; readonly at: number };

export type RequestQuoteInput = QuoteRequest;
export interface RequestQuoteOutput {
  readonly rateId: string;
  readonly rate: string;
  /** Epoch ms (expiration_time_unix * 1000). */
  readonly expiresAt: number;
  readonly depositAmount?: string;
  readonly withdrawAmount?: string;
  readonly minDepositAmount?: string;
  readonly maxDepositAmount?: string;
  readonly minWithdrawAmount?: string;
  readonly maxWithdrawAmount?: string;
  readonly at: number;
}

/** Before any quote: is each address well formed for the network it is said to be on, and is the currency there? */
export interface CheckAddressInput {
  readonly orderId: string;
  readonly mode: TradingMode;
  readonly depositCurrency: string;
  readonly withdrawCurrency: string;
  readonly withdrawAddress: string;
  readonly withdrawNetwork: string | null;
  readonly refundAddress: string | null;
  readonly refundNetwork: string | null;
}
export type CheckAddressOutput =
  | { readonly ok: true; readonly at: number }
  | { readonly ok: false; readonly code: string; readonly message: string; readonly at: number };

export interface PreScreenInput {
  readonly orderId: string;
  readonly mode: TradingMode;
  readonly ip: string;
  readonly pair: string;
  /** Exactly one of the two amounts is set. */
  readonly depositAmount: string | null;
  readonly withdrawAmount: string | null;
}
export interface PreScreenOutput {
  readonly status: 'success' | 'failed';
  readonly message: string;
  readonly at: number;
}

/** Fields of the request the create does not send: they are used before it (checks, pre-screening) or mapped below. */
type NotSentOnCreate = 'withdrawNetwork' | 'refundNetwork' | 'limitOrder' | 'preScreening';
/** The create: the request's fields (the runtime maps them onto POST /orders/ in one function), and the attempt. */
export type CreateOrderInput = Omit<OrderRequest, NotSentOnCreate> & {
  /** 1-based POST attempt (a DeFi repeat with the same rateId is answered with 200 reuse when it had succeeded). */
  readonly attempt: number;
  /** Absent (null) for limit orders and floating CeFi orders. */
  readonly rateId: string | null;
  readonly isLimitOrder: boolean;
  readonly limitTtlSeconds: number | null;
  /**
   * An earlier POST of this order with this rate_id may have taken effect: a 200 reuse may be this order's own.
   * Otherwise a reuse names another order's exchange order. Absent: false.
   */
  readonly repeatsDoubt?: boolean;
  /** The exchange order a POST of this doubt was answered with (PendingIntent.reference). Absent: none. */
  readonly knownReference?: string | null;
  /** Exchange orders known to belong to other orders (PendingIntent.foreign). Absent: none. */
  readonly foreignReferences?: readonly string[];
};
export interface CreateOrderOutput {
  readonly order: ExchangeOrderView;
  /** true when the exchange answered 200: an existing DeFi order was reused idempotently. */
  readonly reused: boolean;
  readonly at: number;
}

/** For a create whose outcome is unknown (CeFi): look for the order that request may have created. */
export interface FindExistingOrderInput {
  readonly create: CreateOrderInput;
  /** When the create in doubt was started (the order, if any, was created at or after it). */
  readonly since: number;
  /** A re-check of a parked order: it runs at low priority, within the parked lookups' share of the budget. */
  readonly parked?: boolean;
}
export interface FindExistingOrderOutput {
  /** The exchange order found and claimed; null: none (see recheckAt). */
  readonly order: ExchangeOrderView | null;
  /**
   * Nothing can be concluded yet: another order's POST of the same pair and address is out, and a candidate may be
   * what it is about to claim. Look again at this time (epoch ms). Absent: `order` is the conclusion.
   */
  readonly recheckAt?: number;
  readonly at: number;
}

/** An operator named the exchange order of a parked order: confirm it matches and that no other order owns it. */
export interface AdoptOrderInput {
  readonly create: CreateOrderInput;
  readonly uniqueReference: string;
}
export interface AdoptOrderOutput {
  readonly order: ExchangeOrderView;
  readonly at: number;
}

export interface SubmitDepositInput {
  readonly orderId: string;
  readonly mode: TradingMode;
  readonly uniqueReference: string;
  readonly txHash: string;
}
export interface SubmitDepositOutput {
  /** The exchange already knew this hash ("... already exists"): success all the same. */
  readonly alreadyRecorded: boolean;
  readonly at: number;
}

export interface FetchOrderInput {
  readonly orderId: string;
  readonly mode: TradingMode;
  readonly uniqueReference: string;
}
export interface FetchOrderOutput {
  readonly order: ExchangeOrderView;
  readonly at: number;
}

/** An actor's input and output types, declared by a value (only its type is used). */
const actorTypes = <Input, Output>() => ({}) as { readonly input: Input; readonly output: Output };

/** Every actor the runtime must provide, with its input and output: the one list (order-actors.ts builds on it). */
export const orderActorTypes = {
  checkAddress: actorTypes<CheckAddressInput, CheckAddressOutput>(),
  acquireQuoteSlot: actorTypes<AcquireQuoteSlotInput, AcquireQuoteSlotOutput>(),
  requestQuote: actorTypes<RequestQuoteInput, RequestQuoteOutput>(),
  preScreen: actorTypes<PreScreenInput, PreScreenOutput>(),
  createOrder: actorTypes<CreateOrderInput, CreateOrderOutput>(),
  findExistingOrder: actorTypes<FindExistingOrderInput, FindExistingOrderOutput>(),
  adoptOrder: actorTypes<AdoptOrderInput, AdoptOrderOutput>(),
  submitDeposit: actorTypes<SubmitDepositInput, SubmitDepositOutput>(),
  fetchOrder: actorTypes<FetchOrderInput, FetchOrderOutput>(),
};
export type OrderActorTypes = typeof orderActorTypes;
export type OrderActorName = keyof OrderActorTypes;
export const orderActorNames = Object.keys(orderActorTypes) as readonly OrderActorName[];

/**
 * What the runtime implements, one async function per actor (see order-actors.ts).
 * `signal` aborts when the machine leaves the state that made the call.
 */
export type OrderActorFunctions = {
  [K in OrderActorName]: (
    input: OrderActorTypes[K]['input'],
    signal: AbortSignal,
  ) => Promise<OrderActorTypes[K]['output']>;
};
