// One machine per exchange order: pre-screening, quoting (with a cooldown shared by identical requests), creating,
// then, once the exchange order exists, deposit submission and monitoring in parallel until a confirming GET.
// Invariants: pure (the runtime provides every actor and is the clock); every deadline is an absolute epoch-ms value in
// context and every `after` delay is `deadline - context.now`, so a restored machine re-arms its timers with the time
// that remains (statelyai/xstate#5331: pending `after` timers are not restored); every side effect records its intent
// in context on entry to the state that performs it, before the call starts.

import { and, assign, emit, enqueueActions, not, setup } from 'xstate';
import {
  boundedCode,
  boundedMessage,
  createCodes,
  exchangeStatusRank,
  isExchangeFailure,
  movesBackwards,
  terminalExchangeStatuses,
} from './domain.ts';
import type { ExchangeFailure, ExchangeOrderView, ExchangeStatus, FailureAction } from './domain.ts';
import {
  canRequote,
  failureReasonOf,
  failureRecordOf,
  hasAttemptsLeft,
  isRetryable,
  mayHaveTakenEffect,
  needsRequote,
  nextTry,
} from './failure-policy.ts';
import { orderActorsOf, placeholderOrderActors } from './order-actors.ts';
import {
  awaitingDepositStatus,
  boundRateId,
  checkAddressInputOf,
  createInputOf,
  depositResumeFallback,
  depositResumeGuards,
  depositResumeRoutes,
  exchangeResumeGuards,
  fetchOrderInputOf,
  hintCoalescingOf,
  initialOrderContext,
  isCreateInDoubt,
  maxForeignReferences,
  needsQuote,
  parkedRecheckAt,
  preScreenInputOf,
  quoteRequestOf,
  remainingMs,
  submitDepositInputOf,
  isStaleListing,
  listingConfirmation,
  listingConfirms,
  observation,
  pollIntervalOf,
  type ListingRow,
} from './order-context.ts';
import { unrecordedDepositField, unrecordedDepositOf } from './order-deposits.ts';
import { createdEventOf, parkedEventOf, paymentDeadlineOf, quotedEventOf } from './order-event-builders.ts';
import type { OrderDomainEvent } from './order-events.ts';
import { resumableStates } from './resume-keys.ts';
import type { ResumeKey } from './resume-keys.ts';
import type {
  AcquireQuoteSlotInput,
  AcquireQuoteSlotOutput,
  AdoptOrderInput,
  CheckAddressOutput,
  FindExistingOrderInput,
  FindExistingOrderOutput,
  OrderActorFunctions,
  OrderContext,
  OrderEvent,
  OrderInput,
  PreScreenOutput,
  RequestQuoteInput,
  RequestQuoteOutput,
  ListedEvent,
  SettleEvent,
  WebhookHintEvent,
} from './order-types.ts';

/** `status` is `reference` or a known status behind it: a GET that showed `reference` showed it too. */
function reachedBy(status: string, reference: string): boolean {
  return status === reference || movesBackwards(reference, status);
}

/** A hint naming the status already confirmed, or one behind it: its GET could tell nothing new. */
function hintAlreadyConfirmed(context: OrderContext, status: string | undefined): boolean {
  return status !== undefined && context.lastStatus !== null && reachedBy(status, context.lastStatus);
}

/**
 * A hint whose GET may wait for the hints after it (hintCoalesceMs): it names a known open status. An end, an
 * unknown status or a nudge without a status is confirmed at once.
 */
function hintMayWait(context: OrderContext, status: string | undefined): boolean {
  return (
    status !== undefined &&
    hintCoalescingOf(context.config).quietMs > 0 &&
    exchangeStatusRank(status) !== undefined &&
    !(terminalExchangeStatuses as readonly string[]).includes(status)
  );
}

/** Of the status hinted so far and a new one, the one further along (the new one when they cannot be compared). */
function furthestHint(hinted: string | null | undefined, status: string): string {
  return hinted != null && movesBackwards(hinted, status) ? hinted : status;
}

/**
 * What a hint naming `status` notes: the status (never believed, compared with what a GET shows) and that webhooks
 * keep the order informed; nothing for a nudge without a status. Hints gathering for one GET (`gathering`) keep the
 * furthest status named.
 */
function notedHint(
  context: OrderContext,
  status: string | undefined,
  gathering: boolean,
): { hintedStatus: string; webhooksInformed: true } | Record<string, never> {
  if (status === undefined) return {};
  return {
    hintedStatus: gathering ? furthestHint(context.hintedStatus, status) : status,
    webhooksInformed: true,
  };
}

/** An exchange order as a confirming call saw it, at the runtime's clock. */
interface ObservedOrder {
  readonly order: ExchangeOrderView;
  readonly at: number;
}
/** What an actor threw (an ExchangeFailure, or anything else: an unexpected error). */
interface ThrownFailure {
  readonly error: unknown;
}

// ---------------------------------------------------------------------------------------------------------------
// The machine

// Parameters taken from an actor's answer: its failure, its output, its clock reading.
const thrown = ({ event }: { event: { error: unknown } }): ThrownFailure => ({ error: event.error });
const outputOf = <Output>({ event }: { event: { output: Output } }) => ({ output: event.output });
const succeededAt = ({ event }: { event: { output: { at: number } } }) => ({ at: event.output.at });
/** A hint's clock reading and, for a webhook (not a reconciliation nudge), the status it named. */
const hintOf = (event: WebhookHintEvent): { at: number; status?: string } =>
  event.status === undefined ? { at: event.at } : { at: event.at, status: event.status };
/** A listing row: the status it showed and when its page was requested. */
const listingOf = ({ event }: { event: ListedEvent }) => ({ status: event.status, at: event.at });

/**
 * A state an order may rest in (its actor stopped, its record kept: order-passivation.ts) when every active state of
 * the order carries it and the restore router leads the context back to the same states.
 */
export const restableTag = 'restable';
export type OrderStateTag = typeof restableTag;

