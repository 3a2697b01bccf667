// fast-check generators of hostile inputs: Kafka commands (value and key), webhook deliveries (body and headers),
// and exchange responses (status, headers, body). Most are near misses of a valid input (one field replaced,
// dropped or added; a wrong key; a signature off by one timestamp), because those reach deepest.
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import { addresses } from '../support/addresses.ts';
import { modeSpecs } from '../support/order-specs.ts';

export interface FuzzedCommand {
  /** Kafka message value (null = tombstone). */
  value: Buffer | null;
  /** Kafka message key (null = none). */
  key: string | null;
  /** How the input was made, for failure reports. */
  shape: string;
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '0',
    '-1',
    '1e400',
    'NaN',
    '0x10',
    '1.',
    '.5',
    '٣',
    '__proto__',
    'constructor',
  ),
  fc.string({ minLength: 129, maxLength: 400 }),
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);

function baseCommands(orderId: string): Record<string, unknown>[] {
  const creates = modeSpecs.map(({ base, ...fields }) => ({
    type: 'order.create',
    command_id: `${orderId}-c`,
    order_id: orderId,
    ...fields,
    deposit_amount: String(base),
  }));
  return [
    ...creates,
    { ...creates[1], withdraw_address_extra_id: '', refund_address: addresses.btc, markup: 10, side: 'BUY' },
    { ...creates[1], limit_order: { ttl_seconds: 600 }, pre_screening: { ip: '192.0.2.1' } },
    {
      type: 'order.submit_deposit',
      command_id: `${orderId}-d`,
      order_id: orderId,
      tx_hash: `0x${'a'.repeat(64)}`,
    },
    { type: 'order.cancel', command_id: `${orderId}-x`, order_id: orderId },
    {
      type: 'order.webhook_hint',
      command_id: `${orderId}-h`,
      order_id: orderId,
      unique_reference: 'ABCDEFGHIJ',
      status: 'PAID',
      received_at: '2026-11-23T00:00:00.000Z',
    },
  ];
}

type Mutation = (command: Record<string, unknown>) => fc.Arbitrary<{ command: unknown; shape: string }>;

const mutations: Mutation[] = [
  (c) =>
    fc
      .tuple(fc.constantFrom(...Object.keys(c)), hostileValue)
      .map(([field, value]) => ({ command: { ...c, [field]: value }, shape: `replace ${field}` })),
  (c) =>
    fc.constantFrom(...Object.keys(c)).map((field) => {
      const { [field]: _dropped, ...rest } = c;
      return { command: rest, shape: `drop ${field}` };
    }),
  (c) =>
    fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), hostileValue).map(([field, value]) => ({
      command: { ...c, [field]: value },
      shape: `add ${JSON.stringify(field)}`,
    })),
  (c) =>
    fc
      .constantFrom('withdraw_amount', 'deposit_amount')
      .map((field) => ({ command: { ...c, [field]: '1' }, shape: `both amounts via ${field}` })),
  (c) =>
    fc
      .constantFrom(
        'order.create',
        'order.cancel',
        'order.submit_deposit',
        'order.webhook_hint',
        'order.settle',
        'ORDER.CREATE',
      )
      .map((type) => ({ command: { ...c, type }, shape: `type ${type}` })),
  (c) => fc.constant({ command: [c], shape: 'wrapped in an array' }),
];

