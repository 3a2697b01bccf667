// Builders of the domain events whose payload takes more than copying a field or two (order-events.ts has their
// schemas). Times are published as ISO 8601 UTC.

import type { ExchangeOrderView } from './domain.ts';
import type { OrderDomainEventOf } from './order-events.ts';
import type { FailureRecord, OrderContext, RequestQuoteOutput } from './order-types.ts';

export function isoOf(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** The payment deadline of an exchange order: fixed_rate_deadline, else created_on + payment_window_minutes. */
export function paymentDeadlineOf(order: ExchangeOrderView): number | null {
  if (order.fixedRateDeadline) {
    const deadline = Date.parse(order.fixedRateDeadline);
    if (Number.isFinite(deadline)) return deadline;
  }
  if (order.paymentWindowMinutes !== null && order.createdOn) {
    const createdOn = Date.parse(order.createdOn);
    if (Number.isFinite(createdOn)) return createdOn + order.paymentWindowMinutes * 60_000;
  }
  return null;
}

/**
 * An order the runtime stopped on an error its machine does not model (an actor that threw, a write that failed
 * twice): parked as internal_error, with no create attempt to account for.
 */
export interface InternalErrorPark {
  readonly mode: OrderDomainEventOf<'order.parked'>['mode'];
  readonly code: string;
  readonly message: string;
  /** When it stopped (epoch ms): the whole window of the park. */
  readonly at: number;
}

/**
 * The one builder of order.parked. From the machine's context and the failure that left a create in doubt: what was
 * tried to establish its outcome, for the operator reading it (create_outcome_unknown). From an internal error
 * the runtime halted the order on: internal_error.
 */
export function parkedEventOf(
  context: OrderContext,
  failure: FailureRecord,
): OrderDomainEventOf<'order.parked'>;
export function parkedEventOf(halt: InternalErrorPark): OrderDomainEventOf<'order.parked'>;
export function parkedEventOf(
  subject: OrderContext | InternalErrorPark,
  failure?: FailureRecord,
): OrderDomainEventOf<'order.parked'> {
  if (failure === undefined) {
    const halt = subject as InternalErrorPark;
    return {
      type: 'order.parked',
      reason: 'internal_error',
      mode: halt.mode,
      rate_id: null,
      window_from: isoOf(halt.at),
      window_to: isoOf(halt.at),
      attempts: 0,
      tried: [],
      code: halt.code,
      message: halt.message,
    };
  }
  const context = subject as OrderContext;
  const intent = context.pendingIntent?.kind === 'create' ? context.pendingIntent : null;
  const rateId = intent?.rateId ?? null;
  const tried = [`POST /orders/ sent ${context.createAttempts} time(s)`];
  if (rateId !== null && context.request.mode === 'defi')
    tried.push(`repeated with the same rate_id ${rateId} (answered: ${failure.code})`);
  const reference = intent?.reference ?? null;
  const foreign = intent?.foreign ?? [];
  if (reference !== null)
    tried.push(
      foreign.includes(reference)
        ? `POST /orders/ made ${reference}, which another order holds`
        : `POST /orders/ was answered with ${reference} (not confirmed as this order's)`,
    );
  for (const other of foreign)
    if (other !== reference) tried.push(`${other} was named by an answer but belongs to another order`);
  if (context.lookupScans > 0) tried.push(`GET /orders/ scanned ${context.lookupScans} time(s)`);
  tried.push(`last answer: ${failure.code}`);
  return {
    type: 'order.parked',
    reason: 'create_outcome_unknown',
    mode: context.request.mode,
    rate_id: rateId,
    window_from: isoOf(intent?.startedAt ?? failure.at),
    window_to: isoOf(Math.max(failure.at, intent?.startedAt ?? failure.at)),
    attempts: context.createAttempts,
    tried,
    code: failure.code,
    message: failure.message,
  };
}

export function quotedEventOf(quote: RequestQuoteOutput): OrderDomainEventOf<'order.quoted'> {
  return {
    type: 'order.quoted',
    rate_id: quote.rateId,
    rate: quote.rate,
    expires_at: isoOf(quote.expiresAt),
    ...(quote.depositAmount !== undefined ? { deposit_amount: quote.depositAmount } : {}),
    ...(quote.withdrawAmount !== undefined ? { withdraw_amount: quote.withdrawAmount } : {}),
  };
}

export function createdEventOf(
  order: ExchangeOrderView,
  reused: boolean,
): OrderDomainEventOf<'order.created'> {
  const deadline = paymentDeadlineOf(order);
  return {
    type: 'order.created',
    unique_reference: order.uniqueReference,
    deposit_address: order.depositAddress,
    deposit_address_extra_id: order.depositAddressExtraId,
    deposit_amount: order.depositAmount,
    withdraw_amount: order.withdrawAmount,
    rate: order.rate,
    deadline: deadline === null ? null : isoOf(deadline),
    reused,
  };
}
