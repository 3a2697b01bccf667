// The worst bug we can ship is a second exchange order. Here the exchange creates the order but the response is
// lost on the way back (the connection drops): the worker must find out what happened before any repeat.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modeSpecs } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
});
afterAll(async () => {
  await cluster?.stop();
});

describe('a lost response to POST /orders/', () => {
  for (const [index, spec] of modeSpecs.entries()) {
    it(`never creates a second ${spec.mode} exchange order, and still reports the one created`, async () => {
      const { base, ...fields } = spec;
      const amount = (base * (1.37 + index / 100)).toFixed(6);
      const orderId = uniqueName(`lost-${spec.mode}`);
      cluster.sandbox.clearFaults();
      cluster.sandbox.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'lost_response',
        times: 1,
      });
      await cluster.send({
        type: 'order.create',
        command_id: `${orderId}-c`,
        order_id: orderId,
        ...fields,
        deposit_amount: amount,
      });
      const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
      const onExchange = cluster.sandbox.orders
        .list()
        .filter((o) => Number(o.order['deposit_amount']) === Number(amount));
      expect(onExchange).toHaveLength(1);
      expect(created['unique_reference']).toBe(onExchange[0]?.order['unique_reference']);
      expect(cluster.sandbox.listFaults().find((f) => f.spec.kind === 'lost_response')?.fired).toBe(1);
    });
  }
});
