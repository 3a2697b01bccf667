import { describe, expect, it } from 'vitest';
import { parseOrderWebhook } from '../../../src/exchange/order-webhook.ts';
import {
  signWebhook,
  verifyWebhookSignature,
  webhookVerifier,
} from '../../../src/exchange/webhook-signature.ts';
import { v1OrderFixture } from '../../support/exchange/v1-fixtures.ts';

const secret = 'whsec-SECRET-0005';
const now = Date.parse('2026-11-22T06:00:00Z');
const nowSeconds = now / 1000;

function v2Body(): string {
  return JSON.stringify({
    id: 'dlv-1',
    unique_reference: 'ORD9',
    created_on: '2026-11-22T05:00:00Z',
    side: 'BUY',
    status: 'PAID',
    deposit_amount: '0.10000000',
    withdraw_amount: '1.00000000',
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    deposit_address: 'bc1q',
    deposit_address_extra_id: '',
    withdraw_address: '0xabc',
    withdraw_address_extra_id: '',
    refund_address: '',
    refund_address_extra_id: '',
    payment_window_minutes: 60,
    fixed_rate_deadline: '2026-11-22T06:00:00Z',
    rate: '10.00000000',
    deposit_transaction: 'h1',
    withdraw_transaction: '',
    refund_transaction: '',
  });
}

describe('webhook signature', () => {
  it('accepts what signWebhook produced, over the raw bytes', () => {
    const raw = Buffer.from(v2Body(), 'utf8');
    const headers = signWebhook(secret, raw, nowSeconds);
    expect(headers['x-webhook-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    const result = verifyWebhookSignature({
      secret,
      rawBody: raw,
      timestamp: headers['x-webhook-timestamp'],
      signature: headers['x-webhook-signature'],
      nowMs: now,
    });
    expect(result).toEqual({ ok: true, timestampSeconds: nowSeconds, secretIndex: 0 });
  });

  it('rejects a body re-serialised after parsing (whitespace changed), a wrong secret and a tampered timestamp', () => {
    const raw = '{"id": "a",  "status": "PAID"}';
    const headers = signWebhook(secret, raw, nowSeconds);
    const base = {
      secret,
      timestamp: headers['x-webhook-timestamp'],
      signature: headers['x-webhook-signature'],
      nowMs: now,
    };
    expect(verifyWebhookSignature({ ...base, rawBody: JSON.stringify(JSON.parse(raw)) })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(verifyWebhookSignature({ ...base, rawBody: raw, secret: 'other' })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(verifyWebhookSignature({ ...base, rawBody: raw, timestamp: String(nowSeconds - 1) })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it('allows about five minutes of skew and no more', () => {
    const raw = v2Body();
    const at = (seconds: number) => {
      const headers = signWebhook(secret, raw, seconds);
      return verifyWebhookSignature({
        secret,
        rawBody: raw,
        timestamp: headers['x-webhook-timestamp'],
        signature: headers['x-webhook-signature'],
        nowMs: now,
      });
    };
    expect(at(nowSeconds - 299).ok).toBe(true);
    expect(at(nowSeconds - 301)).toEqual({ ok: false, reason: 'stale' });
    expect(at(nowSeconds + 301)).toEqual({ ok: false, reason: 'stale' });
  });

  it("binds a secret into the receiver's verify(rawBody, headers) shape", () => {
    const raw = Buffer.from(v2Body());
    const verify = webhookVerifier(secret, { now: () => now });
    expect(verify(raw, signWebhook(secret, raw, nowSeconds)).ok).toBe(true);
    expect(verify(raw, { ...signWebhook('other', raw, nowSeconds) })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(verify(raw, {})).toEqual({ ok: false, reason: 'missing' });
  });

  it('accepts a delivery signed with any of several secrets (per configuration, or during a rotation)', () => {
    const raw = Buffer.from(v2Body());
    const secrets = ['whsec-v2-config-0001', 'whsec-v1-config-0002', 'whsec-rotated-0003'];
    const verify = webhookVerifier(secrets, { now: () => now });
    secrets.forEach((one, index) =>
      expect(verify(raw, signWebhook(one, raw, nowSeconds))).toEqual({
        ok: true,
        timestampSeconds: nowSeconds,
        secretIndex: index,
      }),
    );
    expect(verify(raw, signWebhook('whsec-retired-0000', raw, nowSeconds))).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(
      webhookVerifier([], { now: () => now })(raw, signWebhook(secrets[0] ?? '', raw, nowSeconds)),
    ).toEqual({ ok: false, reason: 'mismatch' });
  });

  it('rejects missing and malformed headers without comparing', () => {
    const raw = v2Body();
    expect(
      verifyWebhookSignature({
        secret,
        rawBody: raw,
        timestamp: undefined,
        signature: 'sha256=00',
        nowMs: now,
      }),
    ).toEqual({ ok: false, reason: 'missing' });
    expect(
      verifyWebhookSignature({
        secret,
        rawBody: raw,
        timestamp: String(nowSeconds),
        signature: 'md5=abc',
        nowMs: now,
      }),
    ).toEqual({ ok: false, reason: 'malformed' });
    expect(
      verifyWebhookSignature({
        secret,
        rawBody: raw,
        timestamp: 'yesterday',
        signature: `sha256=${'0'.repeat(64)}`,
        nowMs: now,
      }),
    ).toEqual({ ok: false, reason: 'malformed' });
  });
});

describe('order webhook payloads', () => {
  it('reads a v2 payload with its delivery id and dedupe key', () => {
    const hook = parseOrderWebhook(v2Body());
    expect(hook).toMatchObject({
      version: 'v2',
      deliveryId: 'dlv-1',
      dedupeKey: 'ORD9:PAID',
      order: { uniqueReference: 'ORD9', depositAmount: '0.10000000' },
    });
  });

  it('reads a v1 payload into the same model', () => {
    const hook = parseOrderWebhook(Buffer.from(JSON.stringify(v1OrderFixture())));
    expect(hook).toMatchObject({
      version: 'v1',
      deliveryId: undefined,
      dedupeKey: 'V1REF42:PAID',
      order: { side: 'BUY', depositCurrency: 'BTC', withdrawAmount: '1.234567890000000000' },
    });
  });

  it('names the field of a malformed payload and refuses non-JSON', () => {
    const body = JSON.parse(v2Body()) as Record<string, unknown>;
    delete body['unique_reference'];
    expect(() => parseOrderWebhook(JSON.stringify(body))).toThrow(/v2 webhook: field "unique_reference"/);
    expect(() => parseOrderWebhook('not json')).toThrow(/not JSON/);
    expect(() => parseOrderWebhook(JSON.stringify(v1OrderFixture()), 'v2')).toThrow(/v2 webhook/);
  });
});
