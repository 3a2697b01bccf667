// The domain events an order publishes, once: zod schemas of their payloads (snake_case as on the Kafka wire),
// without the envelope the runtime adds (event_id, order_id, seq, occurred_at). The machine emits these types;
// src/contract/events.ts wraps each in the envelope for the published contract (AsyncAPI, JSON Schemas).
// zod is no I/O: machines/ stays pure.

import { z } from 'zod';
import { tradingModes } from './domain.ts';

export const isoTime = z.string().describe('ISO 8601 UTC timestamp');
export const decimal = z.string().describe('decimal string');

export const cancelReasons = ['command', 'payment_window_lapsed', 'exchange'] as const;
export type CancelReason = (typeof cancelReasons)[number];

export const orderQuoted = z.object({
  type: z.literal('order.quoted'),
  rate_id: z.string(),
  rate: decimal,
  // The machine always knows the expiry; the published contract has allowed null since it was first written.
  expires_at: isoTime.nullable(),
  deposit_amount: decimal.nullable().optional(),
  withdraw_amount: decimal.nullable().optional(),
});

export const orderCreated = z.object({
  type: z.literal('order.created'),
  unique_reference: z.string(),
  deposit_address: z.string(),
  deposit_address_extra_id: z.string(),
  deposit_amount: decimal,
  withdraw_amount: decimal,
  rate: decimal,
  /** Payment deadline, or null when the exchange gave none. */
  deadline: isoTime.nullable(),
  reused: z.boolean(),
});

export const orderDepositSubmitted = z.object({
  type: z.literal('order.deposit_submitted'),
  tx_hash: z.string(),
  already_recorded: z.boolean(),
});

export const orderDepositRejected = z.object({
  type: z.literal('order.deposit_rejected'),
  tx_hash: z.string(),
  code: z.string(),
  message: z
    .string()
    .describe('why the exchange refused the hash for good; the order still awaits its deposit'),
});

/**
 * A deposit the client submitted (order.submit_deposit, accepted) that the exchange had not recorded on this order
 * when the order ended: the user may have broadcast money the exchange does not connect with it. On an order's end
 * event only when there is one (an optional field: absent for every order whose deposits were all recorded).
 */
export const unrecordedDeposit = z
  .object({
    tx_hash: z.string(),
    state: z
      .enum(['unconfirmed', 'retrying', 'rejected'])
      .describe(
        'unconfirmed: accepted, its PATCH not made or not answered before the end; retrying: a PATCH failed and was to be retried; rejected: the exchange refused it for good (order.deposit_rejected)',
      ),
    accepted_at: isoTime.describe('when the worker accepted the order.submit_deposit'),
    code: z.string().optional().describe('the last failure of its PATCH, when one failed'),
    message: z.string().optional(),
  })
  .describe(
    'Alert on it: the deposit transaction must be traced by hand (the exchange partner dashboard, the chain) and the user refunded or credited; see docs/operations.md, "Deposits not recorded".',
  );
export type UnrecordedDeposit = z.infer<typeof unrecordedDeposit>;

export const orderStatusChanged = z.object({
  type: z.literal('order.status_changed'),
  unique_reference: z.string(),
  status: z.string().describe('exchange status name, e.g. PAID'),
  previous_status: z.string().nullable(),
});

export const orderCompleted = z.object({
  type: z.literal('order.completed'),
  unique_reference: z.string(),
  withdraw_transaction: z.string(),
  unrecorded_deposit: unrecordedDeposit.optional(),
});

export const orderRefunded = z.object({
  type: z.literal('order.refunded'),
  unique_reference: z.string(),
  refund_transaction: z.string(),
  unrecorded_deposit: unrecordedDeposit.optional(),
});

export const orderCanceled = z.object({
  type: z.literal('order.canceled'),
  unique_reference: z.string().nullable().optional(),
  reason: z
    .enum(cancelReasons)
    .describe(
      'payment_window_lapsed only when no deposit was ever submitted for the order; an order canceled with a deposit the exchange had not recorded is "exchange", with unrecorded_deposit',
    ),
  unrecorded_deposit: unrecordedDeposit.optional(),
});

/**
 * create_outcome_unknown is the machine's (nothing is retried blindly; the order keeps re-checking the evidence);
 * internal_error is the runtime's, when an order's actor stopped on a bug.
 */
export const orderParked = z
  .object({
    type: z.literal('order.parked'),
    reason: z
      .enum(['create_outcome_unknown', 'internal_error'])
      .describe(
        'create_outcome_unknown: the exchange order may or may not exist; internal_error: the order stopped on a worker bug',
      ),
    mode: z.enum(tradingModes),
    rate_id: z.string().nullable(),
    window_from: isoTime.describe('earliest time the exchange order may have been created'),
    window_to: isoTime.describe('latest time the exchange order may have been created (so far)'),
    attempts: z.number().int().min(0).describe('POST /orders/ attempts made'),
    tried: z.array(z.string()).describe('what was tried to establish the outcome'),
    code: z.string(),
    message: z.string(),
  })
  .describe(
    'Alert on it. The order is neither failed nor retried; it keeps re-checking the evidence and waits for an order.settle command (adopt a unique_reference, or abandon).',
  );

export const orderSettleRefused = z
  .object({
    type: z.literal('order.settle_refused'),
    resolution: z.literal('adopt'),
    unique_reference: z.string(),
    code: z.string().describe('adopt_mismatch, reference_owned, or the exchange failure code'),
    message: z.string(),
  })
  .describe('An order.settle could not be carried out; the order stays parked.');

export const orderFailed = z.object({
  type: z.literal('order.failed'),
  // A string on the wire (consumers keep working when a reason is added); the machine's reasons: OrderFailureReason.
  reason: z.string(),
  code: z
    .string()
    .describe(
      'stable code of the failure: a row of the exchange error classification (e.g. address_invalid, markup_over_cap, credentials_missing, referral_code_not_owned: the referral token or code is not owned by the partner of the mode API key), credentials_missing_for_mode, or http_<status> for an unexplained status; see docs/operations.md, "Dead orders"',
    ),
  message: z.string(),
  unrecorded_deposit: unrecordedDeposit.optional(),
});

/** Every domain event of an order, by its `type`. */
export const orderDomainEvents = {
  'order.quoted': orderQuoted,
  'order.created': orderCreated,
  'order.deposit_submitted': orderDepositSubmitted,
  'order.deposit_rejected': orderDepositRejected,
  'order.status_changed': orderStatusChanged,
  'order.completed': orderCompleted,
  'order.refunded': orderRefunded,
  'order.canceled': orderCanceled,
  'order.parked': orderParked,
  'order.settle_refused': orderSettleRefused,
  'order.failed': orderFailed,
} as const;

export type OrderDomainEventType = keyof typeof orderDomainEvents;
/** The domain event of one type, as the machine emits it. */
export type OrderDomainEventOf<T extends OrderDomainEventType> = z.infer<(typeof orderDomainEvents)[T]>;
/** A domain event as the machine emits it. */
export type OrderDomainEvent = { [T in OrderDomainEventType]: OrderDomainEventOf<T> }[OrderDomainEventType];
