// The command contract of TOPIC_COMMANDS: JSON, key = order_id, snake_case. Strict: an unknown field is a
// rejected command (a typo in a money-moving command must not be silently ignored).
import { z } from 'zod';
import { userTimezoneExample, userTimezonePattern } from '../exchange/user-timezone.ts';

export const decimalString = z
  .string()
  .regex(
    /^(0|[1-9]\d{0,29})(\.\d{1,18})?$/,
    'must be a decimal string such as "0.5" (no sign, exponent or spaces)',
  )
  .refine((value) => /[1-9]/.test(value), 'must be greater than zero');

const identifier = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .regex(/^[A-Za-z0-9._:@-]+$/, 'may contain letters, digits and . _ : @ - only');

const currencyCode = z
  .string()
  .min(1)
  .max(20)
  .regex(/^[A-Za-z0-9_.-]+$/, 'must be a currency code');
const address = z.string().min(1).max(256);
const extraId = z.string().max(128);

export const orderCreateCommand = z
  .object({
    type: z.literal('order.create'),
    command_id: identifier,
    order_id: identifier,
    mode: z.enum(['defi', 'cefi', 'cefi_fixed']),
    deposit_currency: currencyCode,
    withdraw_currency: currencyCode,
    deposit_amount: decimalString.optional(),
    withdraw_amount: decimalString.optional(),
    withdraw_address: address,
    withdraw_address_extra_id: extraId.optional(),
    refund_address: address.optional(),
    refund_address_extra_id: extraId.optional(),
    referral_code: z
      .string()
      .max(20, 'must be at most 20 characters')
      .regex(/^[A-Za-z0-9_-]+$/, 'must match ^[A-Za-z0-9_-]+$')
      .optional(),
    markup: z.number().int('must be an integer (basis points)').min(0).max(10_000).optional(),
    side: z.enum(['BUY', 'SELL']).optional(),
    limit_order: z
      .object({ ttl_seconds: z.number().int().min(600, 'must be at least 600 seconds') })
      .strict()
      .optional(),
    pre_screening: z
      .object({ ip: z.union([z.ipv4(), z.ipv6()]) })
      .strict()
      .optional(),
    user_timezone: z
      .string()
      .regex(userTimezonePattern, `must look like "${userTimezoneExample}" (hours 00-14, an IANA name)`)
      .describe(
        'sent as X-User-Timezone, "GMT +HH:MM (IANA name)"; checked against this pattern at intake; a zone the runtime does not know is dropped with a warning and never fails the order',
      )
      .optional(),
  })
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
 * Internal: a verified webhook, routed through the commands topic to the partition (and so the replica) that owns
 * the order. It only triggers an immediate GET; the status in it is never believed.
 */
export const orderWebhookHintCommand = z
  .object({
    type: z.literal('order.webhook_hint'),
    command_id: identifier,
    order_id: identifier,
    unique_reference: z.string().min(1),
    status: z.string().optional(),
    received_at: z.string(),
  })
  .strict();

export const commandTypes = [
  'order.create',
  'order.submit_deposit',
  'order.cancel',
  'order.webhook_hint',
] as const;

export const orderCommand = z.discriminatedUnion('type', [
  orderCreateCommand,
  orderSubmitDepositCommand,
  orderCancelCommand,
  orderWebhookHintCommand,
]);

export type OrderCreateCommand = z.infer<typeof orderCreateCommand>;
export type OrderSubmitDepositCommand = z.infer<typeof orderSubmitDepositCommand>;
export type OrderCancelCommand = z.infer<typeof orderCancelCommand>;
export type OrderWebhookHintCommand = z.infer<typeof orderWebhookHintCommand>;
export type OrderCommand = z.infer<typeof orderCommand>;

export type ParsedCommand =
  | { ok: true; command: OrderCommand }
  | {
      ok: false;
      reason: 'malformed' | 'unknown_type';
      message: string;
      orderId: string | null;
      commandId: string | null;
      commandType: string | null;
      raw: unknown;
    };

/** Parses one Kafka message value into a command, or says precisely what is wrong with it. */
export function parseCommand(value: Buffer | string | null, key: string | null): ParsedCommand {
  const text = value === null ? '' : value.toString();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return {
      ok: false,
      reason: 'malformed',
      message: 'value is not valid JSON',
      orderId: key,
      commandId: null,
      commandType: null,
      raw: text.slice(0, 2000),
    };
  }
  const record =
    typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const str = (v: unknown): string | null =>
    typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : null;
  const orderId = str(record['order_id']) ?? key;
  const commandId = str(record['command_id']);
  const commandType = str(record['type']);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return {
      ok: false,
      reason: 'malformed',
      message: 'value must be a JSON object',
      orderId,
      commandId,
      commandType,
      raw,
    };
  }
  if (!commandType || !(commandTypes as readonly string[]).includes(commandType)) {
    return {
      ok: false,
      reason: 'unknown_type',
      message: `unknown command type ${JSON.stringify(record['type'] ?? null)}; expected one of ${commandTypes.join(', ')}`,
      orderId,
      commandId,
      commandType,
      raw,
    };
  }
  const parsed = orderCommand.safeParse(raw);
  if (!parsed.success) {
    const message = parsed.error.issues
      .map((issue) => `${issue.path.length ? issue.path.join('.') : '(command)'}: ${issue.message}`)
      .join('; ');
    return { ok: false, reason: 'malformed', message, orderId, commandId, commandType, raw };
  }
  if (key !== null && key !== parsed.data.order_id) {
    return {
      ok: false,
      reason: 'malformed',
      message: `message key "${key.slice(0, 128)}" differs from order_id "${parsed.data.order_id}"`,
      orderId,
      commandId,
      commandType,
      raw,
    };
  }
  return { ok: true, command: parsed.data };
}
