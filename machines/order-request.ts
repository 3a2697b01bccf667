// The fields of the order.create command that describe the order, once: the zod schema the command contract
// (src/contract/commands.ts) wraps with its envelope and intake rules. From it the machine's input is inferred
// (camelCase: OrderCreateInput), the order's persisted form derived (absent = null: OrderRequest), and the create's
// input (CreateOrderInput) that the runtime maps onto the exchange's POST /orders/ in one function. zod is no I/O.

import { z } from 'zod';
import { tradingModes } from './domain.ts';

/**
 * The X-User-Timezone header, `GMT +HH:MM (Area/City)`: a sign, hours 00–14, minutes 00–59, and an IANA-shaped name
 * of 1–4 segments (src/exchange/user-timezone.ts checks it again before sending).
 */
export const userTimezonePattern =
  /^GMT [+-](?:0\d|1[0-4]):[0-5]\d \([A-Za-z][A-Za-z0-9_+-]{0,31}(?:\/[A-Za-z0-9_+-]{1,31}){0,3}\)$/;

export const userTimezoneExample = 'GMT +02:00 (Europe/Berlin)';

const decimalString = z
  .string()
  .regex(
    /^(0|[1-9]\d{0,29})(\.\d{1,18})?$/,
    'must be a decimal string such as "0.5" (no sign, exponent or spaces)',
  )
  .refine((value) => /[1-9]/.test(value), 'must be greater than zero');

const currencyCode = z
  .string()
  .min(1)
  .max(20)
  .regex(/^[A-Za-z0-9_.-]+$/, 'must be a currency code');
const address = z.string().min(1).max(256);
/**
 * The exchange network an address belongs to, by the name the exchange's network records use (e.g. "ETH", "BSC",
 * "TRX"; case-insensitive). Checked against the exchange's currency and network records before any quote.
 */
const networkName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.-]+$/, 'must be a network name such as "ETH" or "TRX"');
const extraId = z.string().max(128);

export const orderCreateFields = z.object({
  mode: z.enum(tradingModes),
  deposit_currency: currencyCode,
  withdraw_currency: currencyCode,
  deposit_amount: decimalString.optional(),
  withdraw_amount: decimalString.optional(),
  withdraw_address: address,
  withdraw_address_extra_id: extraId.optional(),
  /** Network of withdraw_address; optional, but required when the withdraw currency is on several networks. */
  withdraw_network: networkName.optional(),
  refund_address: address.optional(),
  refund_address_extra_id: extraId.optional(),
  /** Network of refund_address (the deposit currency's); only with refund_address. */
  refund_network: networkName.optional(),
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
});
export type OrderCreateFields = z.infer<typeof orderCreateFields>;

/** `snake_case` as `camelCase`, at the type level (camelKey at run time). */
type Camel<Key extends string> = Key extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<Camel<Tail>>}`
  : Key;
/** An object with its keys camelCased, nested objects too (optional and readonly as they were). */
export type CamelKeys<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { readonly [K in keyof T as K extends string ? Camel<K> : K]: CamelKeys<T[K]> }
    : T;

export function camelKey(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

/** The value with every key of its plain objects camelCased (the command's fields as the machine's input). */
export function camelKeys<T>(value: T): CamelKeys<T> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value as CamelKeys<T>;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => [camelKey(key), camelKeys(field)]),
  ) as CamelKeys<T>;
}

/** The order's fields in camelCase, as the machine takes them (OrderCreateInput adds orderId, the clock and tunables). */
export type OrderRequestFields = CamelKeys<OrderCreateFields>;
/** Every field of the request by its camelCase name (orderId first), for normalising a request (requestOf). */
export const orderRequestKeys = ['orderId', ...Object.keys(orderCreateFields.shape).map(camelKey)] as const;