export const orderMachineSetup = setup({
  types: {
    input: {} as OrderInput,
    context: {} as OrderContext,
    events: {} as OrderEvent,
    emitted: {} as OrderDomainEvent,
    tags: {} as OrderStateTag,
  },
  actors: placeholderOrderActors,
  delays: {
    retryDelay: ({ context }) => remainingMs(context.retryAt, context.now),
    parkedRecheckDelay: ({ context }) => remainingMs(context.retryAt, context.now),
    pollDelay: ({ context }) => remainingMs(context.nextPollAt, context.now),
    paymentDeadlineDelay: ({ context }) => remainingMs(context.paymentDeadline, context.now),
    depositRetryDelay: ({ context }) => remainingMs(context.depositRetryAt, context.now),
    hintDelay: ({ context }) => remainingMs(context.hintDueAt ?? null, context.now),
  },
  guards: {
    isFreshOrder: ({ context }) => context.resumeFrom === null,
    resumesIn: ({ context }, params: { readonly states: readonly string[] }) =>
      context.resumeFrom !== null && params.states.includes(context.resumeFrom),
    needsPreScreening: ({ context }) => context.request.preScreening !== null,
    needsQuote: ({ context }) => needsQuote(context.request),
    /** backoff, throttled, unknown_outcome, or anything that is not an ExchangeFailure. */
    retryableFailure: (_, params: ThrownFailure) => isRetryable(params.error),
    /** A retryable failure of a step that has attempts left. */
    mayRetry: ({ context }, params: ThrownFailure) => isRetryable(params.error) && hasAttemptsLeft(context),
    /**
     * The create is (now) in doubt and may be tried again: a POST that may have taken effect, or a retryable
     * failure of the verification of one, with attempts left. Only a definite order ends a doubt.
     */
    doubtMayRetry: ({ context }, params: ThrownFailure) =>
      (isCreateInDoubt(context) || mayHaveTakenEffect(params.error)) &&
      (isRetryable(params.error) || mayHaveTakenEffect(params.error)) &&
      hasAttemptsLeft(context),
    /** The create is (now) in doubt and nothing more can be learnt now: park it rather than fail or repeat it. */
    doubtRemains: ({ context }, params: ThrownFailure) =>
      isCreateInDoubt(context) || mayHaveTakenEffect(params.error),
    settleAdopt: (_, params: { readonly event: OrderEvent }) =>
      params.event.type === 'SETTLE' && params.event.resolution === 'adopt',
    settleAbandon: (_, params: { readonly event: OrderEvent }) =>
      params.event.type === 'SETTLE' && params.event.resolution === 'abandon',
    /** Expired or invalid rate_id, promised-rate mismatch, non-actionable rate: a fresh quote, a bounded number of times. */
    mayRequote: ({ context }, params: ThrownFailure) =>
      needsRequote(params.error) && needsQuote(context.request) && canRequote(context, params.error),
    /** The same failure without a quote to renew (limit, floating CeFi): the create is retried, as boundedly. */
    mayRetryUnquoted: ({ context }, params: ThrownFailure) =>
      needsRequote(params.error) && canRequote(context, params.error),
    failureIs: (_, params: ThrownFailure & { readonly action: FailureAction }) =>
      failureRecordOf(params.error, 0).action === params.action,
    createInDoubt: ({ context }) => isCreateInDoubt(context),
    /** DeFi: repeating the POST with the same rate_id is idempotent (200 reuse), so a create in doubt is simply repeated. */
    createRepeatable: ({ context }) =>
      context.request.mode === 'defi' &&
      context.pendingIntent?.kind === 'create' &&
      context.pendingIntent.rateId !== null,
    slotGranted: (_, params: { readonly output: AcquireQuoteSlotOutput }) => params.output.granted,
    complianceFailed: (_, params: { readonly output: PreScreenOutput }) => params.output.status === 'failed',
    pairingRejected: (_, params: { readonly output: CheckAddressOutput }) => !params.output.ok,
    existingOrderFound: (_, params: { readonly output: FindExistingOrderOutput }) =>
      params.output.order !== null,
    /** The lookup could conclude nothing yet (another order's POST of the same siblings is out): look again later. */
    lookupDeferred: (_, params: { readonly output: FindExistingOrderOutput }) =>
      params.output.order === null && params.output.recheckAt !== undefined,
    /** The same, for a parked order's re-check: it waits parked (quietly) until then. */
    parkedLookupDeferred: ({ context }, params: { readonly output: FindExistingOrderOutput }) =>
      context.parkedAt !== null && params.output.order === null && params.output.recheckAt !== undefined,
    /** A re-check of a parked order (it goes back to waiting parked, whatever it finds short of an order). */
    parkedRecheck: ({ context }) => context.parkedAt !== null,
    /** The parked create's lookup can never finish: it is re-checked no more (it waits for order.settle). */
    parkedRecheckStopped: ({ context }) => context.lookupUnreachableAt != null,
    /**
     * A POST of this doubt made an exchange order that another order holds: "not created" is not a conclusion this
     * order may draw (it would POST again), however the scan came out.
     */
    createdOrderHeldElsewhere: ({ context }) =>
      context.pendingIntent?.kind === 'create' &&
      context.pendingIntent.reference != null &&
      (context.pendingIntent.foreign ?? []).includes(context.pendingIntent.reference),
    exchangeReports: (_, params: { readonly order: ExchangeOrderView; readonly status: ExchangeStatus }) =>
      params.order.status === params.status,
    hintPending: ({ context }) => context.hintPending,
    /** Every hint queued during the poll named an open status: the GET they need may wait (hintCoalesceMs). */
    queuedHintsMayWait: ({ context }) => context.queuedHintsMayWait === true,
    /**
     * Hints were queued during the GET and its answer (this status) does not show the status they named, nor one
     * further along: they still need a GET.
     */
    hintsOpenAfter: ({ context }, params: { readonly status: string }) =>
      context.hintPending &&
      !(context.hintedStatus != null && reachedBy(context.hintedStatus, params.status)),
    hintAlreadyConfirmed: ({ context }, params: { readonly status?: string }) =>
      hintAlreadyConfirmed(context, params.status),
    hintMayWait: ({ context }, params: { readonly status?: string }) => hintMayWait(context, params.status),
    hintDeferred: ({ context }) => context.hintDueAt != null,
    /** An answer from before the last confirmation (GET or listing) tells nothing newer. */
    staleObservation: ({ context }, params: { readonly at: number }) => isStaleListing(context, params.at),
    /** The listing shows the status last confirmed: a confirmation, no GET needed (a stale listing: neither). */
    listingConfirms: ({ context }, params: ListingRow) => listingConfirms(context, params),
    /** The listing shows another status: a hint (only a GET is believed). */
    listingDiffers: ({ context }, params: ListingRow) =>
      !isStaleListing(context, params.at) && params.status !== context.lastStatus,
    depositAwaited: ({ context }) => context.lastStatus === awaitingDepositStatus && context.deposit === null,
    // The restore routers' guards (order-context.ts), which passivation asks too.
    depositRecorded: ({ context }) => depositResumeGuards.depositRecorded({ context }),
    depositRetryScheduled: ({ context }) => depositResumeGuards.depositRetryScheduled({ context }),
    depositPending: ({ context }) => depositResumeGuards.depositPending({ context }),
    pollInFlight: ({ context }) => exchangeResumeGuards.pollInFlight({ context }),
    paymentDeadlineUnchecked: ({ context }) =>
      context.paymentDeadline !== null &&
      !context.paymentDeadlineChecked &&
      context.lastStatus === awaitingDepositStatus,
  },
  actions: {
    leaveRouter: assign({ resumeFrom: null }),
    recordIntent: assign(
      ({ context }, params: { readonly kind: 'pre_screen' | 'acquire_quote_slot' | 'request_quote' }) => ({
        pendingIntent: { kind: params.kind, startedAt: context.now },
      }),
    ),
    /** The POST is about to go out: keep a doubt about an earlier attempt until something resolves it. */
    recordCreateIntent: assign(({ context }) => {
      const inDoubt = isCreateInDoubt(context);
      const createAttempts = context.createAttempts + 1;
      return {
        createAttempts,
        pendingIntent: {
          kind: 'create' as const,
          attempt: createAttempts,
          rateId:
            context.pendingIntent?.kind === 'create' && inDoubt
              ? context.pendingIntent.rateId
              : boundRateId(context),
          // A doubt's window opens with the first POST that may have taken effect, not with its repeats.
          startedAt:
            context.pendingIntent?.kind === 'create' && inDoubt
              ? context.pendingIntent.startedAt
              : context.now,
          outcome: inDoubt ? ('unknown' as const) : ('in_flight' as const),
          // What the doubt learnt of the exchange orders its POSTs were answered with stays with it.
          ...(context.pendingIntent?.kind === 'create' && inDoubt
            ? {
                reference: context.pendingIntent.reference ?? null,
                foreign: context.pendingIntent.foreign ?? [],
              }
            : {}),
        },
      };
    }),
    /**
     * A POST was answered, yet the create did not finish (its claim or confirmation failed, or the order named is
     * another order's): the doubt keeps the reference, so the lookup asks for it first and the park names it, and
     * never takes one that belongs to another order.
     */
    noteCreateEvidence: assign(({ context }, params: ThrownFailure) => {
      const evidence = isExchangeFailure(params.error) ? params.error.evidence : undefined;
      const intent = context.pendingIntent;
      if (evidence === undefined || intent?.kind !== 'create') return {};
      const foreign = intent.foreign ?? [];
      return {
        pendingIntent: {
          ...intent,
          reference: evidence.created ? evidence.uniqueReference : (intent.reference ?? null),
          foreign:
            evidence.claim === 'another_order' && !foreign.includes(evidence.uniqueReference)
              ? [...foreign, evidence.uniqueReference].slice(-maxForeignReferences)
              : foreign,
        },
      };
    }),
    markCreateInDoubt: assign(({ context }) =>
      context.pendingIntent?.kind === 'create'
        ? { pendingIntent: { ...context.pendingIntent, outcome: 'unknown' as const } }
        : {},
    ),
    /** A step succeeded: its intent is done, its failure streak is over. */
    stepSucceeded: assign((_, params: { readonly at: number }) => ({
      now: params.at,
      pendingIntent: null,
      attempt: 0,
      retryAt: null,
    })),
    waitForQuoteSlot: assign((_, params: { readonly retryAt: number; readonly at: number }) => ({
      now: params.at,
      pendingIntent: null,
      retryAt: params.retryAt,
    })),
    /** A timer fired: time has reached its deadline at least. */
    retryDeadlineReached: assign(({ context }) => ({
      now: Math.max(context.now, context.retryAt ?? context.now),
      retryAt: null,
    })),
    scheduleRetry: assign(({ context }, params: ThrownFailure) => {
      const { noted, at, delayMs } = nextTry(context, params.error, context.attempt);
      // A definitive failure of a create means no order; a create in doubt stays in doubt until verified.
      const keepIntent = isCreateInDoubt(context);
      return {
        ...noted,
        attempt: context.attempt + 1,
        retryAt: at + delayMs,
        pendingIntent: keepIntent ? context.pendingIntent : null,
      };
    }),
    /**
     * A create fell (or stays) in doubt: wait, then repeat it (DeFi, same rate_id) or look it up (CeFi), in either
     * mode not before the settle window has passed. The POST in doubt may still be under way at the exchange (our
     * client gave up on it, or the replica that sent it lost the order): a lookup run before it lands can miss it,
     * and a second POST beside it is safe only if the exchange serialises two POSTs with one rate_id, which the
     * interface document does not promise (docs/decisions/create-in-doubt.md).
     */
    scheduleDoubtCheck: assign(({ context }, params: ThrownFailure) => {
      const { noted, at, delayMs } = nextTry(context, params.error, context.attempt);
      return {
        ...noted,
        attempt: context.attempt + 1,
        retryAt: at + Math.max(delayMs, context.config.createSettleMs),
      };
    }),
    /**
     * Taken over in doubt (another replica, or this one after a lost lease): the POST it made may still land, so the
     * repeat (DeFi) or the lookup (CeFi) waits for the settle window.
     */
    scheduleSettle: assign(({ context }) => ({ retryAt: context.now + context.config.createSettleMs })),
    countLookup: assign(({ context }) => ({ lookupScans: context.lookupScans + 1 })),
    /** A complete lookup found nothing: the create definitely did not happen; a later doubt is a new one. */
    doubtCleared: assign({ parkedAt: null }),
    parkOrder: enqueueActions(({ context, enqueue }, params: ThrownFailure) => {
      const failure = failureRecordOf(params.error, context.now);
      const rechecks = context.parkedAt === null ? 0 : (context.parkedRechecks ?? 0);
      // A lookup that can never finish is not tried again: it would spend its share of the budget for nothing.
      const unreachable =
        context.lookupUnreachableAt != null
          ? context.lookupUnreachableAt
          : failure.code === createCodes.lookupUnreachable
            ? failure.at
            : null;
      enqueue.assign({
        now: failure.at,
        lastFailure: failure,
        parkedAt: context.parkedAt ?? failure.at,
        parkedRechecks: rechecks,
        lookupUnreachableAt: unreachable,
        retryAt:
          unreachable !== null ? null : parkedRecheckAt({ ...context, parkedRechecks: rechecks }, failure.at),
      });
      // Published once per doubt; re-checks that change nothing stay quiet.
      if (context.parkedAt === null) enqueue.emit(parkedEventOf(context, failure));
    }),
    /** A re-check of a parked order could conclude nothing yet: it waits parked until then (quietly). */
    deferParkedRecheck: assign((_, params: { readonly output: FindExistingOrderOutput }) => ({
      now: params.output.at,
      retryAt: params.output.recheckAt ?? params.output.at,
    })),
    /** The lookup could conclude nothing yet: it looks again then; it did not fail (the failure streak ends). */
    deferLookup: assign((_, params: { readonly output: FindExistingOrderOutput }) => ({
      now: params.output.at,
      attempt: 0,
      retryAt: params.output.recheckAt ?? params.output.at,
    })),
    parkedRecheckDue: assign(({ context }) => ({
      now: Math.max(context.now, context.retryAt ?? context.now),
      retryAt: null,
      attempt: 0,
      parkedRechecks: (context.parkedRechecks ?? 0) + 1,
    })),
    noteAdoptReference: assign((_, params: { readonly event: SettleEvent }) => ({
      now: params.event.at,
      adoptReference: params.event.resolution === 'adopt' ? params.event.uniqueReference : null,
    })),
    refuseSettle: enqueueActions(({ context, enqueue }, params: ThrownFailure) => {
      const failure = failureRecordOf(params.error, context.now);
      enqueue.assign({
        now: failure.at,
        lastFailure: failure,
        adoptReference: null,
        retryAt: context.lookupUnreachableAt != null ? null : parkedRecheckAt(context, failure.at),
      });
      enqueue.emit({
        type: 'order.settle_refused',
        resolution: 'adopt',
        unique_reference: context.adoptReference ?? '',
        code: failure.code,
        message: failure.message,
      });
    }),
    abandonByOperator: enqueueActions(({ context, enqueue }, params: { readonly at: number }) => {
      const failure = {
        reason: 'abandoned_by_operator' as const,
        code: 'operator_abandoned',
        message: 'an operator settled the parked order as abandoned (order.settle)',
      };
      enqueue.assign({ now: params.at, pendingIntent: null, retryAt: null, failure });
      enqueue.emit({ type: 'order.failed', ...failure, ...unrecordedDepositField(context, context.order) });
    }),
    countRequote: assign(({ context }, params: ThrownFailure) => {
      const failure = failureRecordOf(params.error, context.now);
      return {
        now: failure.at,
        requotes: context.requotes + 1,
        requotesByCode: {
          ...context.requotesByCode,
          [failure.code]: (context.requotesByCode[failure.code] ?? 0) + 1,
        },
        attempt: 0,
        lastFailure: failure,
        pendingIntent: null,
        quote: null,
      };
    }),
    storeQuote: assign((_, params: { readonly quote: RequestQuoteOutput }) => ({
      quote: {
        rateId: params.quote.rateId,
        rate: params.quote.rate,
        expiresAt: params.quote.expiresAt,
        depositAmount: params.quote.depositAmount ?? null,
        withdrawAmount: params.quote.withdrawAmount ?? null,
        obtainedAt: params.quote.at,
      },
    })),
    emitQuoted: emit((_, params: { readonly quote: RequestQuoteOutput }) => quotedEventOf(params.quote)),
    failOrder: enqueueActions(({ context, enqueue }, params: ThrownFailure) => {
      const failure = failureRecordOf(params.error, context.now);
      const reason = failureReasonOf(failure);
      enqueue.assign({
        now: failure.at,
        pendingIntent: null,
        retryAt: null,
        lastFailure: failure,
        failure: { reason, code: failure.code, message: failure.message },
      });
      enqueue.emit({
        type: 'order.failed',
        reason,
        code: failure.code,
        message: failure.message,
        ...unrecordedDepositField(context, context.order),
      });
    }),
    failPairing: enqueueActions(({ enqueue }, params: { readonly output: CheckAddressOutput }) => {
      const failure = {
        reason: 'address_pairing_rejected' as const,
        code: params.output.ok ? 'address_pairing_rejected' : boundedCode(params.output.code),
        message: params.output.ok ? '' : boundedMessage(params.output.message),
      };
      enqueue.assign({ now: params.output.at, pendingIntent: null, failure });
      enqueue.emit({ type: 'order.failed', ...failure });
    }),
    failCompliance: enqueueActions(({ enqueue }, params: { readonly output: PreScreenOutput }) => {
      const failure = {
        reason: 'compliance_rejected' as const,
        code: 'pre_screening_failed',
        message: boundedMessage(params.output.message),
      };
      enqueue.assign({ now: params.output.at, pendingIntent: null, failure });
      enqueue.emit({ type: 'order.failed', ...failure });
    }),
    failUnrestorable: enqueueActions(({ context, enqueue }) => {
      const failure = {
        reason: 'unrestorable' as const,
        code: 'unknown_resume_state',
        message: `cannot resume an order stored in state "${context.resumeFrom ?? ''}"`,
      };
      enqueue.assign({ failure });
      enqueue.emit({ type: 'order.failed', ...failure, ...unrecordedDepositField(context, context.order) });
    }),
    cancelByCommand: enqueueActions(({ context, enqueue }, params: { readonly at: number }) => {
      enqueue.assign({ now: params.at, cancelReason: 'command', pendingIntent: null, retryAt: null });
      enqueue.emit({
        type: 'order.canceled',
        reason: 'command',
        ...unrecordedDepositField(context, context.order),
      });
    }),
    orderCreated: enqueueActions(
      ({ context, enqueue }, params: ObservedOrder & { readonly reused: boolean }) => {
        enqueue.assign({
          now: params.at,
          pendingIntent: null,
          attempt: 0,
          retryAt: null,
          order: params.order,
          lastStatus: params.order.status,
          paymentDeadline: paymentDeadlineOf(params.order),
          nextPollAt: params.at + pollIntervalOf(context),
          confirmedAt: params.at,
        });
        enqueue.emit(createdEventOf(params.order, params.reused));
      },
    ),
    /** A confirming GET: the only way a status is believed. Publishes status_changed only for a status not yet published. */
    observeOrder: enqueueActions(({ context, enqueue }, params: ObservedOrder) => {
      const previous = context.lastStatus;
      if (movesBackwards(previous, params.order.status)) {
        // A status behind one already confirmed is stale (a lagging replica or cache): noted, never published.
        enqueue.assign({
          now: params.at,
          pollStartedAt: null,
          pollAttempt: 0,
          hintPending: false,
          nextPollAt: params.at + pollIntervalOf(context),
        });
        return;
      }
      // A change the GET found that no webhook announced sends the routine poll back to the shorter interval.
      enqueue.assign(observation(context, params));
      if (previous !== params.order.status) {
        enqueue.emit({
          type: 'order.status_changed',
          unique_reference: params.order.uniqueReference,
          status: params.order.status,
          previous_status: previous,
        });
      }
    }),
    // An end says whether a deposit the client submitted was left unrecorded at the exchange (order-deposits.ts).
    emitCompleted: emit(({ context }, params: ObservedOrder) => ({
      type: 'order.completed' as const,
      unique_reference: params.order.uniqueReference,
      withdraw_transaction: params.order.withdrawTransaction,
      ...unrecordedDepositField(context, params.order),
    })),
    emitRefunded: emit(({ context }, params: ObservedOrder) => ({
      type: 'order.refunded' as const,
      unique_reference: params.order.uniqueReference,
      refund_transaction: params.order.refundTransaction,
      ...unrecordedDepositField(context, params.order),
    })),
    /**
     * CANCELED confirmed by a GET: a lapsed payment window when the deadline passed without any deposit, neither on
     * the exchange order nor submitted by the client (pending, retried or refused); else the exchange's cancel.
     */
    cancelByExchange: enqueueActions(({ context, enqueue }, params: ObservedOrder) => {
      const unrecorded = unrecordedDepositOf(context, params.order);
      const lapsed =
        context.paymentDeadline !== null &&
        params.at >= context.paymentDeadline &&
        params.order.depositTransaction === '' &&
        context.depositRecorded === null &&
        unrecorded === null;
      const reason = lapsed ? ('payment_window_lapsed' as const) : ('exchange' as const);
      enqueue.assign({ cancelReason: reason });
      enqueue.emit({
        type: 'order.canceled',
        unique_reference: params.order.uniqueReference,
        reason,
        ...(unrecorded === null ? {} : { unrecorded_deposit: unrecorded }),
      });
    }),
    /**
     * A listing showed the status last confirmed: that is a confirmation as good as a routine GET's, so the routine
     * poll becomes a fallback, the longest recommended interval after the listing (never earlier than it was): the
     * next round confirms the order again well before it.
     */
    confirmByListing: assign(({ context }, params: ListingRow) => listingConfirmation(context, params.at)),
    /** The GET serves every hint so far, those that waited included. */
    startPoll: assign(({ context }) => ({
      pollStartedAt: context.now,
      hintDueAt: null,
      hintSince: null,
      queuedHintsMayWait: false,
    })),
    hintDue: assign(({ context }) => ({ now: Math.max(context.now, context.hintDueAt ?? context.now) })),
    /**
     * A hint naming an open status waits for the hints after it: its GET is due once none came for hintCoalesceMs,
     * and at the latest hintCoalesceMaxMs after the first of them.
     */
    deferHint: assign(({ context }, params: { readonly at: number; readonly status?: string }) => {
      const { quietMs, maxMs } = hintCoalescingOf(context.config);
      const waiting = context.hintDueAt != null;
      const since = waiting ? (context.hintSince ?? params.at) : params.at;
      return {
        now: params.at,
        hintSince: since,
        hintDueAt: Math.min(params.at + quietMs, since + maxMs),
        ...notedHint(context, params.status, waiting),
      };
    }),
    /** Hints queued during a GET whose answer did not reach them: their GET waits like a hint in monitoring. */
    deferQueuedHints: assign(({ context }, params: { readonly at: number }) => {
      const { quietMs } = hintCoalescingOf(context.config);
      return { hintSince: params.at, hintDueAt: params.at + quietMs };
    }),
    pollDue: assign(({ context }) => ({ now: Math.max(context.now, context.nextPollAt ?? context.now) })),
    paymentDeadlineReached: assign(({ context }) => ({
      now: Math.max(context.now, context.paymentDeadline ?? context.now),
      paymentDeadlineChecked: true,
    })),
    noteTime: assign((_, params: { readonly at: number }) => ({ now: params.at })),
    /** A webhook named a status: remembered (never believed) to tell whether webhooks keep the order informed. */
    noteHint: assign(({ context }, params: { readonly at: number; readonly status?: string }) => ({
      now: params.at,
      ...notedHint(context, params.status, false),
    })),
    queueHint: assign(({ context }, params: { readonly at: number; readonly status?: string }) => ({
      now: params.at,
      hintPending: true,
      queuedHintsMayWait:
        (context.hintPending ? context.queuedHintsMayWait === true : true) &&
        hintMayWait(context, params.status),
      ...notedHint(context, params.status, context.hintPending),
    })),
    schedulePollRetry: assign(({ context }, params: ThrownFailure) => {
      const { noted, at, delayMs } = nextTry(context, params.error, context.pollAttempt);
      return {
        ...noted,
        pollStartedAt: null,
        // The retry serves a hint that arrived meanwhile.
        hintPending: false,
        pollAttempt: context.pollAttempt + 1,
        // Never poll faster than the recommended interval, whatever the failure.
        nextPollAt: at + Math.max(pollIntervalOf(context), delayMs),
      };
    }),
    acceptDeposit: assign((_, params: { readonly txHash: string; readonly at: number }) => ({
      now: params.at,
      deposit: { txHash: params.txHash, acceptedAt: params.at, startedAt: null },
      depositAttempt: 0,
      depositRetryAt: null,
    })),
    startDepositSubmission: assign(({ context }) => ({
      deposit: context.deposit === null ? null : { ...context.deposit, startedAt: context.now },
      depositRetryAt: null,
    })),
    depositDeadlineReached: assign(({ context }) => ({
      now: Math.max(context.now, context.depositRetryAt ?? context.now),
      depositRetryAt: null,
    })),
    depositSubmitted: enqueueActions(
      ({ context, enqueue }, params: { readonly alreadyRecorded: boolean; readonly at: number }) => {
        const txHash = context.deposit?.txHash ?? '';
        enqueue.assign({
          now: params.at,
          deposit: null,
          depositRecorded: { txHash, alreadyRecorded: params.alreadyRecorded },
          depositAttempt: 0,
          depositRetryAt: null,
          depositRejected: null,
        });
        enqueue.emit({
          type: 'order.deposit_submitted',
          tx_hash: txHash,
          already_recorded: params.alreadyRecorded,
        });
      },
    ),
    scheduleDepositRetry: assign(({ context }, params: ThrownFailure) => {
      const { noted, at, delayMs } = nextTry(context, params.error, context.depositAttempt);
      const { code, message } = failureRecordOf(params.error, context.now);
      return {
        ...noted,
        deposit: context.deposit === null ? null : { ...context.deposit, failure: { code, message } },
        depositAttempt: context.depositAttempt + 1,
        depositRetryAt: at + delayMs,
      };
    }),
    rejectDeposit: enqueueActions(({ context, enqueue }, params: ThrownFailure) => {
      const failure = failureRecordOf(params.error, context.now);
      const txHash = context.deposit?.txHash ?? '';
      enqueue.assign({
        now: failure.at,
        deposit: null,
        depositAttempt: 0,
        depositRetryAt: null,
        lastFailure: failure,
        // Kept until a deposit is recorded: the user may have paid all the same, and the order's end must say so.
        depositRejected: {
          txHash,
          acceptedAt: context.deposit?.acceptedAt ?? failure.at,
          code: failure.code,
          message: failure.message,
        },
      });
      enqueue.emit({
        type: 'order.deposit_rejected',
        tx_hash: txHash,
        code: failure.code,
        message: failure.message,
      });
    }),
  },
});

