// Money safety under ambiguity, end to end (real worker process, real Kafka and Redis, the sandbox): an exchange
// that creates the order and then answers 503, one that normalises the address case, one whose idempotent repeat
// answers "expired" although the order exists (the order parks, an operator adopts), sibling orders that look the
// same, and a GET that answers another order. Each time: one exchange order per order_id, no reference shared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modeSpecs } from '../support/order-specs.ts';
import { seqProblems } from '../support/kafka-helpers.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
});
afterAll(async () => {
  await cluster?.stop();
});

const spec = (mode: 'defi' | 'cefi' | 'cefi_fixed') => {
  const found = modeSpecs.find((s) => s.mode === mode);
  if (!found) throw new Error(mode);
  const { base, ...fields } = found;
  return { base, fields };
};
let variant = 0;
function createCommand(mode: 'defi' | 'cefi' | 'cefi_fixed', prefix: string, amount?: string) {
  const { base, fields } = spec(mode);
  variant += 1;
  const orderId = uniqueName(prefix);
  const depositAmount = amount ?? (base * (1.51 + variant / 1000)).toFixed(6);
  return {
    orderId,
    amount: depositAmount,
    command: {
      type: 'order.create',
      command_id: `${orderId}-c`,
      order_id: orderId,
      ...fields,
      deposit_amount: depositAmount,
    },
  };
}
const exchangeOrdersOf = (amount: string) =>
  cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === Number(amount));

describe('money safety under ambiguity', () => {
  for (const mode of ['cefi', 'cefi_fixed', 'defi'] as const) {
    it(`creates one ${mode} exchange order when the exchange creates it and then answers 503`, async () => {
      const { orderId, amount, command } = createCommand(mode, `e503-${mode}`);
      cluster.sandbox.clearFaults();
      cluster.sandbox.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'create_then_error',
        status: 503,
        times: 1,
      });
      await cluster.send(command);
      const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
      expect(exchangeOrdersOf(amount)).toHaveLength(1);
      expect(created['unique_reference']).toBe(exchangeOrdersOf(amount)[0]?.order['unique_reference']);
      expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
    });
  }

  it('finds its CeFi order although the exchange stored the address in another case', async () => {
    const { orderId, amount, command } = createCommand('cefi_fixed', 'case');
    cluster.sandbox.clearFaults();
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'normalise_address_case',
      addressCase: 'lower',
    });
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 1,
    });
    await cluster.send(command);
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
    expect(exchangeOrdersOf(amount)).toHaveLength(1);
    expect(created['unique_reference']).toBe(exchangeOrdersOf(amount)[0]?.order['unique_reference']);
    cluster.sandbox.clearFaults();
  });

  it('parks a DeFi order whose repeat answers "expired" although the order exists, and an operator adopts it', async () => {
    const { orderId, amount, command } = createCommand('defi', 'expired');
    cluster.sandbox.clearFaults();
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 1,
    });
    cluster.sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'expired_on_repeat' });
    await cluster.send(command);
    const parked = await cluster.collector.waitForOrderEvent(orderId, 'order.parked', 90_000);
    expect(parked).toMatchObject({ reason: 'create_outcome_unknown', mode: 'defi' });
    expect(typeof parked['rate_id']).toBe('string');
    expect(exchangeOrdersOf(amount)).toHaveLength(1);
    const reference = String(exchangeOrdersOf(amount)[0]?.order['unique_reference']);
    // A cancel is refused: the exchange order may exist.
    await cluster.send({ type: 'order.cancel', command_id: `${orderId}-cancel`, order_id: orderId });
    await cluster.collector.waitForOrderEvent(orderId, 'command.rejected', 30_000);
    await cluster.send({
      type: 'order.settle',
      command_id: `${orderId}-settle`,
      order_id: orderId,
      resolution: 'adopt',
      unique_reference: reference,
    });
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 60_000);
    expect(created['unique_reference']).toBe(reference);
    expect(exchangeOrdersOf(amount)).toHaveLength(1);
    expect(cluster.collector.of(orderId).map((e) => e.type)).toEqual([
      'order.quoted',
      'order.parked',
      'command.rejected',
      'order.operator_command',
      'order.created',
    ]);
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
    cluster.sandbox.clearFaults();
  });

  it('gives sibling orders with the same pair, address and amount one exchange order each', async () => {
    const first = createCommand('cefi', 'sibling-a');
    const second = createCommand('cefi', 'sibling-b', first.amount);
    cluster.sandbox.clearFaults();
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 2,
    });
    await cluster.send(first.command);
    await cluster.send(second.command);
    const a = await cluster.collector.waitForOrderEvent(first.orderId, 'order.created', 120_000);
    const b = await cluster.collector.waitForOrderEvent(second.orderId, 'order.created', 120_000);
    expect(a['unique_reference']).not.toBe(b['unique_reference']);
    expect(exchangeOrdersOf(first.amount)).toHaveLength(2);
  });

  it('publishes nothing about another order when a GET answers with it', async () => {
    const { orderId, command } = createCommand('cefi', 'other-get');
    cluster.sandbox.clearFaults();
    await cluster.send(command);
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 60_000);
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'get_other_order',
      times: 3,
    });
    await cluster.send({
      type: 'order.webhook_hint',
      command_id: `${orderId}-hint`,
      order_id: orderId,
      unique_reference: String(created['unique_reference']),
      received_at: new Date().toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const other = cluster.collector
      .of(orderId)
      .filter(
        (e) =>
          typeof e['unique_reference'] === 'string' && e['unique_reference'] !== created['unique_reference'],
      );
    expect(other).toEqual([]);
    cluster.sandbox.clearFaults();
  });
});
