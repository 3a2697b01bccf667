// The event contract of TOPIC_EVENTS: JSON, key = order_id. Every event carries the envelope
// {type, event_id, order_id, seq, occurred_at}; seq is strictly increasing per order with no gap or repeat,
// event_id is `${order_id}:${seq}` (stable across redelivery, so consumers can deduplicate on it).
// command.rejected for a command that names no existing order carries seq 0: it is not part of an order's history.
import { z } from 'zod';

const isoTime = z.string().describe('ISO 8601 UTC timestamp');
const decimal = z.string().describe('decimal string');

const envelope = {
  event_id: z.string(),
  order_id: z.string().nullable(),
  seq: z.number().int().min(0),
  occurred_at: isoTime,
};

export const orderQuotedEvent = z.object({
  type: z.literal('order.quoted'),
  ...envelope,
  rate_id: z.string(),
  rate: decimal,
  expires_at: isoTime.nullable(),
  deposit_amount: decimal.nullable().optional(),
  withdraw_amount: decimal.nullable().optional(),
});

export const orderCreatedEvent = z.object({
  type: z.literal('order.created'),
  ...envelope,
  unique_reference: z.string(),
  deposit_address: z.string(),
  deposit_address_extra_id: z.string(),
  deposit_amount: decimal,
  withdraw_amount: decimal,
  rate: decimal,
  deadline: isoTime.nullable(),
  reused: z.boolean(),
});

export const orderDepositSubmittedEvent = z.object({
  type: z.literal('order.deposit_submitted'),
  ...envelope,
  tx_hash: z.string(),
  already_recorded: z.boolean(),
});

export const orderDepositRejectedEvent = z.object({
  type: z.literal('order.deposit_rejected'),
  ...envelope,
  tx_hash: z.string(),
  code: z.string(),
  message: z
    .string()
    .describe('why the exchange refused the hash for good; the order still awaits its deposit'),
});

export const orderStatusChangedEvent = z.object({
  type: z.literal('order.status_changed'),
  ...envelope,
  unique_reference: z.string(),
  status: z.string().describe('exchange status name, e.g. PAID'),
  previous_status: z.string().nullable(),
});

export const orderCompletedEvent = z.object({
  type: z.literal('order.completed'),
  ...envelope,
  unique_reference: z.string(),
  withdraw_transaction: z.string(),
});

export const orderRefundedEvent = z.object({
  type: z.literal('order.refunded'),
  ...envelope,
  unique_reference: z.string(),
  refund_transaction: z.string(),
});

export const orderCanceledEvent = z.object({
  type: z.literal('order.canceled'),
  ...envelope,
  unique_reference: z.string().nullable().optional(),
  reason: z.enum(['command', 'payment_window_lapsed', 'exchange']),
});

export const orderFailedEvent = z.object({
  type: z.literal('order.failed'),
  ...envelope,
  reason: z.string(),
  code: z
    .string()
    .describe(
      'stable code of the failure: a row of the exchange error classification (e.g. address_invalid, markup_over_cap, credentials_missing, referral_code_not_owned: the referral token or code is not owned by the partner of the mode API key), credentials_missing_for_mode, or http_<status> for an unexplained status; see docs/operations.md, "Dead orders"',
    ),
  message: z.string(),
});

export const kycStatusChangedEvent = z.object({
  type: z.literal('exchange.kyc_status_changed'),
  ...envelope,
  unique_reference: z.string().nullable(),
  payload: z
    .record(z.string(), z.unknown())
    .describe('the KYC webhook body as received (its shape is not documented)'),
});

export const rejectionReasons = [
  'malformed',
  'unknown_type',
  'duplicate_conflict',
  'order_exists',
  'unknown_order',
  'not_allowed',
] as const;

export const commandRejectedEvent = z.object({
  type: z.literal('command.rejected'),
  ...envelope,
  command_id: z.string().nullable(),
  command_type: z.string().nullable(),
  reason: z.enum(rejectionReasons),
  message: z.string(),
  command: z
    .unknown()
    .describe('the rejected command as received (parsed JSON, or the raw text when not JSON)'),
  source: z.object({ topic: z.string(), partition: z.number().int(), offset: z.string() }).nullable(),
});

export const orderEvent = z.discriminatedUnion('type', [
  orderQuotedEvent,
  orderCreatedEvent,
  orderDepositSubmittedEvent,
  orderDepositRejectedEvent,
  orderStatusChangedEvent,
  orderCompletedEvent,
  orderRefundedEvent,
  orderCanceledEvent,
  orderFailedEvent,
  kycStatusChangedEvent,
  commandRejectedEvent,
]);

export type OrderEvent = z.infer<typeof orderEvent>;
export type CommandRejectedEvent = z.infer<typeof commandRejectedEvent>;
export type RejectionReason = (typeof rejectionReasons)[number];
export type EventEnvelopeFields = 'event_id' | 'order_id' | 'seq' | 'occurred_at';