/**
 * A step before the exchange order exists failed: wait and try again while the failure is retryable and attempts
 * remain, else fail the order with the reason. The same for pre-screening, the quote slot and the quote.
 */
const retryOrFail = [
  {
    guard: { type: 'mayRetry', params: thrown },
    target: 'waiting',
    actions: { type: 'scheduleRetry', params: thrown },
  },
  { target: '#order.failed', actions: { type: 'failOrder', params: thrown } },
] as const;

/** A check before the quote passed (address pairing, pre-screening): on to the quote, or straight to the create. */
const toQuotingOrCreating = [
  { guard: 'needsQuote', target: '#order.quoting', actions: { type: 'stepSucceeded', params: succeededAt } },
  { target: '#order.creating', actions: { type: 'stepSucceeded', params: succeededAt } },
] as const;

/** A check before the quote said no: the order fails, and `fail` publishes why. */
const failsWhen = <
  Guard extends 'pairingRejected' | 'complianceFailed',
  Fail extends 'failPairing' | 'failCompliance',
>(
  guard: Guard,
  fail: Fail,
) =>
  ({
    guard: { type: guard, params: outputOf },
    target: '#order.failed',
    actions: { type: fail, params: outputOf },
  }) as const;

/** The `restoring` router's guard: the order was stored in one of these states. */
const resumesIn = (...states: ResumeKey[]) => ({ type: 'resumesIn', params: { states } }) as const;
/** Resume keys the router treats specially (above its generated cases). */
const routedAbove: readonly ResumeKey[] = ['quoting.acquiringSlot', 'quoting.requesting', 'creating.posting'];

