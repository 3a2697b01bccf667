// The worker as trading services see it: real worker processes, real Kafka and Redis, the sandbox as exchange.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seqProblems, type PublishedEvent } from '../support/kafka-helpers.ts';
import { addresses, startCluster, type Cluster } from '../support/worker-cluster.ts';
import { uniqueName } from '../support/services.ts';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 3 });
});

afterAll(async () => {
  await cluster?.stop();
});

function createCommand(overrides: Record<string, unknown>): Record<string, unknown> {
  const orderId = uniqueName('order');
  return { type: 'order.create', command_id: `${orderId}-create`, order_id: orderId, ...overrides };
}

async function createdOrder(orderId: string): Promise<PublishedEvent> {
  return cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
}

function types(orderId: string): string[] {
  return cluster.collector
    .of(orderId)
    .map((e) => (e.type === 'order.status_changed' ? `status:${String(e['status'])}` : e.type));
}

describe('worker lifecycle against the sandbox', () => {
  it('drives a DeFi order through quote, creation and deposit to COMPLETED', async () => {
    const command = createCommand({
      mode: 'defi',
      deposit_currency: 'USDT',
      withdraw_currency: 'ETH',
      deposit_amount: '101.5',
      withdraw_address: addresses.eth,
    });
    const orderId = String(command['order_id']);
    await cluster.send(command);
    const created = await createdOrder(orderId);
    expect(created['unique_reference']).toEqual(expect.any(String));
    expect(created['deposit_address']).toEqual(expect.any(String));
    expect(cluster.collector.of(orderId)[0]?.type).toBe('order.quoted');

    await cluster.send({
      type: 'order.submit_deposit',
      command_id: `${orderId}-deposit`,
      order_id: orderId,
      tx_hash: '0xfeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface',
    });
    await cluster.collector.waitForOrderEvent(orderId, 'order.deposit_submitted');
    const reference = String(created['unique_reference']);
    expect(cluster.sandbox.orders.get(reference)?.order['deposit_transaction']).toMatch(/^0xfeedface/);

    cluster.sandbox.advanceOrder(reference, 'completed');
    const completed = await cluster.collector.waitForOrderEvent(orderId, 'order.completed');
    expect(completed['unique_reference']).toBe(reference);
    expect(types(orderId)).toContain('status:COMPLETED');
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
  });

  it('drives a floating CeFi order to REFUNDED', async () => {
    const command = createCommand({
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '1.25',
      withdraw_address: addresses.btc,
    });
    const orderId = String(command['order_id']);
    await cluster.send(command);
    const reference = String((await createdOrder(orderId))['unique_reference']);
    cluster.sandbox.advanceOrder(reference, 'confirmed');
    cluster.sandbox.advanceOrder(reference, 'refunded');
    await cluster.collector.waitForOrderEvent(orderId, 'order.refunded');
    expect(types(orderId)).toContain('status:REFUNDED');
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
  });

  it('drives a CeFi fixed-rate order to CANCELED when the exchange cancels it', async () => {
    const command = createCommand({
      mode: 'cefi_fixed',
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      deposit_amount: '0.0125',
      withdraw_address: addresses.eth2,
    });
    const orderId = String(command['order_id']);
    await cluster.send(command);
    const reference = String((await createdOrder(orderId))['unique_reference']);
    cluster.sandbox.advanceOrder(reference, 'canceled');
    const canceled = await cluster.collector.waitForOrderEvent(orderId, 'order.canceled');
    expect(canceled['reason']).toBe('exchange');
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
  });

  it('answers bad commands with command.rejected while the next good command goes through', async () => {
    const orderId = uniqueName('order');
    await cluster.send({}, { key: orderId, raw: '{not json' });
    await cluster.send({ type: 'order.explode', command_id: 'c-x', order_id: orderId });
    await cluster.send({ type: 'order.create', command_id: 'c-y', order_id: orderId, mode: 'defi' });
    await cluster.send({
      type: 'order.submit_deposit',
      command_id: 'c-z',
      order_id: uniqueName('missing'),
      tx_hash: '0x0123456789abcdef',
    });
    const good = createCommand({
      order_id: orderId,
      command_id: 'c-good',
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '2.5',
      withdraw_address: addresses.btc,
    });
    await cluster.send(good);
    await createdOrder(orderId);
    // The same order.create again changes nothing; different content is refused.
    await cluster.send(good);
    await cluster.send({ ...good, command_id: 'c-good-2', deposit_amount: '3' });
    await cluster.send({ type: 'order.cancel', command_id: 'c-cancel', order_id: orderId });

    const rejected = await cluster.collector.waitFor(
      (events) =>
        events.filter(
          (e) => e.type === 'command.rejected' && (e.order_id === orderId || e['command_id'] === 'c-z'),
        ).length >= 6,
      'six rejections',
      60_000,
    );
    const mine = rejected.filter(
      (e) => e.type === 'command.rejected' && (e.order_id === orderId || e['command_id'] === 'c-z'),
    );
    expect(mine.map((e) => String(e['reason'])).sort()).toEqual([
      'malformed',
      'malformed',
      'not_allowed',
      'order_exists',
      'unknown_order',
      'unknown_type',
    ]);
    expect(mine.find((e) => e['command_id'] === 'c-y')?.['message']).toMatch(/deposit_currency/);
    const exchangeOrders = cluster.sandbox.orders
      .list()
      .filter(
        (o) => o.order['withdraw_address'] === addresses.btc && Number(o.order['deposit_amount']) === 2.5,
      );
    expect(exchangeOrders.length).toBeLessThanOrEqual(1);
    // The order's own history stays gap-free, rejections included.
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
  });
});
