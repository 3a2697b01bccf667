// Webhook verification: HMAC-SHA256 keyed with the signing secret over `<timestamp>.<raw_body>`, computed on the
// raw bytes before any JSON parsing, compared in constant time, with about five minutes of timestamp tolerance.
// Several secrets may be valid at once (each webhook configuration - v1 and v2 payloads - has its own, and a
// rotation keeps the old one for a while): every secret is tried, all of them every time, so the time taken says
// nothing about which one (if any) matched. Invariants: no secret and no expected signature ever appears in a
// result or an error; a result names a matching secret only by its position in the list.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const webhookTimestampHeader = 'x-webhook-timestamp';
export const webhookSignatureHeader = 'x-webhook-signature';
export const defaultWebhookToleranceMs = 5 * 60_000;

function hmac(secret: string, timestamp: string, rawBody: string | Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(rawBody).digest();
}

/** Signs like the exchange does; for tests and the sandbox. */
export function signWebhook(
  secret: string,
  rawBody: string | Uint8Array,
  timestampSeconds: number,
): { [webhookTimestampHeader]: string; [webhookSignatureHeader]: string } {
  const timestamp = String(Math.floor(timestampSeconds));
  return {
    [webhookTimestampHeader]: timestamp,
    [webhookSignatureHeader]: `sha256=${hmac(secret, timestamp, rawBody).toString('hex')}`,
  };
}

export type WebhookVerification =
  | { readonly ok: true; readonly timestampSeconds: number; readonly secretIndex: number }
  | { readonly ok: false; readonly reason: 'missing' | 'malformed' | 'stale' | 'mismatch' };

export interface VerifyWebhookInput {
  /** One signing secret, or every secret a delivery may be signed with (at least one). */
  readonly secret: string | readonly string[];
  /** The body exactly as received, before JSON parsing. */
  readonly rawBody: string | Uint8Array;
  readonly timestamp: string | undefined;
  readonly signature: string | undefined;
  readonly nowMs?: number;
  readonly toleranceMs?: number;
}

export function verifyWebhookSignature(input: VerifyWebhookInput): WebhookVerification {
  const { timestamp, signature } = input;
  if (timestamp === undefined || signature === undefined || timestamp === '' || signature === '')
    return { ok: false, reason: 'missing' };
  if (!/^\d{1,12}$/.test(timestamp.trim())) return { ok: false, reason: 'malformed' };
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(signature.trim());
  if (match?.[1] === undefined) return { ok: false, reason: 'malformed' };
  const timestampSeconds = Number(timestamp.trim());
  const ageMs = (input.nowMs ?? Date.now()) - timestampSeconds * 1000;
  if (Math.abs(ageMs) > (input.toleranceMs ?? defaultWebhookToleranceMs))
    return { ok: false, reason: 'stale' };
  const secrets = typeof input.secret === 'string' ? [input.secret] : input.secret;
  const given = Buffer.from(match[1], 'hex');
  let secretIndex = -1;
  secrets.forEach((secret, index) => {
    const expected = hmac(secret, timestamp.trim(), input.rawBody);
    // No early exit: every secret costs one HMAC and one constant-time comparison.
    const equal = given.length === expected.length && timingSafeEqual(given, expected);
    if (equal && secretIndex < 0) secretIndex = index;
  });
  return secretIndex >= 0 ? { ok: true, timestampSeconds, secretIndex } : { ok: false, reason: 'mismatch' };
}

/**
 * A verifier bound to the signing secrets, in the shape the webhook receiver takes: raw bytes and the request's
 * headers (Node lower-cases their names).
 */
export function webhookVerifier(
  secret: string | readonly string[],
  options: { readonly toleranceMs?: number; readonly now?: () => number } = {},
): (
  rawBody: Uint8Array,
  headers: Readonly<Record<string, string | string[] | undefined>>,
) => WebhookVerification {
  const first = (value: string | string[] | undefined): string | undefined =>
    Array.isArray(value) ? value[0] : value;
  return (rawBody, headers) =>
    verifyWebhookSignature({
      secret,
      rawBody,
      timestamp: first(headers[webhookTimestampHeader]),
      signature: first(headers[webhookSignatureHeader]),
      nowMs: (options.now ?? Date.now)(),
      ...(options.toleranceMs === undefined ? {} : { toleranceMs: options.toleranceMs }),
    });
}
