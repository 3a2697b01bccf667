// Where a webhook goes once verified: the order it names is located in the state topic's view (this replica's
// partitions) or else in the routes the replicas share (another replica's order). A hint for an order this replica
// drives goes straight to its actor; any other is written to the commands topic on that order's partition (so the
// replica that owns the order polls it). A KYC notification becomes an exchange.kyc_status_changed event. All are
// best effort: polling covers a lost one.
import { webhookHintCommand } from '../contract/commands.ts';
import { kycStatusChangedEventOf } from '../contract/events.ts';
import type { OrderRecord } from '../kafka/order-state-store.ts';
import type { OutboundRecord } from '../kafka/transactional-writer.ts';
import type { WebhookReceiverDeps } from '../http/webhook-receiver.ts';

/**
 * Where each exchange order's order lives, shared by the replicas (Redis): the owner of a partition records its
 * orders' references as it reads them; a webhook for an order of another replica's partition is routed with it.
 */
export interface OrderRoutes {
  /** Best effort: a failure is logged by the implementation; the webhook of that order falls back to the poll. */
  record(uniqueReference: string, orderId: string, partition: number): void;
  locate(uniqueReference: string): Promise<{ orderId: string; partition: number } | undefined>;
  forget(uniqueReference: string): void;
}

export interface WebhookRoutingDeps {
  state: {
    get(orderId: string): OrderRecord | undefined;
    orderIdByReference(uniqueReference: string): string | null | undefined;
  };
  /** The orders of other replicas' partitions (none: only this replica's orders are routed). */
  routes?: Pick<OrderRoutes, 'locate'>;
  producer: { send(record: OutboundRecord): Promise<void> };
  /**
   * Hands a hint to an order this replica drives, in-process; false when it drives no such order (the hint then
   * goes through the commands topic to the order's partition, wherever that is). `wake: false`: only to a live
   * actor (false for an order at rest).
   */
  deliverLocally?: (
    hint: { orderId: string; status: string; receivedAt: string },
    options?: { wake?: boolean },
  ) => boolean;
  topics: { commands: string; events: string };
  now: () => number;
}

export function webhookRouting(
  deps: WebhookRoutingDeps,
): Pick<WebhookReceiverDeps, 'locate' | 'deliverLive' | 'routeHint' | 'publishKyc'> {
  const { state, routes, producer, topics } = deps;
  const { deliverLocally } = deps;
  return {
    locate: (uniqueReference) => {
      const orderId = state.orderIdByReference(uniqueReference);
      const record = orderId ? state.get(orderId) : undefined;
      if (record) return { orderId: record.order_id, partition: record.partition };
      return routes?.locate(uniqueReference);
    },
    ...(deliverLocally ? { deliverLive: (hint) => deliverLocally(hint, { wake: false }) } : {}),
    routeHint: async (hint) => {
      // The order is driven here: straight to its actor (a throw is a failed hint, answered 202 and polled anyway).
      if (deps.deliverLocally?.(hint)) return;
      await producer.send({
        topic: topics.commands,
        key: hint.orderId,
        partition: hint.partition,
        value: JSON.stringify(webhookHintCommand(hint)),
      });
    },
    publishKyc: (event) =>
      producer.send({
        topic: topics.events,
        key: event.orderId ?? event.uniqueReference ?? event.eventId,
        value: JSON.stringify(
          kycStatusChangedEventOf({ ...event, occurredAt: new Date(deps.now()).toISOString() }),
        ),
        headers: { 'event-type': 'exchange.kyc_status_changed' },
      }),
  };
}
