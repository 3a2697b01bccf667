// Wire schemas of the exchange's v2 resources (and the legacy v1 order), in zod v4; every TypeScript type of a
// wire shape is inferred from here, never written twice. Invariants: amounts are decimal strings end to end (a
// JSON number where the document promises a decimal string is a malformed field, not something to coerce); unknown
// extra fields are tolerated; where the document says "not shown" the schema states the assumption it makes (all
// of them are listed in docs/exchange-api.md, "Assumptions").
import { z } from 'zod';
import { boundedMessage, exchangeValueMaxChars } from '../../machines/domain.ts';

/**
 * A value of an exchange resource the worker keeps as written (references, statuses, currencies, addresses, hashes,
 * rate ids): at most exchangeValueMaxChars (machines/domain.ts, where the caps on exchange text are stated); a longer
 * one makes the response invalid, never cut.
 */
const value = () =>
  z.string().max(exchangeValueMaxChars, { message: `longer than ${exchangeValueMaxChars} characters` });

/** A decimal amount as the exchange writes it ("0.12345678"); never converted to a JavaScript number. */
export const decimalString = value().regex(/^-?\d+(\.\d+)?$/, {
  message: 'expected a decimal string such as "0.12345678"',
});
export type DecimalString = z.infer<typeof decimalString>;

/**
 * Times the worker turns into dates and deadlines. Values that pass a loose schema but are absurd (year 275760,
 * a payment window of 10^15 minutes) would make date arithmetic throw inside the order machine; they are invalid
 * responses instead. Assumption (the document gives no bounds): years 2000 to 2199, windows up to one year.
 */
export const plausibleTimeRangeMs = { from: Date.UTC(2000, 0, 1), to: Date.UTC(2200, 0, 1) - 1 } as const;
export const maxPaymentWindowMinutes = 366 * 24 * 60;

/** An ISO 8601 timestamp string; kept as text (the machine receives epoch ms from the runtime, not from here). */
export const timestampString = value()
  .refine((value) => !Number.isNaN(Date.parse(value)), { message: 'expected an ISO 8601 timestamp' })
  .refine(
    (value) => {
      const at = Date.parse(value);
      return at >= plausibleTimeRangeMs.from && at <= plausibleTimeRangeMs.to;
    },
    { message: 'timestamp outside the plausible range (years 2000 to 2199)' },
  );

/** "Empty optional strings are returned as empty strings": null or a missing key are read as "" too. */
const optionalText = value()
  .nullish()
  .transform((text) => text ?? '');

/**
 * A currency as it appears on an order. The document shows a code string; the public v2 client
 * (EdgeApp/edge-exchange-plugins nexchange.ts) also sends and receives `{contract_address, network}` or
 * `{code, network}` objects, so both are accepted.
 */
export const currencyRef = z.union([
  value().min(1),
  z.looseObject({
    code: value().optional(),
    network: value().optional(),
    contract_address: value().nullable().optional(),
  }),
]);
export type CurrencyRef = z.infer<typeof currencyRef>;

// ---------------------------------------------------------------------------------------------------------------
// v2 resources

/** v2 Order, detail representation (also the v2 webhook body, with a top-level `id`). */
export const orderSchema = z.object({
  unique_reference: value().min(1),
  created_on: timestampString,
  side: value().default('BUY'),
  status: value().min(1),
  deposit_amount: decimalString,
  withdraw_amount: decimalString,
  deposit_currency: currencyRef,
  withdraw_currency: currencyRef,
  deposit_address: optionalText,
  deposit_address_extra_id: optionalText,
  withdraw_address: optionalText,
  withdraw_address_extra_id: optionalText,
  refund_address: optionalText,
  refund_address_extra_id: optionalText,
  payment_window_minutes: z.number().int().min(0).max(maxPaymentWindowMinutes).nullish(),
  /** Floating orders may carry no deadline: "" (empty optional string) and null both read as null. */
  fixed_rate_deadline: z
    .union([timestampString, z.literal('')])
    .nullish()
    .transform((value) => (value === '' || value === undefined ? null : value)),
  /** A decimal string; "" is tolerated for orders that carry no rate yet. */
  rate: z.union([decimalString, z.literal('')]).nullish(),
  deposit_transaction: optionalText,
  withdraw_transaction: optionalText,
  refund_transaction: optionalText,
});
export type WireOrder = z.infer<typeof orderSchema>;

