// What a run of real workers must end with: every planned order completed, exactly one exchange order each, and an
// event history with seq 1..n, no repeat, one creation and one completion, the completion last.
import { expect } from 'vitest';
import { seqProblems, type PublishedEvent } from './kafka-helpers.ts';
import type { PlannedOrder } from './order-specs.ts';
import type { Cluster } from './worker-cluster.ts';

/** Moves each created order to COMPLETED on the exchange, and waits until every order published order.completed. */
export async function completeAll(
  cluster: Cluster,
  orders: PlannedOrder[],
  timeoutMs: number,
): Promise<void> {
  const advanced = new Set<string>();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const order of orders) {
      if (advanced.has(order.orderId)) continue;
      const created = cluster.collector.of(order.orderId).find((e) => e.type === 'order.created');
      if (!created) continue;
      cluster.sandbox.advanceOrder(String(created['unique_reference']), 'completed');
      advanced.add(order.orderId);
    }
    const done = orders.filter((o) =>
      cluster.collector.of(o.orderId).some((e) => e.type === 'order.completed'),
    );
    if (done.length === orders.length) return;
    if (Date.now() > deadline) {
      const missing = orders
        .filter((o) => !done.includes(o))
        .map(
          (o) =>
            `${o.orderId}: ${cluster.collector
              .of(o.orderId)
              .map((e) => e.type)
              .join(',')}`,
        );
      throw new Error(`${orders.length - done.length} orders not completed:\n${missing.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** One exchange order per planned order (by its amount), and a clean event history for each. */
export function assertExactlyOnce(cluster: Cluster, orders: PlannedOrder[]): void {
  const exchangeOrders = cluster.sandbox.orders.list();
  for (const order of orders) {
    const onExchange = exchangeOrders.filter(
      (o) => Number(o.order['deposit_amount']) === Number(order.amount),
    );
    expect(onExchange, `exchange orders for ${order.orderId}`).toHaveLength(1);
    const events: PublishedEvent[] = cluster.collector.of(order.orderId);
    expect(seqProblems(events), `seq of ${order.orderId}`).toEqual([]);
    expect(new Set(events.map((e) => e.event_id)).size, `distinct event ids of ${order.orderId}`).toBe(
      events.length,
    );
    expect(events.filter((e) => e.type === 'order.created')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'order.completed')).toHaveLength(1);
    expect(events.at(-1)?.type).toBe('order.completed');
  }
}
