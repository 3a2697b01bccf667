// Turns an exchange webhook into at most one immediate poll of the order it names. The signature is checked on
// the raw bytes before parsing; deliveries are deduplicated on (unique_reference, status) as the exchange asks
// (docs/exchange-api.md, "Webhooks");
// the hint is routed through the commands topic to the partition - and so the replica - that owns the order. A live
// actor of this replica takes it at once, while the mark is being set (deliverLive).
// A webhook is never believed: the owner confirms with GET /orders/{unique_reference}/.
// The exchange gives a delivery 5 s and disables an endpoint whose error rate reaches 50%, so every correctly
// signed delivery is answered 2xx, within `answerWithinMs`, whatever happens behind it: a body we cannot read is
// recorded (log line and counter) and acknowledged; a hint that cannot be routed in time is acknowledged and,
// if it fails for good, its dedupe mark is forgotten so a later delivery of the same status can try again.
// Polling every open order remains the safety net. Only a delivery that fails the signature check gets a 401.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../telemetry/logger.ts';
import type { WebhookOutcome } from './http-server.ts';

export type NormalizedWebhook =
  | { kind: 'order'; uniqueReference: string; status: string; payloadVersion: 'v1' | 'v2' }
  | { kind: 'kyc'; uniqueReference: string | null; payload: Record<string, unknown> };

export interface Located {
  orderId: string;
  partition: number;
}

export type WebhookVerdict = { ok: true; secretIndex: number } | { ok: false; reason: string };

export interface WebhookReceiverDeps {
  logger: Logger;
  /**
   * Verifies X-Webhook-Timestamp / X-Webhook-Signature over the raw body against every configured secret.
   * Undefined only when the configuration explicitly allows unsigned webhooks (WEBHOOK_ALLOW_UNSIGNED=true).
   */
  verify: ((rawBody: Buffer, headers: IncomingHttpHeaders) => WebhookVerdict) | undefined;
  normalize: (body: unknown) => NormalizedWebhook | { error: string };
  firstSeen: (uniqueReference: string, status: string) => Promise<boolean>;
  /** Drops the dedupe mark of a delivery whose hint was not routed, so a later delivery is not a "duplicate". */
  forget: (uniqueReference: string, status: string) => Promise<void>;
  /**
   * The order an exchange order belongs to and the partition it lives on: answered from this replica's own
   * partitions, else looked up (Redis). Undefined (or a failed or late lookup) drops the hint: the poll covers it.
   */
  locate: (uniqueReference: string) => Located | undefined | Promise<Located | undefined>;
  /**
   * Hands the hint at once to a live actor of this replica's (true), before the dedupe has answered: its machine
   * drops a status it already knows, so a redelivery costs nothing there, and the GET does not wait for a Redis
   * round trip (nor for a slow Redis). False (not driven here, or at rest): the hint waits for the dedupe and is
   * routed. Absent: every hint is routed.
   */
  deliverLive?: (hint: { orderId: string; status: string; receivedAt: string }) => boolean;
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
  /** The answer goes out within this long even when Redis or Kafka is slow (default 2000 ms; the exchange waits 5 s). */
  answerWithinMs?: number;
}

export interface WebhookCounters {
  received: number;
  /** Signature missing, malformed, stale or wrong: answered 401. */
  refused: number;
  /** Correctly signed but not JSON or not a recognised payload: recorded and answered 202. */
  unreadable: number;
  duplicates: number;
  routed: number;
  unknownOrder: number;
  kyc: number;
  /** A hint or KYC event that could not be written to Kafka (answered 2xx anyway; the poll covers it). */
  hintFailed: number;
}

type Settled<T> = { kind: 'done'; value: T } | { kind: 'failed'; error: unknown } | { kind: 'late' };

