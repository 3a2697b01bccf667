// Fault injection: a list of armed faults, each aimed at one endpoint (by its route name, e.g. "POST /orders/",
// "v1 GET /orders/", or "*") or at webhook deliveries. Whether a fault fires is drawn from the sandbox's seeded
// PRNG in request order, so a fault sequence replays identically for one seed and one request sequence.
import { z } from 'zod';
import { addressCases } from '../addresses/address-formats.ts';
import { parseDecimal, roundingModes } from './decimal.ts';
import type { SeededRandom } from './seeded-random.ts';

export const endpointFaultKinds = [
  'latency',
  'timeout',
  /** The request takes effect (an order is created) but the connection drops before any response. */
  'lost_response',
  'http_error',
  'throttle',
  'quote_provider_unavailable',
  'quote_fetch_failure',
  'expired_rate_id',
  'non_actionable_rate_id',
  'promised_rate_mismatch',
  'random_pair_exhausted',
  /** The request takes effect (an order is created), then the answer is a 5xx or 408 instead of the success. */
  'create_then_error',
  /** Withdraw and refund addresses are stored and returned in another case than submitted. */
  'normalise_address_case',
  /** A repeated DeFi POST /orders/ with the same rate_id answers "invalid or expired" although the order exists. */
  'expired_on_repeat',
  /** GET /orders/{unique_reference}/ answers another order's representation. */
  'get_other_order',
  /**
   * The exchange's risk check refuses the caller's IP before the request takes effect: 400 with Django REST
   * framework's top-level `{"non_field_errors": ["User's IP has risk."]}` (as EdgeApp's client expects on /rate/ and
   * /orders/).
   */
  'ip_risk',
  /** POST /orders/ stores (and from then on returns) its amounts rounded to fewer fractional digits. */
  'round_amounts',
  /** A first POST /orders/ answers 200 "reused" with another order's exchange order, and creates nothing. */
  'reuse_other_order',
  /** The request is dropped (or held) without an answer and takes effect only later, after the client gave up. */
  'late_landing',
] as const;
export type EndpointFaultKind = (typeof endpointFaultKinds)[number];

export const webhookFaultKinds = [
  'drop',
  'duplicate',
  'delay',
  'reorder',
  'bad_signature',
  'stale_timestamp',
  /** Signed correctly, with X-Webhook-Timestamp off the wall clock by skewSeconds (either way). */
  'skew_timestamp',
] as const;
export type WebhookFaultKind = (typeof webhookFaultKinds)[number];

const firing = {
  /** Fire at most this many times (default: until cleared). */
  times: z.int().positive().optional(),
  /** Chance of firing per matching request, drawn from the seeded PRNG (default 1). */
  probability: z.number().min(0).max(1).optional(),
  /** Let this many matching requests through first. */
  skip: z.int().nonnegative().optional(),
};

/** A value of a request body field a fault is aimed at: decimal strings compare as numbers ("1.50" = "1.5"). */
const bodyValue = z.union([z.string(), z.number(), z.boolean()]);

/** True when every field of `whenBody` is in the request body with that value (amounts compared as decimals). */
export function bodyMatches(
  whenBody: Readonly<Record<string, string | number | boolean>> | undefined,
  subject: Readonly<Record<string, unknown>> | undefined,
): boolean {
  if (whenBody === undefined) return true;
  if (subject === undefined) return false;
  return Object.entries(whenBody).every(([field, wanted]) => {
    const given = subject[field];
    if (given === wanted) return true;
    if (typeof given === 'boolean' || typeof wanted === 'boolean') return false;
    if (typeof given !== 'string' && typeof given !== 'number') return false;
    const a = parseDecimal(given);
    return a !== undefined && a === parseDecimal(wanted);
  });
}

/** Statuses create_then_error may answer: what a gateway or an overloaded server sends after the work was done. */
export const createThenErrorStatuses = [408, 500, 502, 503, 504] as const;

