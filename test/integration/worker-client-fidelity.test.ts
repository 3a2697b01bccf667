// The worker as a client of the interface document, end to end against the sandbox: the address and chain pairing
// checked before any quote, and a deposit hash that the exchange "already" knows but on another order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addresses } from '../support/addresses.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
});
afterAll(async () => {
  await cluster?.stop();
});

function cefiCreate(prefix: string, extra: Record<string, unknown> = {}) {
  const orderId = uniqueName(prefix);
  return {
    orderId,
    command: {
      type: 'order.create',
      command_id: `${orderId}-c`,
      order_id: orderId,
      mode: 'cefi',
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      deposit_amount: (0.0123 + Math.random() / 1000).toFixed(6),
      withdraw_address: addresses.eth,
      ...extra,
    },
  };
}

describe('the worker as a client', () => {
  it('refuses an order whose withdraw address is said to be on a network the currency is not on, before any quote', async () => {
    const { orderId, command } = cefiCreate('pairing', { withdraw_network: 'TRX' });
    const before = cluster.sandbox.orders.list().length;
    await cluster.send(command);
    const failed = await cluster.collector.waitForOrderEvent(orderId, 'order.failed', 60_000);
    expect(failed).toMatchObject({ reason: 'address_pairing_rejected', code: 'withdraw_network_mismatch' });
    expect(cluster.sandbox.orders.list()).toHaveLength(before);
  });

  it('takes the network the currency is on', async () => {
    const { orderId, command } = cefiCreate('pairing-ok', { withdraw_network: 'ETH' });
    await cluster.send(command);
    await cluster.collector.waitForOrderEvent(orderId, 'order.created', 60_000);
  });

  it('rejects a deposit hash the exchange already recorded on another order, instead of a silent success', async () => {
    const first = cefiCreate('hash-a');
    const second = cefiCreate('hash-b');
    await cluster.send(first.command);
    await cluster.send(second.command);
    await cluster.collector.waitForOrderEvent(first.orderId, 'order.created', 60_000);
    await cluster.collector.waitForOrderEvent(second.orderId, 'order.created', 60_000);
    const hash = `0x${'ab'.repeat(32)}`;
    await cluster.send({
      type: 'order.submit_deposit',
      command_id: `${first.orderId}-d`,
      order_id: first.orderId,
      tx_hash: hash,
    });
    await cluster.collector.waitForOrderEvent(first.orderId, 'order.deposit_submitted', 60_000);
    await cluster.send({
      type: 'order.submit_deposit',
      command_id: `${second.orderId}-d`,
      order_id: second.orderId,
      tx_hash: hash,
    });
    const rejected = await cluster.collector.waitForOrderEvent(
      second.orderId,
      'order.deposit_rejected',
      60_000,
    );
    expect(rejected).toMatchObject({ tx_hash: hash, code: 'deposit_hash_on_another_order' });
    expect(cluster.collector.of(second.orderId).some((e) => e.type === 'order.deposit_submitted')).toBe(
      false,
    );
  });
});