/** A Kafka command message: mostly near misses of valid commands, some plain garbage. */
export function fuzzedCommand(orderId: fc.Arbitrary<string>): fc.Arbitrary<FuzzedCommand> {
  const nearMiss = orderId.chain((id) =>
    fc
      .tuple(
        fc.constantFrom(...baseCommands(id)),
        fc.constantFrom(...mutations.keys()),
        fc.oneof(
          { weight: 6, arbitrary: fc.constant<'order_id' | 'none' | 'other'>('order_id') },
          fc.constantFrom<'order_id' | 'none' | 'other'>('none', 'other'),
        ),
        hostileString,
      )
      .chain(([command, mutation, keyKind, otherKey]) =>
        mutations[mutation]!(command).map(({ command: mutated, shape }) => ({
          value: Buffer.from(JSON.stringify(mutated)),
          key: keyKind === 'order_id' ? id : keyKind === 'none' ? null : otherKey,
          shape: `${String(command['type'])}: ${shape}, key ${keyKind}`,
        })),
      ),
  );
  const garbage = fc
    .tuple(
      fc.oneof(
        fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
        fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
        fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
        fc.constant(null),
      ),
      fc.option(hostileString, { nil: null }),
    )
    .map(([value, key]) => ({ value, key, shape: 'garbage' }));
  return fc.oneof({ weight: 4, arbitrary: nearMiss }, { weight: 1, arbitrary: garbage });
}

/** The document's signature: HMAC-SHA256 over "<timestamp>.<raw body>", hex, prefixed "sha256=". */
function signDelivery(secret: string, body: Buffer, timestampSeconds: number): Record<string, string> {
  const timestamp = String(timestampSeconds);
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return { 'x-webhook-timestamp': timestamp, 'x-webhook-signature': `sha256=${mac}` };
}

export interface FuzzedWebhook {
  body: Buffer;
  /** The delivery's headers when sent at `nowSeconds` (Unix seconds). */
  headersAt: (nowSeconds: number) => Record<string, string>;
  /** Whether the signature is valid and within the timestamp tolerance (then the worker must not answer 401). */
  signedInTolerance: boolean;
  shape: string;
}

const statuses = [
  'INITIAL',
  'UNCONFIRMED PAYMENT',
  'PAID',
  'PRE-RELEASE',
  'RELEASED',
  'COMPLETED',
  'REFUNDED',
  'CANCELED',
];

function webhookBody(reference: string): Record<string, unknown> {
  return {
    id: `wh-${reference}`,
    unique_reference: reference,
    created_on: '2026-11-23T00:00:00Z',
    side: 'BUY',
    status: 'PAID',
    deposit_amount: '1.00000000',
    withdraw_amount: '0.05000000',
    deposit_currency: 'ETH',
    withdraw_currency: 'BTC',
    deposit_address: '0xdeposit',
    deposit_address_extra_id: '',
    withdraw_address: addresses.btc,
    withdraw_address_extra_id: '',
    refund_address: '',
    refund_address_extra_id: '',
    payment_window_minutes: 60,
    fixed_rate_deadline: '2026-11-23T01:00:00Z',
    rate: '0.05000000',
    deposit_transaction: '',
    withdraw_transaction: '',
    refund_transaction: '',
  };
}