/** Waits for `promise` at most `ms`; a late promise keeps running and is handled by the caller's follow-up. */
async function within<T>(promise: Promise<T>, ms: number): Promise<Settled<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Settled<T>>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'late' }), Math.max(0, ms));
  });
  try {
    return await Promise.race([
      promise.then(
        (value): Settled<T> => ({ kind: 'done', value }),
        (error: unknown): Settled<T> => ({ kind: 'failed', error }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The order of a reference within the answer's deadline; a lookup that fails or is late counts as unknown. */
async function locateWithin(
  deps: Pick<WebhookReceiverDeps, 'locate'>,
  uniqueReference: string,
  ms: number,
): Promise<Located | undefined> {
  const settled = await within(
    Promise.resolve().then(() => deps.locate(uniqueReference)),
    ms,
  );
  return settled.kind === 'done' ? settled.value : undefined;
}

export function createWebhookReceiver(deps: WebhookReceiverDeps): {
  handle: (raw: Buffer, headers: IncomingHttpHeaders) => Promise<WebhookOutcome>;
  counters: WebhookCounters;
  /** Verified deliveries per position in the list of signing secrets (shows when an old secret falls silent). */
  verifiedBySecret: number[];
} {
  const counters: WebhookCounters = {
    received: 0,
    refused: 0,
    unreadable: 0,
    duplicates: 0,
    routed: 0,
    unknownOrder: 0,
    kyc: 0,
    hintFailed: 0,
  };
  const verifiedBySecret: number[] = [];
  const log = deps.logger.child({ component: 'webhooks' });
  const answerWithinMs = deps.answerWithinMs ?? 2_000;

  const unreadable = (raw: Buffer, problem: string): WebhookOutcome => {
    counters.unreadable++;
    log.warn(
      {
        problem,
        bytes: raw.length,
        sha256: createHash('sha256').update(raw).digest('hex'),
        excerpt: raw.subarray(0, 256).toString('utf8'),
      },
      'signed webhook could not be read; acknowledged (202) and recorded here',
    );
    return {
      status: 202,
      result: 'unreadable',
      body: { accepted: false, detail: `unreadable webhook recorded: ${problem}` },
    };
  };

  const forget = (uniqueReference: string, status: string): void => {
    void deps
      .forget(uniqueReference, status)
      .catch((error: unknown) =>
        log.warn(
          { uniqueReference, status, err: { message: errorText(error) } },
          'could not forget the dedupe mark of an unrouted webhook; a redelivery of this status is dropped',
        ),
      );
  };

  const hintFailed = (what: Record<string, unknown>, error: unknown): void => {
    counters.hintFailed++;
    log.error(
      { ...what, err: { message: errorText(error) } },
      'webhook hint not written to Kafka; the regular poll will confirm the order',
    );
  };

  const answerKyc = async (
    raw: Buffer,
    normalized: Extract<NormalizedWebhook, { kind: 'kyc' }>,
    deadline: number,
  ): Promise<WebhookOutcome> => {
    const located = normalized.uniqueReference
      ? await locateWithin(deps, normalized.uniqueReference, (deadline - performance.now()) / 2)
      : undefined;
    const eventId = `kyc:${createHash('sha256').update(raw).digest('hex').slice(0, 32)}`;
    const what = { kind: 'kyc', uniqueReference: normalized.uniqueReference, eventId };
    const publishing = deps.publishKyc({
      eventId,
      orderId: located?.orderId ?? null,
      uniqueReference: normalized.uniqueReference,
      payload: normalized.payload,
    });
    const settled = await within(publishing, deadline - performance.now());
    if (settled.kind === 'done') {
      counters.kyc++;
      log.info({ uniqueReference: normalized.uniqueReference }, 'KYC webhook recorded');
      return { status: 200, result: 'kyc', body: { accepted: true, kind: 'kyc' } };
    }
    if (settled.kind === 'failed') {
      hintFailed(what, settled.error);
      return {
        status: 202,
        result: 'not_routed',
        body: { accepted: false, kind: 'kyc', detail: 'could not be recorded' },
      };
    }
    publishing.then(
      () => counters.kyc++,
      (error: unknown) => hintFailed(what, error),
    );
    return { status: 202, result: 'kyc', body: { accepted: true, kind: 'kyc', detail: 'being recorded' } };
  };

  const answerOrder = async (
    normalized: Extract<NormalizedWebhook, { kind: 'order' }>,
    deadline: number,
  ): Promise<WebhookOutcome> => {
    const { uniqueReference, status } = normalized;
    const located = await locateWithin(deps, uniqueReference, (deadline - performance.now()) / 2);
    if (!located) {
      counters.unknownOrder++;
      log.warn(
        { uniqueReference, status },
        'webhook for an order this worker does not know; acknowledged and ignored',
      );
      return { status: 202, result: 'unknown_order', body: { accepted: false, detail: 'unknown order' } };
    }
    const receivedAt = new Date(deps.now()).toISOString();
    // Redis slow or down: the delivery counts as first seen (at-least-once; a hint is only a poll).
    const seenCheck = within(deps.firstSeen(uniqueReference, status), deadline - performance.now());
    // A live actor here takes the hint while the dedupe mark is being set (see deliverLive).
    let live: Settled<boolean>;
    try {
      live = {
        kind: 'done',
        value: deps.deliverLive?.({ orderId: located.orderId, status, receivedAt }) ?? false,
      };
    } catch (error) {
      live = { kind: 'failed', error };
    }
    const seen = await seenCheck;
    const what = { kind: 'order', uniqueReference, status, orderId: located.orderId };
    if (seen.kind === 'done' && !seen.value) {
      counters.duplicates++;
      // A bug of ours is recorded even for a redelivery (its mark stays: the first delivery set it).
      if (live.kind === 'failed') hintFailed(what, live.error);
      return { status: 200, result: 'duplicate', body: { accepted: true, duplicate: true } };
    }
    const routing =
      live.kind === 'failed'
        ? Promise.reject(live.error instanceof Error ? live.error : new Error(errorText(live.error)))
        : live.kind === 'done' && live.value
          ? Promise.resolve()
          : deps.routeHint({
              orderId: located.orderId,
              partition: located.partition,
              uniqueReference,
              status,
              commandId: `webhook-${randomUUID()}`,
              receivedAt,
            });
    const routed = await within(routing, deadline - performance.now());
    if (routed.kind === 'done') {
      counters.routed++;
      return { status: 200, result: 'routed', body: { accepted: true } };
    }
    if (routed.kind === 'failed') {
      hintFailed(what, routed.error);
      forget(uniqueReference, status);
      return {
        status: 202,
        result: 'not_routed',
        body: { accepted: false, detail: 'hint not routed; the order is polled anyway' },
      };
    }
    routing.then(
      () => counters.routed++,
      (error: unknown) => {
        hintFailed(what, error);
        forget(uniqueReference, status);
      },
    );
    return { status: 202, result: 'routed', body: { accepted: true, detail: 'hint being routed' } };
  };

  const handle = async (raw: Buffer, headers: IncomingHttpHeaders): Promise<WebhookOutcome> => {
    const deadline = performance.now() + answerWithinMs;
    counters.received++;
    if (deps.verify) {
      const verdict = deps.verify(raw, headers);
      if (!verdict.ok) {
        counters.refused++;
        log.warn({ reason: verdict.reason }, 'webhook refused: signature check failed');
        return {
          status: 401,
          result: 'refused',
          body: { detail: `invalid webhook signature: ${verdict.reason}` },
        };
      }
      verifiedBySecret[verdict.secretIndex] = (verifiedBySecret[verdict.secretIndex] ?? 0) + 1;
    }
    try {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return unreadable(raw, 'body is not valid JSON');
      }
      const normalized = deps.normalize(body);
      if ('error' in normalized) return unreadable(raw, normalized.error);
      return normalized.kind === 'kyc'
        ? await answerKyc(raw, normalized, deadline)
        : await answerOrder(normalized, deadline);
    } catch (error) {
      // A bug of ours must not count against the endpoint either.
      log.error({ err: { message: errorText(error) } }, 'webhook handling failed; acknowledged (202)');
      return { status: 202, result: 'failed', body: { accepted: false, detail: 'not processed' } };
    }
  };
  return { handle, counters, verifiedBySecret };
}
