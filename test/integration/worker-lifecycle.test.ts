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
    // The same hash under a new command_id is already done; another hash is not allowed any more.
    await cluster.send({
      type: 'order.submit_deposit',
      command_id: `${orderId}-deposit-again`,
      order_id: orderId,
      tx_hash: '0xfeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface',
    });
    await cluster.send({
      type: 'order.submit_deposit',
      command_id: `${orderId}-deposit-other`,
      order_id: orderId,
      tx_hash: '0x0000000000000000000000000000000000000000000000000000000000000bad',
    });
    const refused = await cluster.collector.waitForOrderEvent(orderId, 'command.rejected');
    expect(refused).toMatchObject({ command_id: `${orderId}-deposit-other`, reason: 'not_allowed' });
    expect(cluster.collector.of(orderId).filter((e) => e.type === 'command.rejected')).toHaveLength(1);
    expect(cluster.collector.of(orderId).filter((e) => e.type === 'order.deposit_submitted')).toHaveLength(1);
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

  const modes = [
    {
      mode: 'defi',
      deposit_currency: 'USDT',
      withdraw_currency: 'ETH',
      withdraw_address: addresses.eth,
      amount: 150,
    },
    {
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      withdraw_address: addresses.btc,
      amount: 3,
    },
    {
      mode: 'cefi_fixed',
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      withdraw_address: addresses.eth2,
      amount: 0.02,
    },
  ] as const;
  const outcomes = [
    { target: 'completed', steps: ['completed'], event: 'order.completed', status: 'COMPLETED' },
    { target: 'refunded', steps: ['confirmed', 'refunded'], event: 'order.refunded', status: 'REFUNDED' },
    { target: 'canceled', steps: ['canceled'], event: 'order.canceled', status: 'CANCELED' },
  ] as const;
  for (const [m, spec] of modes.entries()) {
    for (const [o, outcome] of outcomes.entries()) {
      it(`takes a ${spec.mode} order to ${outcome.status} only after the exchange confirms it`, async () => {
        const { amount, ...fields } = spec;
        const command = createCommand({
          ...fields,
          deposit_amount: (amount * (1.1 + m / 10 + o / 100)).toFixed(6),
        });
        const orderId = String(command['order_id']);
        await cluster.send(command);
        const reference = String((await createdOrder(orderId))['unique_reference']);
        for (const step of outcome.steps) cluster.sandbox.advanceOrder(reference, step);
        const final = await cluster.collector.waitForOrderEvent(orderId, outcome.event);
        const history = cluster.collector.of(orderId);
        const statusEvent = history.find(
          (e) => e.type === 'order.status_changed' && e['status'] === outcome.status,
        );
        expect(statusEvent, 'the confirming status change').toBeDefined();
        expect(final.seq).toBeGreaterThan(statusEvent!.seq);
        expect(final.seq).toBe(history.at(-1)?.seq);
        expect(seqProblems(history)).toEqual([]);
      });
    }
  }

  it('cancels an order by command while it is still quoting, before any exchange order exists', async () => {
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /rate/',
      kind: 'latency',
      latencyMs: 2_500,
      times: 1,
    });
    const command = createCommand({
      mode: 'defi',
      deposit_currency: 'USDT',
      withdraw_currency: 'ETH',
      deposit_amount: '123.45',
      withdraw_address: addresses.eth,
    });
    const orderId = String(command['order_id']);
    await cluster.send(command);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await cluster.send({ type: 'order.cancel', command_id: `${orderId}-cancel`, order_id: orderId });
    const canceled = await cluster.collector.waitForOrderEvent(orderId, 'order.canceled');
    expect(canceled['reason']).toBe('command');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(cluster.collector.of(orderId).some((e) => e.type === 'order.created')).toBe(false);
    expect(
      cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === 123.45),
    ).toHaveLength(0);
  });

  it('stops an order that fails compliance pre-screening with the exchange message, and creates one that passes', async () => {
    const risky = createCommand({
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '4.4',
      withdraw_address: addresses.btc,
      pre_screening: { ip: '203.0.113.66' },
    });
    const clean = createCommand({
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '4.5',
      withdraw_address: addresses.btc,
      pre_screening: { ip: '198.51.100.7' },
    });
    await cluster.send(risky);
    await cluster.send(clean);
    const failed = await cluster.collector.waitForOrderEvent(String(risky['order_id']), 'order.failed');
    expect(failed['reason']).toBe('compliance_rejected');
    expect(String(failed['message']).length).toBeGreaterThan(0);
    await createdOrder(String(clean['order_id']));
    expect(
      cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === 4.4),
    ).toHaveLength(0);
  });

  it('fails an order the exchange refuses for good, with the exchange reason', async () => {
    // Above the exchange's absolute markup cap (500 bps in the sandbox; the command contract allows up to 10 000).
    const command = createCommand({
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '4.6',
      withdraw_address: addresses.btc,
      markup: 9_000,
    });
    await cluster.send(command);
    const failed = await cluster.collector.waitForOrderEvent(String(command['order_id']), 'order.failed');
    expect(failed).toMatchObject({ reason: 'rejected', code: 'markup_over_cap' });
    expect(String(failed['message'])).toContain('basis points');
  });

  it('refuses an address that is not valid for its network before the exchange is asked', async () => {
    const command = createCommand({
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: '4.61',
      withdraw_address: 'bc1qnotavalidaddress0000000000000000',
    });
    await cluster.send(command);
    const failed = await cluster.collector.waitForOrderEvent(String(command['order_id']), 'order.failed');
    expect(failed).toMatchObject({ reason: 'address_pairing_rejected', code: 'withdraw_address_invalid' });
  });
});
