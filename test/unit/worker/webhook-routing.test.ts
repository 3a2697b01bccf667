import { describe, expect, it } from 'vitest';
import type { OutboundRecord } from '../../../src/kafka/transactional-writer.ts';
import { orderWebhookHintCommand } from '../../../src/contract/commands.ts';
import { kycStatusChangedEvent } from '../../../src/contract/events.ts';
import { webhookRouting } from '../../../src/worker/webhook-routing.ts';

function routing(local: (orderId: string, wake: boolean) => boolean | Error) {
  const sent: OutboundRecord[] = [];
  const delivered: string[] = [];
  const route = webhookRouting({
    state: { get: () => undefined, orderIdByReference: () => undefined },
    producer: {
      send: (record) => {
        sent.push(record);
        return Promise.resolve();
      },
    },
    deliverLocally: (hint, options) => {
      const answer = local(hint.orderId, options?.wake ?? true);
      if (answer instanceof Error) throw answer;
      if (answer) delivered.push(hint.orderId);
      return answer;
    },
    topics: { commands: 'commands', events: 'events' },
    now: () => 0,
  });
  return { route, sent, delivered };
}

const hint = (orderId: string) => ({
  orderId,
  partition: 3,
  uniqueReference: 'REF1',
  status: 'PAID',
  commandId: 'webhook-1',
  receivedAt: new Date(0).toISOString(),
});

describe('webhook routing', () => {
  it('hands the hint of an order driven here to it directly, with nothing written to Kafka', async () => {
    const r = routing((orderId) => orderId === 'here');
    await r.route.routeHint(hint('here'));
    expect(r.delivered).toEqual(['here']);
    expect(r.sent).toEqual([]);
  });

  it('offers a hint to live actors only without waking one at rest (deliverLive)', () => {
    // 'resting' is driven here but at rest: only a routed hint (with wake) reaches it.
    const r = routing((orderId, wake) => orderId === 'live' || (orderId === 'resting' && wake));
    expect(r.route.deliverLive?.(hint('live'))).toBe(true);
    expect(r.route.deliverLive?.(hint('resting'))).toBe(false);
    expect(r.delivered).toEqual(['live']);
    expect(r.sent).toEqual([]);
  });

  it("writes the hint of any other order to the commands topic on that order's partition", async () => {
    const r = routing(() => false);
    await r.route.routeHint(hint('elsewhere'));
    expect(r.sent).toHaveLength(1);
    expect(r.sent[0]).toMatchObject({ topic: 'commands', key: 'elsewhere', partition: 3 });
    expect(JSON.parse(r.sent[0]!.value)).toMatchObject({
      type: 'order.webhook_hint',
      order_id: 'elsewhere',
      unique_reference: 'REF1',
      status: 'PAID',
    });
  });

  it('turns a failing local delivery into a failed hint (a rejection), not a throw', async () => {
    const r = routing(() => new Error('boom'));
    const routed = r.route.routeHint(hint('here'));
    expect(routed).toBeInstanceOf(Promise);
    await expect(routed).rejects.toThrow('boom');
  });

  it('writes a hint and a KYC notice that their contract schemas accept as they are', async () => {
    const r = routing(() => false);
    await r.route.routeHint(hint('elsewhere'));
    await r.route.publishKyc({
      eventId: 'kyc-1',
      orderId: null,
      uniqueReference: 'REF1',
      payload: { status: 'verified' },
    });
    const [routed, kyc] = r.sent.map((record) => JSON.parse(record.value) as unknown);
    expect(orderWebhookHintCommand.parse(routed)).toEqual(routed);
    expect(kycStatusChangedEvent.strict().parse(kyc)).toEqual({
      type: 'exchange.kyc_status_changed',
      event_id: 'kyc-1',
      order_id: null,
      seq: 0,
      occurred_at: new Date(0).toISOString(),
      unique_reference: 'REF1',
      payload: { status: 'verified' },
    });
    expect(r.sent[1]).toMatchObject({ topic: 'events', key: 'REF1' });
  });
});
