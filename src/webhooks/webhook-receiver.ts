// Turns an exchange webhook into at most one immediate poll of the order it names. The signature is checked on
// the raw bytes before parsing; deliveries are deduplicated on (unique_reference, status) as the document asks;
// the hint is routed through the commands topic to the partition - and so the replica - that owns the order.
// A webhook is never believed: the owner confirms with GET /orders/{unique_reference}/.
// Any correctly signed delivery is answered 2xx, even for an unknown order: the exchange disables endpoints whose
// error rate reaches 50%, and a disabled endpoint would cost us every later hint.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../telemetry/logger.ts';
import type { WebhookOutcome } from './http-server.ts';

export type NormalizedWebhook =
  | { kind: 'order'; uniqueReference: string; status: string; payloadVersion: 'v1' | 'v2' }
  | { kind: 'kyc'; uniqueReference: string | null; payload: Record<string, unknown> };

export interface WebhookReceiverDeps {
  logger: Logger;
  /** Verifies X-Webhook-Timestamp / X-Webhook-Signature over the raw body; undefined secret = no verification. */
  verify:
    | ((rawBody: Buffer, headers: IncomingHttpHeaders) => { ok: true } | { ok: false; reason: string })
    | undefined;
  normalize: (body: unknown) => NormalizedWebhook | { error: string };
  firstSeen: (uniqueReference: string, status: string) => Promise<boolean>;
  forget: (uniqueReference: string, status: string) => Promise<void>;
  locate: (uniqueReference: string) => { orderId: string; partition: number } | undefined;
  routeHint: (hint: {
    orderId: string;
    partition: number;
    uniqueReference: string;
    status: string;
    commandId: string;
    receivedAt: string;
  }) => Promise<void>;
  publishKyc: (event: {
    eventId: string;
    orderId: string | null;
    uniqueReference: string | null;
    payload: Record<string, unknown>;
  }) => Promise<void>;
  now: () => number;
}

export interface WebhookCounters {
  received: number;
  refused: number;
  duplicates: number;
  routed: number;
  unknownOrder: number;
  kyc: number;
}

export function createWebhookReceiver(deps: WebhookReceiverDeps): {
  handle: (raw: Buffer, headers: IncomingHttpHeaders) => Promise<WebhookOutcome>;
  counters: WebhookCounters;
} {
  const counters: WebhookCounters = {
    received: 0,
    refused: 0,
    duplicates: 0,
    routed: 0,
    unknownOrder: 0,
    kyc: 0,
  };
  const log = deps.logger.child({ component: 'webhooks' });

  const handle = async (raw: Buffer, headers: IncomingHttpHeaders): Promise<WebhookOutcome> => {
    counters.received++;
    if (deps.verify) {
      const verdict = deps.verify(raw, headers);
      if (!verdict.ok) {
        counters.refused++;
        log.warn({ reason: verdict.reason }, 'webhook refused: signature check failed');
        return { status: 401, body: { detail: `invalid webhook signature: ${verdict.reason}` } };
      }
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      counters.refused++;
      log.warn('webhook refused: body is not JSON');
      return { status: 400, body: { detail: 'body is not valid JSON' } };
    }
    const normalized = deps.normalize(body);
    if ('error' in normalized) {
      counters.refused++;
      log.warn({ problem: normalized.error }, 'webhook refused: unrecognised payload');
      return { status: 400, body: { detail: normalized.error } };
    }
    if (normalized.kind === 'kyc') {
      counters.kyc++;
      const located = normalized.uniqueReference ? deps.locate(normalized.uniqueReference) : undefined;
      const eventId = `kyc:${createHash('sha256').update(raw).digest('hex').slice(0, 32)}`;
      await deps.publishKyc({
        eventId,
        orderId: located?.orderId ?? null,
        uniqueReference: normalized.uniqueReference,
        payload: normalized.payload,
      });
      log.info({ uniqueReference: normalized.uniqueReference }, 'KYC webhook recorded');
      return { status: 200, body: { accepted: true, kind: 'kyc' } };
    }
    const { uniqueReference, status } = normalized;
    const located = deps.locate(uniqueReference);
    if (!located) {
      counters.unknownOrder++;
      log.warn(
        { uniqueReference, status },
        'webhook for an order this worker does not know; acknowledged and ignored',
      );
      return { status: 202, body: { accepted: false, detail: 'unknown order' } };
    }
    if (!(await deps.firstSeen(uniqueReference, status))) {
      counters.duplicates++;
      return { status: 200, body: { accepted: true, duplicate: true } };
    }
    try {
      await deps.routeHint({
        orderId: located.orderId,
        partition: located.partition,
        uniqueReference,
        status,
        commandId: `webhook-${randomUUID()}`,
        receivedAt: new Date(deps.now()).toISOString(),
      });
    } catch (error) {
      await deps.forget(uniqueReference, status).catch(() => {});
      throw error;
    }
    counters.routed++;
    return { status: 200, body: { accepted: true } };
  };
  return { handle, counters };
}