/** An order.cancel before anything may exist at the exchange: the order ends canceled. */
const cancelOnCommand = {
  target: '#order.canceled',
  actions: { type: 'cancelByCommand', params: ({ event }: { event: { at: number } }) => ({ at: event.at }) },
} as const;

/** A step before the exchange order exists: an order.cancel ends it (nothing can exist at the exchange yet). */
const cancelable = { on: { CANCEL: cancelOnCommand } } as const;

/** A step's wait (backoff, throttle, cooldown): when its deadline is reached, `target` is entered. */
const waitingFor = (target: string) =>
  ({ after: { retryDelay: { target, actions: 'retryDeadlineReached' } } }) as const;

/** A confirming GET shows the order ended at the exchange: observe it, then `announce` it, and end there too. */
const endedAtExchange = <Announce extends 'emitCompleted' | 'emitRefunded' | 'cancelByExchange'>(
  status: ExchangeStatus,
  target: string,
  announce: Announce,
) => {
  const seen = ({ event }: { event: { output: ObservedOrder } }) => event.output;
  return {
    guard: {
      type: 'exchangeReports',
      params: ({ event }: { event: { output: ObservedOrder } }) => ({ order: event.output.order, status }),
    },
    target,
    actions: [
      { type: 'observeOrder', params: seen },
      { type: announce, params: seen },
    ],
  } as const;
};

