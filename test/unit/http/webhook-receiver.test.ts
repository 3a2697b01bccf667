// The receiver's answer to each kind of delivery, with its ports as plain functions: a correctly signed delivery
// is always answered 2xx and within the bound, whatever Redis, Kafka or the body does; only a bad signature is 401.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { normalizeWebhook } from '../../../src/http/normalize-webhook.ts';
import { createWebhookReceiver, type WebhookReceiverDeps } from '../../../src/http/webhook-receiver.ts';

const order = { unique_reference: 'REF1', status: 'PAID', id: 'dlv-1' };

function harness(overrides: Partial<WebhookReceiverDeps> = {}) {
  const logs: Record<string, unknown>[] = [];
  const forgotten: string[] = [];
  const routed: string[] = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  });
  const receiver = createWebhookReceiver({
    logger,
    verify: (_raw, headers) =>
      headers['x-test-signed'] === 'yes' ? { ok: true, secretIndex: 1 } : { ok: false, reason: 'mismatch' },
    normalize: (body) =>
      typeof body === 'object' && body !== null && 'status' in body
        ? {
            kind: 'order',
            uniqueReference: String((body as Record<string, unknown>)['unique_reference']),
            status: String((body as Record<string, unknown>)['status']),
            payloadVersion: 'v2',
          }
        : normalizeWebhook(body),
    firstSeen: () => Promise.resolve(true),
    forget: (reference, status) => {
      forgotten.push(`${reference}:${status}`);
      return Promise.resolve();
    },
    locate: (reference) => (reference === 'REF1' ? { orderId: 'order-1', partition: 0 } : undefined),
    routeHint: (hint) => {
      routed.push(hint.uniqueReference);
      return Promise.resolve();
    },
    publishKyc: () => Promise.resolve(),
    now: () => Date.parse('2026-11-23T00:00:00Z'),
    answerWithinMs: 150,
    ...overrides,
  });
  const post = async (body: string | object, signed = true) => {
    const started = performance.now();
    const outcome = await receiver.handle(
      Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
      {
        'x-test-signed': signed ? 'yes' : 'no',
      },
    );
    return { ...outcome, ms: performance.now() - started };
  };
  return { receiver, post, logs, forgotten, routed };
}

