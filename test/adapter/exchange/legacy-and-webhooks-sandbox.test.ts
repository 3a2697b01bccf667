// Both payload versions against the sandbox: v1 and v2 webhooks of one order, verified on their raw bytes and read
// into the one order model, and the v1 REST order converted to v2 terms, checked against GET /orders/ of v2.
import { describe, expect, it } from 'vitest';
import type { ExchangeOrderView } from '../../../machines/domain.ts';
import { parseOrderWebhook } from '../../../src/exchange/order-webhook.ts';
import { toOrderView } from '../../../src/exchange/order-view.ts';
import { parseV1Order, parseV1OrderPage } from '../../../src/exchange/v1-mapping.ts';
import { webhookVerifier } from '../../../src/exchange/webhook-signature.ts';
import { demoConfig } from '../../../sandbox/index.ts';
import { sandboxClient } from '../../support/exchange/sandbox-client.ts';
import {
  EVM_ADDRESS,
  call,
  demoKeys,
  startTestSandbox,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../sandbox/helpers.ts';

const secrets = { v1: 'whsec-v1-0123456789', v2: 'whsec-v2-0123456789' };

/** Decimal strings compared by value (v1 writes 18 fractional digits, v2 8), without JavaScript numbers. */
function canonical(decimal: string): string {
  return decimal.includes('.') ? decimal.replace(/0+$/, '').replace(/\.$/, '') : decimal;
}

/** The fields both versions carry; v1 has no rate, and its payment deadline is its own. */
function comparable(view: ExchangeOrderView): Record<string, unknown> {
  return {
    ...view,
    depositAmount: canonical(view.depositAmount),
    withdrawAmount: canonical(view.withdrawAmount),
    rate: undefined,
    fixedRateDeadline: undefined,
  };
}

async function sandboxWithWebhooks(v1: WebhookReceiver, v2: WebhookReceiver) {
  const [demo, ...others] = demoConfig.partners;
  if (demo === undefined) throw new Error('demo partner missing');
  return startTestSandbox({
    partners: [
      {
        ...demo,
        webhooks: [
          { id: 'hook-v1', url: v1.url, payloadVersion: 'v1', secret: secrets.v1 },
          { id: 'hook-v2', url: v2.url, payloadVersion: 'v2', secret: secrets.v2 },
        ],
      },
      ...others,
    ],
  });
}

describe('v1 and v2 webhook payloads', () => {
  it('verifies both versions on the raw bytes and reads them into the same order model', async () => {
    const [v1, v2] = [await startWebhookReceiver(), await startWebhookReceiver()];
    const handle = await sandboxWithWebhooks(v1, v2);
    const client = sandboxClient(handle);
    const { order } = await client.createOrder('cefi', {
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      deposit_amount: '0.25',
      withdraw_address: EVM_ADDRESS,
    });
    await client.submitDepositTransaction('cefi', {
      uniqueReference: order.uniqueReference,
      depositTransaction: 'c'.repeat(64),
    });
    const statuses = handle.advanceOrder(order.uniqueReference, 'completed');
    await handle.webhooksIdle();
    expect(statuses.at(-1)).toBe('COMPLETED');

    const verify = { v1: webhookVerifier(secrets.v1), v2: webhookVerifier(secrets.v2) };
    const read = (receiver: WebhookReceiver, version: 'v1' | 'v2') =>
      receiver.received.map((hook) => {
        expect(verify[version](Buffer.from(hook.rawBody), hook.headers)).toMatchObject({ ok: true });
        expect(verify[version === 'v1' ? 'v2' : 'v1'](Buffer.from(hook.rawBody), hook.headers)).toEqual({
          ok: false,
          reason: 'mismatch',
        });
        return parseOrderWebhook(hook.rawBody);
      });
    const fromV1 = read(v1, 'v1');
    const fromV2 = read(v2, 'v2');
    expect(fromV1.map((h) => h.version)).toEqual(fromV1.map(() => 'v1'));
    expect(fromV2.map((h) => h.version)).toEqual(fromV2.map(() => 'v2'));
    expect(fromV2.map((h) => h.order.status)).toEqual(fromV1.map((h) => h.order.status));
    expect(fromV2.map((h) => h.dedupeKey)).toContain(`${order.uniqueReference}:COMPLETED`);
    expect(new Set(fromV2.map((h) => h.deliveryId)).size).toBe(1); // one id per (configuration, order)

    const confirmed = await client.getOrder('cefi', { uniqueReference: order.uniqueReference });
    const lastV1 = fromV1.at(-1)?.order;
    const lastV2 = fromV2.at(-1)?.order;
    expect(lastV2).toEqual(confirmed);
    expect(lastV1 === undefined ? undefined : comparable(lastV1)).toEqual(comparable(confirmed));
    expect(lastV1?.withdrawTransaction).not.toBe('');
    await client.close();
  });

  it('refuses a delivery signed with the wrong secret and one whose timestamp is stale', async () => {
    const [v1, v2] = [await startWebhookReceiver(), await startWebhookReceiver()];
    const handle = await sandboxWithWebhooks(v1, v2);
    const client = sandboxClient(handle);
    handle.injectFault({ target: 'webhook', webhookId: 'hook-v2', kind: 'bad_signature', times: 1 });
    handle.injectFault({
      target: 'webhook',
      webhookId: 'hook-v2',
      kind: 'stale_timestamp',
      times: 1,
      skip: 1,
    });
    const { order } = await client.createOrder('cefi', {
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      deposit_amount: '0.25',
      withdraw_address: EVM_ADDRESS,
    });
    handle.advanceOrder(order.uniqueReference, 'deposit_seen');
    handle.advanceOrder(order.uniqueReference, 'confirmed');
    handle.advanceOrder(order.uniqueReference, 'pre_release');
    await handle.webhooksIdle();
    const verify = webhookVerifier(secrets.v2);
    const verdicts = v2.received.map((hook) => verify(Buffer.from(hook.rawBody), hook.headers));
    expect(verdicts.map((v) => (v.ok ? 'ok' : v.reason))).toEqual(['mismatch', 'stale', 'ok']);
    await client.close();
  });
});

describe('v1 REST representation', () => {
  it('converts the v1 order and list envelope into what v2 GET /orders/ says', async () => {
    const handle = await startTestSandbox();
    const client = sandboxClient(handle);
    const { order } = await client.createOrder('cefi', {
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      deposit_amount: '0.3',
      withdraw_address: EVM_ADDRESS,
    });
    handle.advanceOrder(order.uniqueReference, 'refunded');
    const v2 = await client.getOrder('cefi', { uniqueReference: order.uniqueReference });
    const detail = await call(handle.v1Url, `/orders/${order.uniqueReference}/`, { key: demoKeys.cefi });
    expect(detail.status).toBe(200);
    const fromV1 = toOrderView(parseV1Order(detail.body));
    expect(comparable(fromV1)).toEqual(comparable(v2));
    expect(fromV1.status).toBe('REFUNDED');
    const list = await call(handle.v1Url, '/orders/', { key: demoKeys.cefi });
    const page = parseV1OrderPage(list.body);
    expect(page.results.map((o) => o.unique_reference)).toContain(order.uniqueReference);
    await client.close();
  });
});