const seenOf = ({ event }: { event: { output: ObservedOrder } }) => event.output;

/** Why a doubt whose POST made an exchange order another order holds is parked (its lookup found no other). */
function heldElsewhere(context: OrderContext, at: number): ExchangeFailure & { readonly at: number } {
  const reference = context.pendingIntent?.kind === 'create' ? context.pendingIntent.reference : null;
  return {
    kind: 'exchange_failure',
    action: 'fatal',
    code: createCodes.claimedElsewhere,
    message: `POST /orders/ made exchange order ${reference ?? '?'}, which another order holds; no other order of this content is free, so this one is not created again`,
    at,
  };
}

/** An end the answer to a status poll confirms: to its final state, announced. */
const pollEnds = () =>
  [
    endedAtExchange('COMPLETED', '#order.completed', 'emitCompleted'),
    endedAtExchange('REFUNDED', '#order.refunded', 'emitRefunded'),
    endedAtExchange('CANCELED', '#order.canceled', 'cancelByExchange'),
  ] as const;

/** Any other answer: the order monitors again, its routine poll re-armed from the answer. */
const pollObserved = {
  target: 'monitoring',
  reenter: true,
  actions: { type: 'observeOrder', params: seenOf },
} as const;

/** A failed poll: the order monitors again and retries after its backoff (never faster than the poll interval). */
const pollFailed = {
  target: 'monitoring',
  reenter: true,
  actions: { type: 'schedulePollRetry', params: thrown },
} as const;

