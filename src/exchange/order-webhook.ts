// Order-status webhook bodies of either payload version, read into the one order model. Call it only after the
// signature has been verified on the raw bytes. Invariants: deduplication is on (unique_reference, status), not on
// the delivery id (stable per configuration and order); a webhook is a hint, the order is confirmed by GET.
import type { ExchangeOrderView } from '../../machines/domain.ts';
import { WorkerError } from '../errors.ts';
import { toOrderView } from './order-view.ts';
import { v1WebhookSchema, v2WebhookSchema } from './schemas.ts';
import { v1OrderToV2 } from './v1-mapping.ts';

export type WebhookPayloadVersion = 'v1' | 'v2';

export interface OrderWebhook {
  readonly version: WebhookPayloadVersion;
  /** The delivery `id` (v2; v1 only when present). Shared by every delivery for one order. */
  readonly deliveryId: string | undefined;
  readonly order: ExchangeOrderView;
  /** `<unique_reference>:<status>`: a redelivery has the same key. */
  readonly dedupeKey: string;
}

/** v1 bodies are recognised by their own vocabulary (status_name, amount_base, order_type). */
export function webhookPayloadVersion(body: unknown): WebhookPayloadVersion {
  if (
    typeof body === 'object' &&
    body !== null &&
    ('status_name' in body || 'amount_base' in body || 'order_type' in body)
  )
    return 'v1';
  return 'v2';
}

/** Raw bytes (already verified) -> OrderWebhook. */
export function parseOrderWebhook(
  rawBody: string | Uint8Array,
  expected?: WebhookPayloadVersion,
): OrderWebhook {
  let body: unknown;
  try {
    body = JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8'));
  } catch {
    throw new WorkerError('invalid_webhook_payload', 'webhook body is not JSON');
  }
  return readOrderWebhook(body, expected);
}

/** An already parsed order-status webhook body of either version -> OrderWebhook; errors name the field. */
export function readOrderWebhook(body: unknown, expected?: WebhookPayloadVersion): OrderWebhook {
  const version = expected ?? webhookPayloadVersion(body);
  const fail = (error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): never => {
    const issue = error.issues[0];
    const field =
      issue === undefined || issue.path.length === 0 ? '(body)' : issue.path.map(String).join('.');
    throw new WorkerError(
      'invalid_webhook_payload',
      `${version} webhook: field "${field}": ${issue?.message ?? 'invalid'}`,
    );
  };
  if (version === 'v2') {
    const parsed = v2WebhookSchema.safeParse(body);
    if (!parsed.success) return fail(parsed.error);
    const order = toOrderView(parsed.data);
    return {
      version,
      deliveryId: parsed.data.id,
      order,
      dedupeKey: `${order.uniqueReference}:${order.status}`,
    };
  }
  const parsed = v1WebhookSchema.safeParse(body);
  if (!parsed.success) return fail(parsed.error);
  const order = toOrderView(v1OrderToV2(parsed.data));
  return {
    version,
    deliveryId: parsed.data.id,
    order,
    dedupeKey: `${order.uniqueReference}:${order.status}`,
  };
}
