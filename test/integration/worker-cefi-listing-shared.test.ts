// The CeFi listing on two real worker processes sharing one Kafka and one Redis, the sandbox as exchange with webhooks
// switched off: GET /orders/ lists every order of the key, whichever replica drives it, so the replicas make one walk
// per interval between them (src/redis/listing-share.ts) and each confirms its own orders from it - not a walk each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';

const perPartition = 3;
const pageSize = 2;
const intervalMs = 5_000;
/** Pages of one walk: INITIAL over ceil(6 / 2) = 3 pages, each other open status (4) over one empty page. */
const pagesPerWalk = Math.ceil((2 * perPartition) / pageSize) + 4;

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({
    workers: 2,
    partitions: 2,
    env: {
      POLL_INTERVAL_MS: '30000',
      WEBHOOK_POLL_INTERVAL_MS: '30000',
      LIST_RECONCILE_INTERVAL_MS: String(intervalMs),
    },
    sandbox: (config) => ({ ...config, orders: { ...config.orders, v2PageSize: pageSize } }),
  });
  cluster.sandbox.setWebhookEnabled('worker', false);
});
afterAll(async () => {
  await cluster?.stop();
});

/** A metric's samples whose labels include every one of `labels`, summed, per worker. */
async function perWorker(name: string, labels: Record<string, string> = {}): Promise<number[]> {
  return Promise.all(
    cluster.workers.map(async (worker) => {
      const text = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
        .filter((line) => Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)))
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    }),
  );
}
const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

describe('CeFi listing shared between replicas', () => {
  it('walks the listing once per interval for both replicas, each confirming its own orders from it', async () => {
    // Three orders on each partition: each replica drives three.
    const ids: string[] = [];
    for (const partition of [0, 1])
      for (let i = 0; i < perPartition; i++) {
        const orderId = uniqueName(`shared-${partition}`);
        ids.push(orderId);
        await cluster.send(orderCreateCommand('cefi', (1.5 + ids.length / 100).toFixed(2), orderId), {
          partition,
        });
      }
    for (const orderId of ids) await cluster.collector.waitForOrderEvent(orderId, 'order.created', 60_000);
    // Both replicas drive orders (each holds one partition).
    const drivers = await perWorker('worker_active_orders');
    expect(drivers.every((count) => count > 0)).toBe(true);

    const pagesBefore = sum(await perWorker('worker_listing_pages_total', { mode: 'cefi' }));
    const confirmedBefore = await perWorker('worker_listing_orders_total', { outcome: 'confirmed' });
    const getsBefore = sum(
      await perWorker('worker_exchange_call_duration_seconds_count', { operation: 'getOrder' }),
    );
    // The window lasts at least 21 s, and longer when the replicas' walks are slow (under load): until each replica
    // has confirmed its three orders from the walks at least twice, bounded at a minute. The pages walked in it are
    // judged against its actual length.
    const windowStart = Date.now();
    const confirmedSince = async (): Promise<number[]> =>
      (await perWorker('worker_listing_orders_total', { outcome: 'confirmed' })).map(
        (count, i) => count - (confirmedBefore[i] ?? 0),
      );
    let confirmed = await confirmedSince();
    while (
      Date.now() - windowStart < 60_000 &&
      !(Date.now() - windowStart >= 21_000 && confirmed.every((count) => count >= perPartition * 2))
    ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      confirmed = await confirmedSince();
    }
    const pages = sum(await perWorker('worker_listing_pages_total', { mode: 'cefi' })) - pagesBefore;
    const windowMs = Date.now() - windowStart;

    // Each replica confirmed its own three orders from the walks, at least twice each.
    for (const count of confirmed) expect(count).toBeGreaterThanOrEqual(perPartition * 2);
    // At most one walk per interval for the two (a walk each would be at least twice as many pages).
    expect(pages).toBeGreaterThanOrEqual(pagesPerWalk * 2);
    expect(pages).toBeLessThanOrEqual(pagesPerWalk * (Math.floor(windowMs / intervalMs) + 1));
    // No order needed a GET of its own.
    expect(
      sum(await perWorker('worker_exchange_call_duration_seconds_count', { operation: 'getOrder' })),
    ).toBe(getsBefore);
    for (const orderId of ids)
      expect(cluster.collector.of(orderId).map((event) => event.type)).toEqual(['order.created']);
  });
});