export const orderMachine = orderMachineSetup.createMachine({
  id: 'order',
  context: ({ input }) => initialOrderContext(input),
  initial: 'restoring',
  states: {
    /** Router: a new order goes to its first step; a restored one back to where it was, its intents verified. */
    restoring: {
      exit: 'leaveRouter',
      always: [
        { guard: 'isFreshOrder', target: 'checkingAddress' },
        // A quote request that may have gone out used its slot: ask for a slot again (the cooldown may still run).
        { guard: resumesIn('quoting.acquiringSlot', 'quoting.requesting'), target: 'quoting.acquiringSlot' },
        // A POST that may have gone out: once the settle window has passed (the previous owner's POST may still be
        // in flight or land late), DeFi repeats it with the same rate_id (200 reuse) and CeFi looks for the order.
        {
          guard: resumesIn('creating.posting'),
          target: 'creating.waiting',
          actions: ['markCreateInDoubt', 'scheduleSettle'],
        },
        // Every other state is simply re-entered: its entry re-arms deadlines from context.
        ...resumableStates
          .filter((key) => !routedAbove.includes(key))
          .map((key) => ({ guard: resumesIn(key), target: key })),
        { target: 'failed', actions: 'failUnrestorable' },
      ],
    },

    /**
     * Before any quote: the address and chain pairing the exchange does not check (chains sharing an address format
     * are not distinguished). Read-only (the exchange's currency and network records, cached by the runtime).
     */
    checkingAddress: {
      initial: 'calling',
      ...cancelable,
      states: {
        calling: {
          invoke: {
            id: 'checkAddress',
            src: 'checkAddress',
            input: ({ context }) => checkAddressInputOf(context),
            onDone: [
              failsWhen('pairingRejected', 'failPairing'),
              {
                guard: 'needsPreScreening',
                target: '#order.preScreening',
                actions: { type: 'stepSucceeded', params: succeededAt },
              },
              ...toQuotingOrCreating,
            ],
            onError: retryOrFail,
          },
        },
        waiting: waitingFor('calling'),
      },
    },

    preScreening: {
      initial: 'calling',
      ...cancelable,
      states: {
        calling: {
          entry: { type: 'recordIntent', params: { kind: 'pre_screen' } },
          invoke: {
            id: 'preScreen',
            src: 'preScreen',
            input: ({ context }) => preScreenInputOf(context),
            onDone: [failsWhen('complianceFailed', 'failCompliance'), ...toQuotingOrCreating],
            onError: retryOrFail,
          },
        },
        waiting: waitingFor('calling'),
      },
    },

    quoting: {
      initial: 'acquiringSlot',
      ...cancelable,
      states: {
        /** The cooldown belongs to the request (mode, pair, amount), not the order: the runtime holds it for every replica. */
        acquiringSlot: {
          entry: { type: 'recordIntent', params: { kind: 'acquire_quote_slot' } },
          invoke: {
            id: 'acquireQuoteSlot',
            src: 'acquireQuoteSlot',
            input: ({ context }): AcquireQuoteSlotInput => ({
              ...quoteRequestOf(context),
              cooldownMs: context.config.quoteCooldownMs,
            }),
            onDone: [
              {
                guard: { type: 'slotGranted', params: outputOf },
                target: 'requesting',
                actions: { type: 'noteTime', params: succeededAt },
              },
              {
                target: 'coolingDown',
                actions: {
                  type: 'waitForQuoteSlot',
                  params: ({ event }) => ({
                    at: event.output.at,
                    retryAt: event.output.granted ? event.output.at : event.output.retryAt,
                  }),
                },
              },
            ],
            onError: retryOrFail,
          },
        },
        coolingDown: waitingFor('acquiringSlot'),
        requesting: {
          entry: { type: 'recordIntent', params: { kind: 'request_quote' } },
          invoke: {
            id: 'requestQuote',
            src: 'requestQuote',
            input: ({ context }): RequestQuoteInput => quoteRequestOf(context),
            onDone: {
              target: '#order.creating',
              actions: [
                { type: 'stepSucceeded', params: succeededAt },
                { type: 'storeQuote', params: ({ event }) => ({ quote: event.output }) },
                { type: 'emitQuoted', params: ({ event }) => ({ quote: event.output }) },
              ],
            },
            onError: retryOrFail,
          },
        },
        /** Backoff or throttle: the retry asks for a slot again, so it never breaks the cooldown either. */
        waiting: waitingFor('acquiringSlot'),
      },
    },

    creating: {
      initial: 'posting',
      states: {
        posting: {
          entry: 'recordCreateIntent',
          invoke: {
            id: 'createOrder',
            src: 'createOrder',
            input: ({ context }) => createInputOf(context),
            onDone: {
              target: '#order.open',
              actions: {
                type: 'orderCreated',
                params: ({ event }) => ({
                  order: event.output.order,
                  reused: event.output.reused,
                  at: event.output.at,
                }),
              },
            },
            onError: [
              // The POST may have taken effect (5xx, 408, timeout, lost or unreadable answer), or an earlier one
              // may have and this repeat did not settle it: only a definite order ends a doubt. Nothing else -
              // not "expired", not a validation error, not a cancel - may lead to a fresh quote or a second POST.
              {
                guard: { type: 'doubtMayRetry', params: thrown },
                target: 'waiting',
                actions: [
                  'markCreateInDoubt',
                  { type: 'noteCreateEvidence', params: thrown },
                  { type: 'scheduleDoubtCheck', params: thrown },
                ],
              },
              {
                guard: { type: 'doubtRemains', params: thrown },
                target: 'parked',
                actions: [
                  'markCreateInDoubt',
                  { type: 'noteCreateEvidence', params: thrown },
                  { type: 'parkOrder', params: thrown },
                ],
              },
              // Expired or invalid rate_id, promised-rate mismatch, non-actionable rate: a fresh quote, a bounded number of times.
              {
                guard: { type: 'mayRequote', params: thrown },
                target: '#order.quoting',
                actions: { type: 'countRequote', params: thrown },
              },
              // Without a quote (limit, floating CeFi) "pair temporarily unavailable" is retried after a backoff, as boundedly.
              {
                guard: { type: 'mayRetryUnquoted', params: thrown },
                target: 'waiting',
                actions: [
                  { type: 'countRequote', params: thrown },
                  { type: 'scheduleRetry', params: thrown },
                ],
              },
              {
                guard: { type: 'mayRetry', params: thrown },
                target: 'waiting',
                actions: { type: 'scheduleRetry', params: thrown },
              },
              { target: '#order.failed', actions: { type: 'failOrder', params: thrown } },
            ],
          },
        },
        /** A CeFi create whose outcome is unknown: a complete scan of GET /orders/ over the window it could land in. */
        verifying: {
          entry: 'countLookup',
          invoke: {
            id: 'findExistingOrder',
            src: 'findExistingOrder',
            input: ({ context }): FindExistingOrderInput => ({
              create: createInputOf(context),
              since: context.pendingIntent?.kind === 'create' ? context.pendingIntent.startedAt : context.now,
              parked: context.parkedAt !== null,
            }),
            onDone: [
              {
                guard: { type: 'existingOrderFound', params: outputOf },
                target: '#order.open',
                actions: {
                  type: 'orderCreated',
                  params: ({ event }) => ({
                    order: event.output.order as ExchangeOrderView,
                    reused: false,
                    at: event.output.at,
                  }),
                },
              },
              // Nothing can be concluded while another order's POST of the same siblings is out: look again later.
              {
                guard: { type: 'parkedLookupDeferred', params: outputOf },
                target: 'parked',
                actions: { type: 'deferParkedRecheck', params: outputOf },
              },
              {
                guard: { type: 'lookupDeferred', params: outputOf },
                target: 'waiting',
                actions: { type: 'deferLookup', params: outputOf },
              },
              // A POST of this doubt made an exchange order another order holds: never POST again; park.
              {
                guard: 'createdOrderHeldElsewhere',
                target: 'parked',
                actions: {
                  type: 'parkOrder',
                  params: ({ context, event }) => ({ error: heldElsewhere(context, event.output.at) }),
                },
              },
              // Definitely not created (complete scan, settle window passed): the POST may go out again.
              {
                target: 'posting',
                actions: [{ type: 'stepSucceeded', params: succeededAt }, 'doubtCleared'],
              },
            ],
            onError: [
              // A parked order's re-check looks once: whatever stops it, the next re-check comes after the back-off.
              { guard: 'parkedRecheck', target: 'parked', actions: { type: 'parkOrder', params: thrown } },
              {
                guard: { type: 'mayRetry', params: thrown },
                target: 'waiting',
                actions: { type: 'scheduleRetry', params: thrown },
              },
              // The lookup itself cannot be completed (or was refused for good): the order may exist. Park it.
              { target: 'parked', actions: { type: 'parkOrder', params: thrown } },
            ],
          },
        },
        waiting: {
          on: {
            CANCEL: { guard: not('createInDoubt'), ...cancelOnCommand },
          },
          after: {
            retryDelay: [
              {
                guard: and(['createInDoubt', 'createRepeatable']),
                target: 'posting',
                actions: 'retryDeadlineReached',
              },
              { guard: 'createInDoubt', target: 'verifying', actions: 'retryDeadlineReached' },
              { target: 'posting', actions: 'retryDeadlineReached' },
            ],
          },
        },
        /**
         * The create's outcome could not be established: order.parked was published. The evidence is re-checked
         * now and then (DeFi: the POST with the same rate_id, which only ever returns the one order; CeFi: a
         * scan); an operator's order.settle adopts a named exchange order or abandons the order. A cancel is
         * refused: the exchange order may exist.
         */
        parked: {
          on: {
            SETTLE: [
              {
                guard: { type: 'settleAdopt', params: ({ event }) => ({ event }) },
                target: 'adopting',
                actions: { type: 'noteAdoptReference', params: ({ event }) => ({ event }) },
              },
              {
                guard: { type: 'settleAbandon', params: ({ event }) => ({ event }) },
                target: '#order.failed',
                actions: { type: 'abandonByOperator', params: ({ event }) => ({ at: event.at }) },
              },
            ],
          },
          after: {
            parkedRecheckDelay: [
              // Only setTimeout's limit brings this timer back for an order no re-check can help: wait on.
              { guard: 'parkedRecheckStopped', target: 'parked', reenter: true },
              { guard: 'createRepeatable', target: 'posting', actions: 'parkedRecheckDue' },
              { target: 'verifying', actions: 'parkedRecheckDue' },
            ],
          },
        },
        /** The operator named the exchange order: confirm with a GET that it matches and belongs to no other order. */
        adopting: {
          invoke: {
            id: 'adoptOrder',
            src: 'adoptOrder',
            input: ({ context }): AdoptOrderInput => ({
              create: createInputOf(context),
              uniqueReference: context.adoptReference ?? '',
            }),
            onDone: {
              target: '#order.open',
              actions: {
                type: 'orderCreated',
                params: ({ event }) => ({ order: event.output.order, reused: false, at: event.output.at }),
              },
            },
            onError: { target: 'parked', actions: { type: 'refuseSettle', params: thrown } },
          },
        },
      },
    },

    /** The exchange order exists: deposit submission and monitoring run side by side until a GET confirms an end. */
    open: {
      type: 'parallel',
      states: {
        deposit: {
          initial: 'resuming',
          states: {
            // The router (order-context.ts, depositResumeRoutes): each guard in turn, then `awaiting`.
            resuming: {
              always: [...depositResumeRoutes, { target: depositResumeFallback }],
            },
            // The states tagged `restable` are the ones an order may rest in (order-passivation.ts), when its
            // context leads the router back to them.
            awaiting: {
              tags: [restableTag],
              on: {
                SUBMIT_DEPOSIT: {
                  guard: 'depositAwaited',
                  target: 'submitting',
                  actions: {
                    type: 'acceptDeposit',
                    params: ({ event }) => ({ txHash: event.txHash, at: event.at }),
                  },
                },
              },
            },
            submitting: {
              initial: 'calling',
              states: {
                calling: {
                  entry: 'startDepositSubmission',
                  invoke: {
                    id: 'submitDeposit',
                    src: 'submitDeposit',
                    input: ({ context }) => submitDepositInputOf(context),
                    onDone: {
                      target: '#order.open.deposit.submitted',
                      actions: {
                        type: 'depositSubmitted',
                        params: ({ event }) => ({
                          alreadyRecorded: event.output.alreadyRecorded,
                          at: event.output.at,
                        }),
                      },
                    },
                    onError: [
                      {
                        guard: {
                          type: 'failureIs',
                          params: ({ event }) => ({ error: event.error, action: 'idempotent_success' }),
                        },
                        target: '#order.open.deposit.submitted',
                        actions: {
                          type: 'depositSubmitted',
                          params: ({ context, event }) => ({
                            alreadyRecorded: true,
                            at: failureRecordOf(event.error, context.now).at,
                          }),
                        },
                      },
                      {
                        guard: { type: 'retryableFailure', params: thrown },
                        target: 'waiting',
                        actions: {
                          type: 'scheduleDepositRetry',
                          params: thrown,
                        },
                      },
                      {
                        target: '#order.open.deposit.awaiting',
                        actions: { type: 'rejectDeposit', params: thrown },
                      },
                    ],
                  },
                },
                waiting: {
                  tags: [restableTag],
                  after: { depositRetryDelay: { target: 'calling', actions: 'depositDeadlineReached' } },
                },
              },
            },
            submitted: { tags: [restableTag] },
          },
        },
        exchange: {
          initial: 'resuming',
          states: {
            // The router (order-context.ts, exchangeResumeTarget): a poll in flight is made again.
            resuming: {
              always: [{ guard: 'pollInFlight', target: 'polling' }, { target: 'monitoring' }],
            },
            monitoring: {
              tags: [restableTag],
              on: {
                // A hint is confirmed by a GET (only a GET is believed), at once for an end, an unknown status or a
                // nudge; one naming an open status waits for the hints that come with it (hintCoalesceMs), so hints
                // that arrive together share one GET; one naming the status already confirmed needs none.
                WEBHOOK_HINT: [
                  {
                    guard: { type: 'hintAlreadyConfirmed', params: ({ event }) => hintOf(event) },
                    actions: { type: 'noteTime', params: ({ event }) => hintOf(event) },
                  },
                  {
                    guard: { type: 'hintMayWait', params: ({ event }) => hintOf(event) },
                    target: 'monitoring',
                    reenter: true,
                    actions: { type: 'deferHint', params: ({ event }) => hintOf(event) },
                  },
                  {
                    target: 'polling',
                    actions: { type: 'noteHint', params: ({ event }) => hintOf(event) },
                  },
                ],
                // The runtime polled the order while it rested (no actor) and the answer had news: taken as the
                // answer to the order's own poll (no hint can be queued here), unless older than the last
                // confirmation; its failure as the poll's failure.
                POLLED: [
                  { guard: { type: 'staleObservation', params: ({ event }) => ({ at: event.output.at }) } },
                  ...pollEnds(),
                  pollObserved,
                ],
                POLL_FAILED: pollFailed,
                // A bulk listing (GET /orders/?status=<code>): the same status re-arms the routine poll from the
                // listing's time; another status is a hint, confirmed (or not) by the GET; a stale one is ignored.
                LISTED: [
                  {
                    guard: { type: 'listingConfirms', params: listingOf },
                    target: 'monitoring',
                    reenter: true,
                    actions: { type: 'confirmByListing', params: listingOf },
                  },
                  {
                    guard: { type: 'listingDiffers', params: listingOf },
                    target: 'polling',
                    actions: { type: 'noteTime', params: listingOf },
                  },
                ],
              },
              after: {
                pollDelay: { target: 'polling', actions: 'pollDue' },
                hintDelay: { guard: 'hintDeferred', target: 'polling', actions: 'hintDue' },
                paymentDeadlineDelay: {
                  guard: 'paymentDeadlineUnchecked',
                  target: 'polling',
                  actions: 'paymentDeadlineReached',
                },
              },
            },
            /** GET /orders/{unique_reference}/: the only source of a status the machine believes. */
            polling: {
              entry: 'startPoll',
              on: {
                WEBHOOK_HINT: { actions: { type: 'queueHint', params: ({ event }) => hintOf(event) } },
              },
              invoke: {
                id: 'fetchOrder',
                src: 'fetchOrder',
                input: ({ context }) => fetchOrderInputOf(context),
                onDone: [
                  ...pollEnds(),
                  // A webhook arrived during the GET: the answer may predate it, so ask again: at once for an end, an
                  // unknown status or a nudge; after hintCoalesceMs for open statuses the answer did not reach; not
                  // at all when the answer shows them already.
                  {
                    guard: and(['hintPending', not('queuedHintsMayWait')]),
                    target: 'polling',
                    reenter: true,
                    actions: { type: 'observeOrder', params: seenOf },
                  },
                  {
                    guard: {
                      type: 'hintsOpenAfter',
                      params: ({ event }) => ({ status: event.output.order.status }),
                    },
                    target: 'monitoring',
                    actions: [
                      { type: 'observeOrder', params: seenOf },
                      { type: 'deferQueuedHints', params: ({ event }) => ({ at: event.output.at }) },
                    ],
                  },
                  pollObserved,
                ],
                onError: pollFailed,
              },
            },
          },
        },
      },
    },

    completed: { type: 'final' },
    refunded: { type: 'final' },
    canceled: { type: 'final' },
    failed: { type: 'final' },
  },
});

export type OrderMachine = typeof orderMachine;

/**
 * The order machine with the runtime's actors (order-actors.ts: each function gets the call's input and an
 * AbortSignal). The snapshot the runtime must store before the call (intent included) is already
 * `actor.getSnapshot()` when a function is invoked.
 */
export function provideOrderActors(functions: OrderActorFunctions) {
  return orderMachine.provide({ actors: orderActorsOf(functions) });
}