export const faultSpecSchema = z.discriminatedUnion('target', [
  z
    .object({
      target: z.literal('endpoint'),
      /** Route name as "METHOD /template/" (v2), "v1 METHOD /template/", "*" (any v2) or "v1 *". */
      endpoint: z.string().min(1),
      kind: z.enum(endpointFaultKinds),
      /** latency: added delay; timeout: how long to hold the request before dropping the connection. */
      latencyMs: z.int().nonnegative().optional(),
      /** http_error: the status to answer (default 503); create_then_error: 408, 500, 502, 503 (default) or 504. */
      status: z.int().min(400).max(599).optional(),
      /** throttle: Retry-After seconds, or null to omit the header (default 30). */
      retryAfterSeconds: z.int().nonnegative().nullable().optional(),
      /** normalise_address_case: how stored addresses are rewritten (default lower). */
      addressCase: z.enum(addressCases).optional(),
      /**
       * get_other_order: the order to answer instead (default: the newest other order); reuse_other_order: the
       * order to answer with (default: the newest order with the same content).
       */
      otherReference: z.string().min(1).optional(),
      /** round_amounts: fractional digits kept (default 8, the document's example shape). */
      fractionDigits: z.int().min(0).max(17).optional(),
      /** round_amounts: how the dropped digits round (default half_even, as a Django DecimalField stores). */
      rounding: z.enum(roundingModes).optional(),
      /** late_landing: how long after its arrival the request takes effect (default 10000). */
      landAfterMs: z.int().nonnegative().optional(),
      /** late_landing: how long the connection is held without an answer before it drops (default landAfterMs). */
      holdMs: z.int().nonnegative().optional(),
      /**
       * Aim the fault at requests whose JSON body has these fields with these values (e.g. one order's
       * deposit_amount); a request without a body never matches. Counted (`skip`, `times`) over matching requests.
       */
      whenBody: z.record(z.string(), bodyValue).optional(),
      ...firing,
    })
    .refine(
      (spec) =>
        spec.kind !== 'late_landing' ||
        spec.holdMs === undefined ||
        spec.holdMs <= (spec.landAfterMs ?? 10_000),
      { message: 'late_landing holdMs must not exceed landAfterMs', path: ['holdMs'] },
    )
    .refine(
      (spec) =>
        spec.kind !== 'create_then_error' ||
        spec.status === undefined ||
        (createThenErrorStatuses as readonly number[]).includes(spec.status),
      {
        message: `create_then_error status must be one of ${createThenErrorStatuses.join(', ')}`,
        path: ['status'],
      },
    ),
  z.object({
    target: z.literal('webhook'),
    kind: z.enum(webhookFaultKinds),
    /** Restrict to one webhook configuration id. */
    webhookId: z.string().optional(),
    /** delay: how long to hold the delivery. */
    delayMs: z.int().nonnegative().optional(),
    /** duplicate: how many copies of the delivery go out (default 2; a storm when large). */
    copies: z.int().min(2).max(1_000).optional(),
    /** skew_timestamp: seconds added to the signing timestamp (negative: in the past). */
    skewSeconds: z.int().min(-86_400).max(86_400).optional(),
    ...firing,
  }),
]);
export type FaultSpec = z.input<typeof faultSpecSchema>;
type ParsedFault = z.output<typeof faultSpecSchema>;
export type EndpointFault = Extract<ParsedFault, { target: 'endpoint' }>;
export type WebhookFault = Extract<ParsedFault, { target: 'webhook' }>;

interface Armed<F> {
  id: number;
  spec: F;
  seen: number;
  fired: number;
}

export interface FaultView {
  id: number;
  spec: ParsedFault;
  fired: number;
}

export class FaultBoard {
  readonly #endpoint: Armed<EndpointFault>[] = [];
  readonly #webhook: Armed<WebhookFault>[] = [];
  readonly #random: SeededRandom;
  #nextId = 1;

  constructor(random: SeededRandom) {
    this.#random = random;
  }

  inject(spec: FaultSpec): number {
    const parsed = faultSpecSchema.parse(spec);
    const id = this.#nextId++;
    if (parsed.target === 'endpoint') this.#endpoint.push({ id, spec: parsed, seen: 0, fired: 0 });
    else this.#webhook.push({ id, spec: parsed, seen: 0, fired: 0 });
    return id;
  }

  clear(): void {
    this.#endpoint.length = 0;
    this.#webhook.length = 0;
  }

  list(): FaultView[] {
    return [...this.#endpoint, ...this.#webhook].map((a) => ({ id: a.id, spec: a.spec, fired: a.fired }));
  }

  #fires<F extends ParsedFault>(armed: Armed<F>): boolean {
    if (armed.spec.times !== undefined && armed.fired >= armed.spec.times) return false;
    armed.seen++;
    if (armed.spec.skip !== undefined && armed.seen <= armed.spec.skip) return false;
    if (armed.spec.probability !== undefined && this.#random.next() >= armed.spec.probability) return false;
    armed.fired++;
    return true;
  }

  /**
   * The faults of the given kinds that fire for this endpoint on this request (each drawn once). `subject` is the
   * request's JSON body, for faults aimed with `whenBody`.
   */
  endpointFaults(
    endpoint: string,
    kinds: readonly EndpointFaultKind[],
    subject?: Readonly<Record<string, unknown>>,
  ): EndpointFault[] {
    const isV1 = endpoint.startsWith('v1 ');
    return this.#endpoint
      .filter((a) => kinds.includes(a.spec.kind))
      .filter((a) => a.spec.endpoint === endpoint || a.spec.endpoint === (isV1 ? 'v1 *' : '*'))
      .filter((a) => bodyMatches(a.spec.whenBody, subject))
      .filter((a) => this.#fires(a))
      .map((a) => a.spec);
  }

  /** First firing fault of this kind for the endpoint, if any. */
  take(
    endpoint: string,
    kind: EndpointFaultKind,
    subject?: Readonly<Record<string, unknown>>,
  ): EndpointFault | undefined {
    return this.endpointFaults(endpoint, [kind], subject)[0];
  }

  /** True when a fault of this kind is armed (whether or not it would fire). */
  armed(kind: EndpointFaultKind): boolean {
    return this.#endpoint.some((a) => a.spec.kind === kind);
  }

  webhookFaults(webhookId: string): WebhookFault[] {
    return this.#webhook
      .filter((a) => a.spec.webhookId === undefined || a.spec.webhookId === webhookId)
      .filter((a) => this.#fires(a))
      .map((a) => a.spec);
  }
}
