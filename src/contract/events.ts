// The event contract of TOPIC_EVENTS: JSON, key = order_id. Every event carries the envelope
// {type, event_id, order_id, seq, occurred_at}; seq is strictly increasing per order with no gap or repeat,
// event_id is `${order_id}:${seq}` (stable across redelivery, so consumers can deduplicate on it).
// command.rejected for a command that names no existing order (or names one without its key, or could not be
// routed to its order's partition) carries seq 0: it is not part of an order's history. It never copies the
// command: a bounded excerpt and a hash identify it, so a huge command cannot make a huge event.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isoTime, orderDomainEvents } from '../../machines/order-events.ts';

const envelope = {
  event_id: z.string(),
  order_id: z.string().nullable(),
  seq: z.number().int().min(0),
  occurred_at: isoTime,
  command_id: z
    .string()
    .optional()
    .describe(
      'the command this event answers (src/contract/command-answers.ts); absent on an event no command caused',
    ),
};

/** A domain event of machines/order-events.ts as published: its `type`, the envelope, then its payload. */
function published<Shape extends { type: z.ZodLiteral<string> }>(payload: z.ZodObject<Shape>) {
  const event = z.object({ type: payload.shape.type }).extend(envelope).extend(payload.shape);
  return payload.description === undefined ? event : event.describe(payload.description);
}

type OrderDomainEventSchemas = typeof orderDomainEvents;
/** Every domain event of an order as published, by type (in the order of machines/order-events.ts). */
export const publishedOrderEvents = Object.fromEntries(
  Object.entries(orderDomainEvents).map(([type, payload]) => [
    type,
    published(payload as z.ZodObject<{ type: z.ZodLiteral<string> }>),
  ]),
) as unknown as {
  [T in keyof OrderDomainEventSchemas]: ReturnType<typeof published<OrderDomainEventSchemas[T]['shape']>>;
};

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
  'unroutable',
  'unauthorized',
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
  source: z
    .object({ topic: z.string(), partition: z.number().int(), offset: z.string() })
    .nullable()
    .describe("where the command was handled (for a forwarded command: its copy on its order's partition)"),
  forwarded_from: z
    .object({ topic: z.string(), partition: z.number().int(), offset: z.string() })
    .optional()
    .describe(
      'where a forwarded command first arrived, as its producer wrote it (absent when it was handled where it arrived)',
    ),
});

/** An operator's command accepted for an order, with who signed it: written before whatever the command causes. */
export const operatorCommandEvent = z
  .object({
    type: z.literal('order.operator_command'),
    ...envelope,
    command_id: z.string(),
    command_type: z.string().describe('order.settle'),
    resolution: z.enum(['adopt', 'abandon']).nullable(),
    unique_reference: z.string().nullable().describe('the exchange order named by an adopt'),
    note: z.string().nullable(),
    operator: z
      .object({
        key_id: z
          .string()
          .describe(
            'the operator key that signed the command (OPERATOR_PUBLIC_KEYS); "unsigned" in development',
          ),
        signed_at: isoTime,
      })
      .describe('who sent it'),
  })
  .describe(
    'Every operator action on an order, with who sent it; order.created, order.failed or order.settle_refused follows.',
  );

/** Everything published on TOPIC_EVENTS (an order's domain events, KYC notices, command rejections). */
export const publishedEvent = z.discriminatedUnion('type', [
  kycStatusChangedEvent,
  commandRejectedEvent,
  operatorCommandEvent,
  ...Object.values(publishedOrderEvents),
]);

export type PublishedEvent = z.infer<typeof publishedEvent>;
export type CommandRejectedEvent = z.infer<typeof commandRejectedEvent>;
export type RejectionReason = (typeof rejectionReasons)[number];
export type EventEnvelopeFields = 'event_id' | 'order_id' | 'seq' | 'occurred_at';
export type KycStatusChangedEvent = z.infer<typeof kycStatusChangedEvent>;

/** The exchange.kyc_status_changed a KYC webhook becomes (outside any order's history: seq 0), typed by its schema. */
export function kycStatusChangedEventOf(notice: {
  eventId: string;
  orderId: string | null;
  uniqueReference: string | null;
  payload: Record<string, unknown>;
  occurredAt: string;
}): KycStatusChangedEvent {
  return {
    type: 'exchange.kyc_status_changed',
    event_id: notice.eventId,
    order_id: notice.orderId,
    seq: 0,
    occurred_at: notice.occurredAt,
    unique_reference: notice.uniqueReference,
    payload: notice.payload,
  };
}
