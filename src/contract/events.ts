// The event contract of TOPIC_EVENTS: JSON, key = order_id. Every event carries the envelope
// {type, event_id, order_id, seq, occurred_at}; seq is strictly increasing per order with no gap or repeat,
// event_id is `${order_id}:${seq}` (stable across redelivery, so consumers can deduplicate on it).
// command.rejected for a command that names no existing order (or that arrived on another partition than its
// order's) carries seq 0: it is not part of an order's history. It never copies the command: a bounded excerpt and
// a hash identify it, so a huge command cannot make a huge event.
import { createHash } from 'node:crypto';
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

export const orderParkedEvent = z
  .object({
    type: z.literal('order.parked'),
    ...envelope,
    reason: z
      .enum(['create_outcome_unknown', 'internal_error'])
      .describe(
        'create_outcome_unknown: the exchange order may or may not exist; internal_error: the order stopped on a worker bug',
      ),
    mode: z.enum(['defi', 'cefi', 'cefi_fixed']),
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

export const orderSettleRefusedEvent = z
  .object({
    type: z.literal('order.settle_refused'),
    ...envelope,
    resolution: z.literal('adopt'),
    unique_reference: z.string(),
    code: z.string().describe('adopt_mismatch, reference_owned, or the exchange failure code'),
    message: z.string(),
  })
  .describe('An order.settle could not be carried out; the order stays parked.');

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
  'too_large',
] as const;

/** Longest `command_excerpt` of a command.rejected, in UTF-8 bytes. */
export const REJECTED_COMMAND_EXCERPT_BYTES = 512;
/**
 * Upper bound of a whole command.rejected value: excerpt, a message of at most 1024 characters, identifiers of at
 * most 256 characters each, the hash and the envelope. A rejection never copies the command it answers.
 */
export const MAX_REJECTION_EVENT_BYTES = 8_192;

/** The bounded excerpt (cut on a character boundary), hash and size of a command as received. */
export function rejectedCommandFingerprint(value: Buffer | null): {
  command_excerpt: string;
  command_sha256: string;
  command_bytes: number;
} {
  const bytes = value ?? Buffer.alloc(0);
  // Decoding a cut buffer may end in a partial character: drop the replacement character it turns into.
  let excerpt = bytes.subarray(0, REJECTED_COMMAND_EXCERPT_BYTES).toString('utf8');
  if (bytes.length > REJECTED_COMMAND_EXCERPT_BYTES) excerpt = excerpt.replace(/\uFFFD+$/, '');
  return {
    command_excerpt: excerpt,
    command_sha256: createHash('sha256').update(bytes).digest('hex'),
    command_bytes: bytes.length,
  };
}

export const commandRejectedEvent = z.object({
  type: z.literal('command.rejected'),
  ...envelope,
  command_id: z.string().max(256).nullable(),
  command_type: z.string().max(256).nullable(),
  reason: z.enum(rejectionReasons),
  message: z
    .string()
    .max(1_024)
    .describe('what is wrong, for an operator (bounded; never the whole command)'),
  command_excerpt: z
    .string()
    .max(REJECTED_COMMAND_EXCERPT_BYTES)
    .describe(
      `the first ${REJECTED_COMMAND_EXCERPT_BYTES} bytes (UTF-8) of the command as received; the whole event stays under ${MAX_REJECTION_EVENT_BYTES} bytes`,
    ),
  command_sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .describe('SHA-256 (hex) of the command value exactly as received'),
  command_bytes: z.number().int().min(0).describe('size of the command value as received'),
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
  orderParkedEvent,
  orderSettleRefusedEvent,
  orderFailedEvent,
  kycStatusChangedEvent,
  commandRejectedEvent,
]);

export type OrderEvent = z.infer<typeof orderEvent>;
export type CommandRejectedEvent = z.infer<typeof commandRejectedEvent>;
export type RejectionReason = (typeof rejectionReasons)[number];
export type EventEnvelopeFields = 'event_id' | 'order_id' | 'seq' | 'occurred_at';
