// What a webhook body is: an order-status notification (v2 or v1 payload, converted to the v2 vocabulary by the
// exchange module) or a KYC notification (its shape is not documented: recognised by its kyc/verification keys and
// passed on as received). Anything else is refused with the reason.
import { readOrderWebhook } from '../exchange/order-webhook.ts';
import type { NormalizedWebhook } from './webhook-receiver.ts';

/** An order-status webhook (v2 or v1 payload) or, failing that, a KYC notification (its shape is not documented). */
export function normalizeWebhook(body: unknown): NormalizedWebhook | { error: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { error: 'webhook body must be a JSON object' };
  const record = body as Record<string, unknown>;
  const looksLikeOrder = 'status' in record || 'status_name' in record;
  if (looksLikeOrder) {
    try {
      const parsed = readOrderWebhook(body);
      return {
        kind: 'order',
        uniqueReference: parsed.order.uniqueReference,
        status: parsed.order.status,
        payloadVersion: parsed.version,
      };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }
  const reference = typeof record['unique_reference'] === 'string' ? record['unique_reference'] : null;
  if (!('kyc' in record) && !Object.keys(record).some((key) => /kyc|verification|tier/i.test(key))) {
    return { error: 'neither an order-status payload (status / status_name) nor a KYC payload' };
  }
  return { kind: 'kyc', uniqueReference: reference, payload: record };
}
