// Fault injection: a list of armed faults, each aimed at one endpoint (by its route name, e.g. "POST /orders/",
// "v1 GET /orders/", or "*") or at webhook deliveries. Whether a fault fires is drawn from the sandbox's seeded
// PRNG in request order, so a fault sequence replays identically for one seed and one request sequence.
import { z } from 'zod';
import { addressCases } from '../addresses/address-formats.ts';
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
      /** get_other_order: the order to answer instead (default: the newest other order). */
      otherReference: z.string().min(1).optional(),
      ...firing,
    })
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

  /** The faults of the given kinds that fire for this endpoint on this request (each drawn once). */
  endpointFaults(endpoint: string, kinds: readonly EndpointFaultKind[]): EndpointFault[] {
    const isV1 = endpoint.startsWith('v1 ');
    return this.#endpoint
      .filter((a) => kinds.includes(a.spec.kind))
      .filter((a) => a.spec.endpoint === endpoint || a.spec.endpoint === (isV1 ? 'v1 *' : '*'))
      .filter((a) => this.#fires(a))
      .map((a) => a.spec);
  }

  /** First firing fault of this kind for the endpoint, if any. */
  take(endpoint: string, kind: EndpointFaultKind): EndpointFault | undefined {
    return this.endpointFaults(endpoint, [kind])[0];
  }

  webhookFaults(webhookId: string): WebhookFault[] {
    return this.#webhook
      .filter((a) => a.spec.webhookId === undefined || a.spec.webhookId === webhookId)
      .filter((a) => this.#fires(a))
      .map((a) => a.spec);
  }
}
