// Where a webhook goes once verified: the order it names is located in the state topic's view, and a hint is
// written to the commands topic on that order's partition (so the replica that owns the order polls it); a KYC
// notification becomes an exchange.kyc_status_changed event. Both are best effort: polling covers a lost one.
import type { OrderRecord } from '../kafka/order-state-store.ts';
import type { OutboundRecord } from '../kafka/transactional-writer.ts';
import type { WebhookReceiverDeps } from '../http/webhook-receiver.ts';

export interface WebhookRoutingDeps {
  state: {
    get(orderId: string): OrderRecord | undefined;
    orderIdByReference(uniqueReference: string): string | undefined;
  };
  producer: { send(record: OutboundRecord): Promise<void> };
  topics: { commands: string; events: string };
  now: () => number;
}

export function webhookRouting(
  deps: WebhookRoutingDeps,
): Pick<WebhookReceiverDeps, 'locate' | 'routeHint' | 'publishKyc'> {
  const { state, producer, topics } = deps;
  return {
    locate: (uniqueReference) => {
      const orderId = state.orderIdByReference(uniqueReference);
      const record = orderId ? state.get(orderId) : undefined;
      return record ? { orderId: record.order_id, partition: record.partition } : undefined;
    },
    routeHint: (hint) =>
      producer.send({
        topic: topics.commands,
        key: hint.orderId,
        partition: hint.partition,
        value: JSON.stringify({
          type: 'order.webhook_hint',
          command_id: hint.commandId,
          order_id: hint.orderId,
          unique_reference: hint.uniqueReference,
          status: hint.status,
          received_at: hint.receivedAt,
        }),
      }),
    publishKyc: (event) =>
      producer.send({
        topic: topics.events,
        key: event.orderId ?? event.uniqueReference ?? event.eventId,
        value: JSON.stringify({
          type: 'exchange.kyc_status_changed',
          event_id: event.eventId,
          order_id: event.orderId,
          seq: 0,
          occurred_at: new Date(deps.now()).toISOString(),
          unique_reference: event.uniqueReference,
          payload: event.payload,
        }),
        headers: { 'event-type': 'exchange.kyc_status_changed' },
      }),
  };
}
