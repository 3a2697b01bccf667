// The CeFi listing on a real worker process, real Kafka and Redis, the sandbox as exchange with webhooks switched off:
// open CeFi orders are confirmed by GET /orders/?status=<code> pages (several pages per status) instead of one
// GET /orders/{ref}/ each, past their routine poll interval; a status changed at the exchange is found by the
// listing, confirmed by one GET of that order and published as order.status_changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';

const orders = 5;
const pageSize = 2;

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({
    workers: 1,
    partitions: 2,
    env: {
      POLL_INTERVAL_MS: '30000',
      WEBHOOK_POLL_INTERVAL_MS: '30000',
      LIST_RECONCILE_INTERVAL_MS: '5000',
    },
    sandbox: (config) => ({ ...config, orders: { ...config.orders, v2PageSize: pageSize } }),
  });
  // The worker learns nothing from webhooks: every status it publishes was found by the listing or a poll.
  cluster.sandbox.setWebhookEnabled('worker', false);
});
afterAll(async () => {
  await cluster?.stop();
});

/** The sum of a metric's samples whose labels include every one of `labels` (0 when none). */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${cluster.workers[0]?.metricsPort ?? 0}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

const orderGets = () => metric('worker_exchange_call_duration_seconds_count', { operation: 'getOrder' });
const listPages = () => metric('worker_listing_pages_total', { mode: 'cefi' });

describe('CeFi listing', () => {
  it('confirms open CeFi orders by listing pages instead of one GET each, and picks a changed status up with one GET', async () => {
    const ids = Array.from({ length: orders }, () => uniqueName('listed'));
    for (const [i, orderId] of ids.entries())
      await cluster.send(orderCreateCommand('cefi', (1.5 + i / 100).toFixed(2), orderId));
    const references: string[] = [];
    for (const orderId of ids)
      references.push(
        String(
          (await cluster.collector.waitForOrderEvent(orderId, 'order.created', 60_000))['unique_reference'],
        ),
      );
    const createdAt = Date.now();
    const getsAfterCreate = await orderGets();
    const pagesAfterCreate = await listPages();

    // Past every order's routine poll (30 s after its creation) and then some: confirmed by listings alone.
    await new Promise((resolve) => setTimeout(resolve, 42_000 - (Date.now() - createdAt)));
    const pages = (await listPages()) - pagesAfterCreate;
    const confirmed = await metric('worker_listing_orders_total', { outcome: 'confirmed' });
    expect(await orderGets()).toBe(getsAfterCreate);
    // Every round walks INITIAL over ceil(5 / 2) = 3 pages, and each other open status over one empty page.
    expect(pages).toBeGreaterThanOrEqual(7 * 6);
    expect(confirmed).toBeGreaterThanOrEqual(orders * 6);
    expect(await metric('worker_listing_walks_failed_total')).toBe(0);
    for (const orderId of ids)
      expect(cluster.collector.of(orderId).map((event) => event.type)).toEqual(['order.created']);

    // The exchange moves one order on, and tells nobody (webhooks are off).
    const [moved] = references;
    const [movedId] = ids;
    cluster.sandbox.advanceOrder(moved ?? '', 'deposit_seen');
    const changed = await cluster.collector.waitForOrderEvent(movedId ?? '', 'order.status_changed', 20_000);
    expect(changed).toMatchObject({ status: 'UNCONFIRMED PAYMENT', previous_status: 'INITIAL' });
    expect(await metric('worker_listing_orders_total', { outcome: 'differed' })).toBeGreaterThanOrEqual(1);
    // One GET of that order confirmed it; the others are still confirmed by the listing alone.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(await orderGets()).toBe(getsAfterCreate + 1);
    expect(
      cluster.sandbox
        .listWebhookDeliveries()
        .filter((d) => d.orderReference === moved && d.outcome === 'delivered'),
    ).toEqual([]);
  });
});