/** v2 Pair. */
export const pairSchema = z.object({
  name: z.string().min(1),
  from: z.string(),
  to: z.string(),
  disabled: z.boolean(),
});
export type WirePair = z.infer<typeof pairSchema>;
export const pairListSchema = z.array(pairSchema);

/**
 * GET /pair/random/: "request and response shape not shown". Assumption: a pair-like object; only `name` is
 * relied upon when present, everything else passes through untouched.
 */
export const randomPairSchema = z.looseObject({ name: z.string().optional() });
export type WireRandomPair = z.infer<typeof randomPairSchema>;

/**
 * v2 Rate (quote). Loose: `include_eta` adds estimated-time fields whose names the document does not show, so
 * unknown keys pass through. `withdraw_amount` is the preview returned when `deposit_amount` was supplied.
 */
export const rateSchema = z.looseObject({
  pair: value().min(1),
  from: value(),
  to: value(),
  withdrawal_fee: decimalString,
  rate: decimalString,
  rate_id: value().min(1),
  max_withdraw_amount: decimalString,
  min_withdraw_amount: decimalString,
  max_deposit_amount: decimalString,
  min_deposit_amount: decimalString,
  /** Unix seconds as a string; an integer is accepted and turned into its string. */
  expiration_time_unix: z
    .union([z.string().regex(/^\d{1,12}$/, { message: 'expected Unix seconds' }), z.number().int().min(0)])
    .transform(String)
    .refine(
      (value) =>
        Number(value) * 1000 >= plausibleTimeRangeMs.from && Number(value) * 1000 <= plausibleTimeRangeMs.to,
      { message: 'expiration_time_unix outside the plausible range (years 2000 to 2199)' },
    ),
  withdraw_amount: decimalString.optional(),
  deposit_amount: decimalString.optional(),
});
export type WireRate = z.infer<typeof rateSchema>;
export const rateListSchema = z.array(rateSchema);

/**
 * Currency and network records: "fields not shown". The assumption (docs/decisions/currency-network-records.md)
 * types only the fields the worker relies on, loosely; every other field passes through untouched. A record is a
 * currency `code` with the network(s) it is on: `network` (+ `contract_address`) as the public v2 client addresses
 * currencies, and/or `networks`, a list of names or of objects naming one (`name`, `network` or `code`) with an
 * optional `contract_address`.
 */
const networkName = z.string().min(1);
export const currencyNetworkEntrySchema = z.union([
  networkName,
  z.looseObject({
    name: networkName.optional(),
    network: networkName.optional(),
    code: networkName.optional(),
    contract_address: z.string().nullish(),
  }),
]);
export type WireCurrencyNetworkEntry = z.infer<typeof currencyNetworkEntrySchema>;
export const currencySchema = z.looseObject({
  code: z.string().min(1),
  name: z.string().nullish(),
  network: z.string().nullish(),
  contract_address: z.string().nullish(),
  networks: z.array(currencyNetworkEntrySchema).nullish(),
  is_fiat: z.boolean().nullish(),
});
export type WireCurrency = z.infer<typeof currencySchema>;
export const currencyListSchema = z.array(currencySchema);
/**
 * A network record: its `name` (or `code`), and what it says about its addresses: `is_evm`, `address_format` (a
 * family name) and `address_regex` (a shape pattern); all optional, since none is shown in the document.
 */
export const networkSchema = z
  .looseObject({
    name: networkName.optional(),
    code: networkName.optional(),
    is_evm: z.boolean().nullish(),
    address_format: z.string().nullish(),
    address_regex: z.string().nullish(),
  })
  .refine((record) => record.name !== undefined || record.code !== undefined, {
    message: 'a network record needs a name (or code)',
  });
export type WireNetwork = z.infer<typeof networkSchema>;
export const networkListSchema = z.array(networkSchema);