/** A webhook delivery: a (mutated) order body, signed right, wrong, stale, skewed or not at all. */
export function fuzzedWebhook(opts: { secret: string; references: string[] }): fc.Arbitrary<FuzzedWebhook> {
  const bodies = fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...opts.references),
          fc.constantFrom(...statuses),
          fc.nat(4),
          hostileValue,
          fc.string({ maxLength: 10 }),
          fc.nat(),
        )
        .map(([reference, status, how, value, field, pick]) => {
          const body: Record<string, unknown> = { ...webhookBody(reference), status };
          const keys = Object.keys(body);
          const target = keys[pick % keys.length]!;
          if (how === 1) body[target] = value;
          if (how === 2) delete body[target];
          if (how === 3) body[field] = value;
          return { body: Buffer.from(JSON.stringify(how === 4 ? [body] : body)), shape: `order body ${how}` };
        }),
    },
    fc
      .jsonValue({ maxDepth: 3 })
      .map((v) => ({ body: Buffer.from(JSON.stringify(v) ?? 'null'), shape: 'json' })),
    fc.uint8Array({ maxLength: 300 }).map((b) => ({ body: Buffer.from(b), shape: 'bytes' })),
    fc.constant({
      body: Buffer.from(JSON.stringify({ kyc_status: 'approved', unique_reference: opts.references[0] })),
      shape: 'kyc-like',
    }),
  );
  const signing = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.integer({ min: -250, max: 250 }).map((skew) => ({ kind: 'valid' as const, skew })),
    },
    fc.integer({ min: 320, max: 100_000 }).map((skew) => ({ kind: 'stale' as const, skew })),
    fc.integer({ min: 320, max: 100_000 }).map((skew) => ({ kind: 'future' as const, skew })),
    fc
      .constantFrom('missing', 'wrong_secret', 'tampered', 'no_prefix', 'bad_timestamp')
      .map((kind) => ({ kind, skew: 0 })),
  );
  return fc
    .tuple(
      bodies,
      signing,
      fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8'),
    )
    .map(([{ body, shape }, sign, contentType]) => ({
      body,
      // Signed when sent, not when generated: a skew is relative to the moment of delivery.
      headersAt: (now: number): Record<string, string> => {
        const at = sign.kind === 'stale' ? now - sign.skew : now + sign.skew;
        const signed = signDelivery(sign.kind === 'wrong_secret' ? `${opts.secret}x` : opts.secret, body, at);
        const headers: Record<string, string> = { 'content-type': contentType, ...signed };
        if (sign.kind === 'missing') {
          delete headers['x-webhook-signature'];
          delete headers['x-webhook-timestamp'];
        }
        if (sign.kind === 'tampered') headers['x-webhook-timestamp'] = String(at + 1);
        if (sign.kind === 'no_prefix')
          headers['x-webhook-signature'] = (signed['x-webhook-signature'] ?? '').slice(7);
        if (sign.kind === 'bad_timestamp') headers['x-webhook-timestamp'] = `${at}.5`;
        return headers;
      },
      signedInTolerance: sign.kind === 'valid',
      shape: `${shape}, ${sign.kind} ${sign.skew}`,
    }));
}

export interface FuzzedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  shape: string;
}

/** An exchange response to any call: valid fixtures with fields broken, documented errors, garbage. */
export function fuzzedExchangeResponse(fixtures: Record<string, unknown>[]): fc.Arbitrary<FuzzedResponse> {
  const status = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(200, 201) },
    fc.constantFrom(204, 301, 400, 401, 403, 404, 408, 409, 417, 429, 500, 502, 503, 504),
    fc.integer({ min: 200, max: 599 }),
  );
  const headers = fc.oneof(
    fc.constant<Record<string, string>>({}),
    fc
      .oneof(
        fc.nat(100_000).map(String),
        hostileString.map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
        fc.constant('Wed, 21 Oct 2015 07:28:00 GMT'),
      )
      .map((value) => ({ 'retry-after': value })),
  );
  const body = fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...fixtures), fc.nat(3), hostileValue, fc.string({ maxLength: 10 }), fc.nat())
        .map(([fixture, how, value, field, pick]) => {
          const copy: Record<string, unknown> = { ...fixture };
          const keys = Object.keys(copy);
          const target = keys[pick % keys.length]!;
          if (how === 1) copy[target] = value;
          if (how === 2) delete copy[target];
          if (how === 3) copy[field] = value;
          return JSON.stringify(copy);
        }),
    },
    fc.constantFrom(...fixtures).map((f) => JSON.stringify([f])),
    fc
      .tuple(
        fc.option(hostileString, { nil: undefined }),
        fc.option(fc.dictionary(fc.string({ maxLength: 10 }), fc.array(hostileString, { maxLength: 2 })), {
          nil: undefined,
        }),
      )
      .map(([detail, errors]) => JSON.stringify({ detail, errors })),
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? ''),
    fc.string({ maxLength: 100 }),
  );
  return fc
    .tuple(status, headers, body)
    .map(([s, h, b]) => ({ status: s, headers: h, body: b, shape: `${s}` }));
}