const never = <T>(): Promise<T> => new Promise<T>(() => {});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('webhook receiver', () => {
  it('refuses a delivery whose signature fails with 401, and nothing else', async () => {
    const { post, receiver, routed } = harness();
    expect((await post(order, false)).status).toBe(401);
    expect(receiver.counters).toMatchObject({ received: 1, refused: 1, routed: 0 });
    expect(routed).toEqual([]);
  });

  it('acknowledges a signed body it cannot read (202) and records why, with a digest and an excerpt', async () => {
    const { post, receiver, logs } = harness();
    const garbage = await post('{"unique_reference": ');
    expect(garbage).toMatchObject({ status: 202, body: { accepted: false } });
    const unknownShape = await post({ hello: 'world' });
    expect(unknownShape).toMatchObject({ status: 202, body: { accepted: false } });
    expect(receiver.counters).toMatchObject({ received: 2, unreadable: 2, refused: 0 });
    const recorded = logs.filter((line) =>
      String(line['msg']).startsWith('signed webhook could not be read'),
    );
    expect(recorded).toHaveLength(2);
    expect(recorded[0]).toMatchObject({
      problem: 'body is not valid JSON',
      excerpt: '{"unique_reference": ',
    });
    expect(recorded[1]?.['problem']).toMatch(/neither an order-status payload/);
    expect(recorded[0]?.['sha256']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('routes a first delivery (200), answers a redelivery as a duplicate, and counts the verifying secret', async () => {
    let seen = false;
    const { post, receiver, routed } = harness({
      firstSeen: () => {
        const first = !seen;
        seen = true;
        return Promise.resolve(first);
      },
    });
    expect(await post(order)).toMatchObject({ status: 200, body: { accepted: true } });
    expect(await post(order)).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(routed).toEqual(['REF1']);
    expect(receiver.verifiedBySecret).toEqual([undefined, 2]);
  });

  it('forgets the dedupe mark and still answers 2xx when the hint cannot be written', async () => {
    const { post, receiver, forgotten, logs } = harness({
      routeHint: () => Promise.reject(new Error('kafka: not enough replicas')),
    });
    expect(await post(order)).toMatchObject({ status: 202, body: { accepted: false } });
    await sleep(0);
    expect(forgotten).toEqual(['REF1:PAID']);
    expect(receiver.counters).toMatchObject({ hintFailed: 1, routed: 0 });
    expect(
      logs.some(
        (line) =>
          (line['level'] === 50 || line['level'] === 'error') &&
          String(line['msg']).includes('hint not written'),
      ),
    ).toBe(true);
  });

  it('answers within the bound while Kafka hangs, and forgets the mark when the late send fails', async () => {
    let fail: (error: Error) => void = () => {};
    const { post, receiver, forgotten } = harness({
      routeHint: () => new Promise<void>((_resolve, reject) => (fail = reject)),
    });
    const answer = await post(order);
    expect(answer).toMatchObject({ status: 202, body: { accepted: true } });
    expect(answer.ms).toBeLessThan(1_000);
    expect(forgotten).toEqual([]);
    fail(new Error('request timed out'));
    await sleep(0);
    expect(forgotten).toEqual(['REF1:PAID']);
    expect(receiver.counters.hintFailed).toBe(1);
  });

  it('counts a late hint as routed when it lands after the answer', async () => {
    let land: () => void = () => {};
    const { post, receiver } = harness({ routeHint: () => new Promise<void>((resolve) => (land = resolve)) });
    expect((await post(order)).status).toBe(202);
    land();
    await sleep(0);
    expect(receiver.counters.routed).toBe(1);
  });

  it('hands a hint to a live actor here before the dedupe answers, and routes nothing through Kafka', async () => {
    let answerDedupe: (first: boolean) => void = () => {};
    const live: string[] = [];
    const { post, receiver, routed } = harness({
      firstSeen: () => new Promise<boolean>((resolve) => (answerDedupe = resolve)),
      deliverLive: (hint) => {
        live.push(`${hint.orderId}:${hint.status}`);
        return true;
      },
    });
    const answer = post(order);
    await sleep(0);
    // The GET it leads to does not wait for the Redis round trip.
    expect(live).toEqual(['order-1:PAID']);
    answerDedupe(true);
    expect(await answer).toMatchObject({ status: 200, body: { accepted: true } });
    expect(routed).toEqual([]);
    expect(receiver.counters).toMatchObject({ routed: 1, duplicates: 0 });
    // A redelivery reaches the actor too (its machine drops a status it knows) and is answered as a duplicate.
    const again = post(order);
    await sleep(0);
    answerDedupe(false);
    expect(await again).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(live).toHaveLength(2);
    expect(routed).toEqual([]);
    expect(receiver.counters).toMatchObject({ routed: 1, duplicates: 1 });
  });

  it('routes a hint no live actor here takes once the dedupe lets it through, and records a throwing one', async () => {
    const { post, receiver, routed, forgotten } = harness({ deliverLive: () => false });
    expect(await post(order)).toMatchObject({ status: 200, body: { accepted: true } });
    expect(routed).toEqual(['REF1']);
    const broken = harness({
      deliverLive: () => {
        throw new Error('bug');
      },
    });
    expect(await broken.post(order)).toMatchObject({ status: 202, body: { accepted: false } });
    await sleep(0);
    expect(broken.routed).toEqual([]);
    expect(broken.forgotten).toEqual(['REF1:PAID']);
    expect(broken.receiver.counters).toMatchObject({ hintFailed: 1, routed: 0 });
    expect(receiver.counters.hintFailed).toBe(0);
    expect(forgotten).toEqual([]);
  });

  it('lets a delivery through when the dedupe store hangs, still within the bound', async () => {
    const { post, routed } = harness({ firstSeen: never, answerWithinMs: 100 });
    const answer = await post(order);
    expect(answer.status).toBe(200);
    expect(answer.ms).toBeLessThan(1_000);
    expect(routed).toEqual(['REF1']);
  });

  it('answers a KYC notification within the bound even when publishing hangs', async () => {
    const { post, receiver } = harness({ publishKyc: never });
    const answer = await post({ unique_reference: 'REF1', kyc_status: 'approved' });
    expect(answer).toMatchObject({ status: 202, body: { kind: 'kyc' } });
    expect(answer.ms).toBeLessThan(1_000);
    expect(receiver.counters.kyc).toBe(0);
  });

  it('answers 202 for an unknown order, and 202 when a step of ours throws', async () => {
    const { post } = harness();
    expect((await post({ ...order, unique_reference: 'NOPE' })).status).toBe(202);
    const broken = harness({
      locate: () => {
        throw new Error('bug');
      },
    });
    expect(await broken.post(order)).toMatchObject({ status: 202, body: { accepted: false } });
  });
});
