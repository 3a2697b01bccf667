// The command contract of TOPIC_COMMANDS: JSON, key = order_id, snake_case. Strict: an unknown field is a
// rejected command (a typo in a money-moving command must not be silently ignored).
import { z } from 'zod';
import { exchangeValueMaxChars } from '../../machines/domain.ts';
import { orderCreateFields } from '../../machines/order-request.ts';

const identifier = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .regex(/^[A-Za-z0-9._:@-]+$/, 'may contain letters, digits and . _ : @ - only');

export const orderCreateCommand = z
  .object({ type: z.literal('order.create'), command_id: identifier, order_id: identifier })
  .extend(orderCreateFields.shape)
  .strict()
  .superRefine((command, ctx) => {
    const amounts = [command.deposit_amount, command.withdraw_amount].filter((a) => a !== undefined).length;
    if (amounts !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['deposit_amount'],
        message: 'exactly one of deposit_amount or withdraw_amount is required',
      });
    }
    if (command.limit_order && command.mode !== 'cefi') {
      ctx.addIssue({
        code: 'custom',
        path: ['limit_order'],
        message: 'limit orders exist for CeFi flows only (mode "cefi")',
      });
    }
    if (command.refund_network !== undefined && command.refund_address === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['refund_network'],
        message: 'needs refund_address (it names the network of the refund address)',
      });
    }
    if (command.deposit_currency.toUpperCase() === command.withdraw_currency.toUpperCase()) {
      ctx.addIssue({
        code: 'custom',
        path: ['withdraw_currency'],
        message: 'must differ from deposit_currency',
      });
    }
  });

export const orderSubmitDepositCommand = z
  .object({
    type: z.literal('order.submit_deposit'),
    command_id: identifier,
    order_id: identifier,
    tx_hash: z
      .string()
      .min(8, 'must be a transaction hash')
      .max(256)
      .regex(/^[A-Za-z0-9:_-]+$/, 'must be a transaction hash'),
  })
  .strict();

export const orderCancelCommand = z
  .object({ type: z.literal('order.cancel'), command_id: identifier, order_id: identifier })
  .strict();

/**
 * Operator: settles an order parked because its create's outcome could not be established (event order.parked).
 * `adopt` names the exchange order (checked by a GET: it must match the order and belong to no other order);
 * `abandon` ends the order with order.failed (reason abandoned_by_operator) - for when no exchange order exists.
 */
export const orderSettleCommand = z.discriminatedUnion('resolution', [
  z
    .object({
      type: z.literal('order.settle'),
      command_id: identifier,
      order_id: identifier,
      resolution: z.literal('adopt'),
      unique_reference: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9_-]+$/, 'must be an exchange unique_reference'),
      note: z.string().max(500).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('order.settle'),
      command_id: identifier,
      order_id: identifier,
      resolution: z.literal('abandon'),
      note: z.string().max(500).optional(),
    })
    .strict(),
]);

/**
 * Internal: a verified webhook, routed through the commands topic to the partition (and so the replica) that owns
 * the order. It only leads to a GET (at once, or after WEBHOOK_COALESCE_MS for an open status, shared with the
 * hints that came with it); the status in it is never believed.
 */
export const orderWebhookHintCommand = z
  .object({
    type: z.literal('order.webhook_hint'),
    command_id: identifier,
    order_id: identifier,
    // Exchange text (a webhook's): within the caps an order keeps it under (machines/domain.ts).
    unique_reference: z.string().min(1).max(exchangeValueMaxChars),
    status: z.string().max(exchangeValueMaxChars).optional(),
    received_at: z.string(),
  })
  .strict();

export const commandTypes = [
  'order.create',
  'order.submit_deposit',
  'order.cancel',
  'order.webhook_hint',
  'order.settle',
] as const;

export const orderCommand = z.discriminatedUnion('type', [
  orderCreateCommand,
  orderSubmitDepositCommand,
  orderCancelCommand,
  orderWebhookHintCommand,
  orderSettleCommand,
]);

export type OrderCreateCommand = z.infer<typeof orderCreateCommand>;
export type OrderSubmitDepositCommand = z.infer<typeof orderSubmitDepositCommand>;
export type OrderCancelCommand = z.infer<typeof orderCancelCommand>;
export type OrderWebhookHintCommand = z.infer<typeof orderWebhookHintCommand>;
export type OrderSettleCommand = z.infer<typeof orderSettleCommand>;

/**
 * Whether a command as received names order.create (read without validating it: whatever it is, the host parses,
 * validates and answers it). False for anything unreadable.
 */