/**
 * GET /orders/ page. The document shows `pagination.next`/`pagination.previous` and no count, and does not name the
 * results key. Assumptions: the key is `results`; next/previous are a URL or an opaque cursor, or null; a
 * top-level `next`/`previous` (the v1 envelope's habit) is accepted as well.
 */
const pageLink = z
  .string()
  .nullish()
  .transform((value) => (value === '' || value === undefined ? null : value));
/**
 * GET /orders/ page. "Name of the results array key: not shown": `results` (the DRF convention the v1 envelope
 * uses) is expected; `orders`, `data` or `items` are accepted in its place.
 */
export const orderPageSchema = z.preprocess(
  (body) => {
    if (typeof body !== 'object' || body === null || 'results' in body) return body;
    const record = body as Record<string, unknown>;
    const key = ['orders', 'data', 'items'].find((k) => Array.isArray(record[k]));
    return key === undefined ? body : { ...record, results: record[key] };
  },
  z.object({
    results: z.array(orderSchema),
    pagination: z.object({ next: pageLink, previous: pageLink }).optional(),
    next: pageLink,
    previous: pageLink,
  }),
);
export type WireOrderPage = z.infer<typeof orderPageSchema>;

export const preScreeningResultSchema = z.object({
  status: z.enum(['success', 'failed']),
  /** Free text: cut to exchangeMessageMaxChars (machines/domain.ts boundedMessage). */
  message: z
    .string()
    .nullish()
    .transform((text) => boundedMessage(text ?? '')),
});
export type PreScreeningResult = z.infer<typeof preScreeningResultSchema>;

/**
 * Error envelope: `{detail?, errors?}` (v2), `{status, message}` (pre-screening), DRF-style field lists
 * (`{"non_field_errors": [...]}`) or a bare string. Read leniently: it only feeds the classification table.
 */
export const errorBodySchema = z.looseObject({
  detail: z.unknown().optional(),
  errors: z.unknown().optional(),
  message: z.unknown().optional(),
  status: z.unknown().optional(),
});

// ---------------------------------------------------------------------------------------------------------------
// v2 requests

export const orderSides = ['BUY', 'SELL'] as const;
export type OrderSide = (typeof orderSides)[number];

/** Body of POST /orders/. Cross-field rules (markup vs referral_rate, limit orders) live in request-rules.ts. */
export const createOrderRequestSchema = z.object({
  deposit_currency: currencyRef,
  withdraw_currency: currencyRef,
  withdraw_amount: decimalString.optional(),
  deposit_amount: decimalString.optional(),
  withdraw_address: z.string().min(1).optional(),
  /**
   * Not in the document's request table, but the order representation carries both extra ids; a careful client
   * sends them under the same names (dropping a memo/destination tag silently would lose the user's funds).
   */
  withdraw_address_extra_id: z.string().optional(),
  refund_address: z.string().optional(),
  refund_address_extra_id: z.string().optional(),
  side: z.enum(orderSides).optional(),
  rate_id: z.string().min(1).optional(),
  is_limit_order: z.boolean().optional(),
  limit_ttl: z.number().int().optional(),
  markup: z.number().int().nonnegative().optional(),
  referral_rate: decimalString.optional(),
  referral_code: z.string().optional(),
});
export type CreateOrderRequest = z.input<typeof createOrderRequestSchema>;

/** Query of GET /rate/. The contract-address selectors are named as the public v2 client sends them. */
export const rateQuerySchema = z.object({
  pairs: z.string().min(1).optional(),
  deposit_amount: decimalString.optional(),
  fiat_only: z.boolean().optional(),
  crypto_only: z.boolean().optional(),
  include_eta: z.boolean().optional(),
  actionable_quote: z.boolean().optional(),
  markup: z.number().int().nonnegative().optional(),
  referral_rate: decimalString.optional(),
  from_contract_address: z.string().optional(),
  from_network: z.string().min(1).optional(),
  to_contract_address: z.string().optional(),
  to_network: z.string().min(1).optional(),
});
export type RateQuery = z.input<typeof rateQuerySchema>;