export function namesOrderCreate(value: Buffer | null): boolean {
  if (value === null) return false;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    return (
      typeof parsed === 'object' && parsed !== null && 'type' in parsed && parsed.type === 'order.create'
    );
  } catch {
    return false;
  }
}

/** The order.webhook_hint a verified webhook becomes, typed by its schema (only the status it names is optional). */
export function webhookHintCommand(hint: {
  commandId: string;
  orderId: string;
  uniqueReference: string;
  status?: string;
  receivedAt: string;
}): OrderWebhookHintCommand {
  const command: OrderWebhookHintCommand = {
    type: 'order.webhook_hint',
    command_id: hint.commandId,
    order_id: hint.orderId,
    unique_reference: hint.uniqueReference,
    received_at: hint.receivedAt,
  };
  if (hint.status !== undefined) command.status = hint.status;
  return command;
}
export type OrderCommand = z.infer<typeof orderCommand>;

/** Commands above this many bytes are refused before they are parsed (MAX_COMMAND_BYTES overrides it). */
export const DEFAULT_MAX_COMMAND_BYTES = 65_536;
/** Longest rejection `message`: it may quote parts of the command, which must not make the event large. */
export const MAX_REJECTION_MESSAGE_CHARS = 1_024;

export type ParsedCommand =
  | { ok: true; command: OrderCommand }
  | {
      ok: false;
      /** `unauthorized`: an operator command without a valid operator signature (src/worker/operator-authority.ts). */
      reason: 'malformed' | 'unknown_type' | 'too_large' | 'unauthorized';
      message: string;
      /** The order the command names (its order_id, else its key), when that is a plausible identifier. */
      orderId: string | null;
      commandId: string | null;
      commandType: string | null;
    };

function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** A value of the command that may be echoed: a short string, else null (never a huge or non-string value). */
function shortString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= 256 ? value : null;
}

/**
 * Parses one Kafka message value into a command, or says precisely what is wrong with it. A value above maxBytes
 * is refused unread; the message key is required and must equal order_id (the key decides the partition, and so
 * which replica drives the order). Failure messages are bounded and never echo a long value.
 */
export function parseCommand(
  value: Buffer | string | null,
  key: string | null,
  opts: { maxBytes?: number } = {},
): ParsedCommand {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_COMMAND_BYTES;
  const keyId = shortString(key);
  const failure = (
    reason: 'malformed' | 'unknown_type' | 'too_large',
    message: string,
    fields: { orderId?: string | null; commandId?: string | null; commandType?: string | null } = {},
  ): ParsedCommand => ({
    ok: false,
    reason,
    message: bounded(message, MAX_REJECTION_MESSAGE_CHARS),
    orderId: fields.orderId ?? keyId,
    commandId: fields.commandId ?? null,
    commandType: fields.commandType ?? null,
  });
  const size = value === null ? 0 : Buffer.byteLength(value);
  if (size > maxBytes)
    return failure('too_large', `command is ${size} bytes; the limit is ${maxBytes} (MAX_COMMAND_BYTES)`);
  const text = value === null ? '' : value.toString();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return failure('malformed', 'value is not valid JSON');
  }
  const record =
    typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const fields = {
    orderId: shortString(record['order_id']) ?? keyId,
    commandId: shortString(record['command_id']),
    commandType: shortString(record['type']),
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return failure('malformed', 'value must be a JSON object', fields);
  const { commandType } = fields;
  if (!commandType || !(commandTypes as readonly string[]).includes(commandType)) {
    const given = bounded(JSON.stringify(record['type'] ?? null), 64);
    return failure(
      'unknown_type',
      `unknown command type ${given}; expected one of ${commandTypes.join(', ')}`,
      fields,
    );
  }
  const parsed = orderCommand.safeParse(raw);
  if (!parsed.success) {
    const message = parsed.error.issues
      .slice(0, 10)
      .map(
        (issue) =>
          `${issue.path.length ? bounded(issue.path.join('.'), 64) : '(command)'}: ${bounded(issue.message, 200)}`,
      )
      .join('; ');
    return failure('malformed', message, fields);
  }
  if (key === null)
    return failure(
      'malformed',
      `message key is missing; it must equal order_id "${parsed.data.order_id}" (the key decides the partition)`,
      fields,
    );
  if (key !== parsed.data.order_id) {
    return failure(
      'malformed',
      `message key "${bounded(key, 128)}" differs from order_id "${parsed.data.order_id}"`,
      fields,
    );
  }
  return { ok: true, command: parsed.data };
}