/** Body of PATCH /orders/{unique_reference}/ (the fields the document shows). */
export const updateOrderRequestSchema = z.object({
  referral_code: z.string().optional(),
  deposit_transaction: z.string().min(1).optional(),
});
export type UpdateOrderRequest = z.input<typeof updateOrderRequestSchema>;

/** Body of POST /pre_screening/: exactly one of the two amounts (checked in request-rules.ts). */
export const preScreeningRequestSchema = z.object({
  ip: z.string().min(1),
  pair: z.string().min(1),
  deposit_amount: decimalString.optional(),
  withdraw_amount: decimalString.optional(),
});
export type PreScreeningRequest = z.input<typeof preScreeningRequestSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Legacy v1 (representations only; the worker speaks v2 and converts these in v1-mapping.ts)

const v1Currency = z.looseObject({ code: value().min(1), name: z.string().optional() });

const v1Address = z
  .looseObject({
    type: z.string().optional(),
    name: z.string().nullish(),
    address: value().nullish(),
    currency_code: z.string().nullish(),
  })
  .nullish();

const v1Transaction = z.looseObject({
  created_on: z.string().nullish(),
  modified_on: z.string().nullish(),
  /** `W` payout; assumed `D` deposit and `R` refund (nexchange's transaction types). */
  type: z.string().nullish(),
  address_to: z.unknown().optional(),
  tx_id: value().nullish(),
  confirmations: z.number().int().nullish(),
  amount: decimalString.nullish(),
  is_verified: z.boolean().nullish(),
  is_completed: z.boolean().nullish(),
  time: z.unknown().optional(),
  currency: z.unknown().optional(),
});

/** v1 Order (legacy REST representation and v1 webhook body). */
export const v1OrderSchema = z.looseObject({
  order_type: z.number().int(),
  amount_base: decimalString,
  amount_quote: decimalString,
  is_default_rule: z.boolean().optional(),
  from_default_rule: z.boolean().optional(),
  unique_reference: value().min(1),
  pair: z.looseObject({
    name: value().min(1),
    base: v1Currency,
    quote: v1Currency,
    fee_ask: decimalString.nullish(),
    fee_bid: decimalString.nullish(),
  }),
  withdraw_address: v1Address,
  deposit_address: v1Address,
  refund_address: v1Address,
  user_marked_as_paid: z.boolean().optional(),
  created_on: timestampString,
  payment_window: z.number().int().nullish(),
  payment_deadline: timestampString.nullish(),
  kyc_deadline: timestampString.nullish(),
  status_name: z.array(z.tuple([z.number().int(), value().min(1)])).min(1),
  transactions: z.array(v1Transaction).default([]),
  referral_code: z.array(z.looseObject({ code: z.string() })).optional(),
  withdrawal_fee: z.number().nullish(),
  withdrawal_fee_quote: z.number().nullish(),
  user_provided_amount: z.number().int().nullish(),
  /** Extra ids: named in the renames table, absent from the v1 field table; read when present. */
  withdraw_extra_id: value().nullish(),
  refund_extra_id: value().nullish(),
  deposit_extra_id: value().nullish(),
});
export type WireV1Order = z.infer<typeof v1OrderSchema>;

export const v1OrderPageSchema = z.object({
  count: z.number().int(),
  next: z.string().nullable(),
  previous: z.string().nullable(),
  results: z.array(v1OrderSchema),
});
export type WireV1OrderPage = z.infer<typeof v1OrderPageSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Webhook bodies

/** Order-status webhook, payload version v2: the v2 Order plus a delivery `id` (stable per configuration+order). */
export const v2WebhookSchema = orderSchema.extend({
  id: z.union([z.string(), z.number()]).transform(String),
});
export type WireV2Webhook = z.infer<typeof v2WebhookSchema>;

/** Order-status webhook, payload version v1: the v1 order representation (an `id` is kept when present). */
export const v1WebhookSchema = v1OrderSchema.extend({
  id: z.union([z.string(), z.number()]).transform(String).optional(),
});
export type WireV1Webhook = z.infer<typeof v1WebhookSchema>;
