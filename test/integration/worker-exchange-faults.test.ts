// The worker against a misbehaving exchange (the sandbox's fault injection): expired quotes, throttling, server
// errors and unreliable webhooks. Every order must still end where the exchange says, with one exchange order.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { seqProblems } from '../support/kafka-helpers.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
});
afterAll(async () => {
  await cluster?.stop();
});
beforeEach(() => cluster.sandbox.clearFaults());

function order(
  mode: 'defi' | 'cefi' | 'cefi_fixed',
  amount: string,
): { orderId: string; command: Record<string, unknown> } {
  const orderId = uniqueName(`fault-${mode}`);
  return { orderId, command: orderCreateCommand(mode, amount, orderId) };
}

function exchangeOrders(amount: string): number {
  return cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === Number(amount))
    .length;
}

describe('worker against exchange faults', () => {
  it('re-quotes when the exchange says the rate_id expired, then creates the order once', async () => {
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'expired_rate_id',
      times: 1,
    });
    const { orderId, command } = order('cefi_fixed', '0.031');
    await cluster.send(command);
    await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
    const quotes = cluster.collector.of(orderId).filter((e) => e.type === 'order.quoted');
    expect(quotes).toHaveLength(2);
    expect(quotes[0]?.['rate_id']).not.toBe(quotes[1]?.['rate_id']);
    expect(exchangeOrders('0.031')).toBe(1);
  });

  it('honours Retry-After on a throttled create and still creates the order once', async () => {
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'throttle',
      retryAfterSeconds: 2,
      times: 1,
    });
    const { orderId, command } = order('cefi', '1.321');
    const sent = Date.now();
    await cluster.send(command);
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
    expect(Date.parse(created.occurred_at) - sent).toBeGreaterThanOrEqual(1_900);
    expect(exchangeOrders('1.321')).toBe(1);
  });

  it('keeps confirming through server errors on GET /orders/{ref}/ and reaches COMPLETED', async () => {
    const { orderId, command } = order('cefi', '1.322');
    await cluster.send(command);
    const reference = String(
      (await cluster.collector.waitForOrderEvent(orderId, 'order.created'))['unique_reference'],
    );
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'http_error',
      status: 503,
      times: 2,
    });
    cluster.sandbox.advanceOrder(reference, 'completed');
    await cluster.collector.waitForOrderEvent(orderId, 'order.completed', 120_000);
    expect(cluster.sandbox.listFaults().find((f) => f.spec.kind === 'http_error')?.fired).toBe(2);
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
  });

  it('is not misled by duplicated, reordered or badly signed webhooks', async () => {
    const { orderId, command } = order('cefi', '1.323');
    await cluster.send(command);
    const reference = String(
      (await cluster.collector.waitForOrderEvent(orderId, 'order.created'))['unique_reference'],
    );
    cluster.sandbox.injectFault({ target: 'webhook', kind: 'duplicate' });
    cluster.sandbox.injectFault({ target: 'webhook', kind: 'reorder' });
    cluster.sandbox.injectFault({ target: 'webhook', kind: 'bad_signature', times: 1 });
    cluster.sandbox.advanceOrder(reference, 'confirmed');
    cluster.sandbox.advanceOrder(reference, 'refunded');
    await cluster.collector.waitForOrderEvent(orderId, 'order.refunded', 120_000);
    const statuses = cluster.collector
      .of(orderId)
      .filter((e) => e.type === 'order.status_changed')
      .map((e) => String(e['status']));
    // Statuses only move forward and each appears once, whatever order the webhooks arrived in.
    expect(new Set(statuses).size).toBe(statuses.length);
    expect(statuses.at(-1)).toBe('REFUNDED');
    expect(cluster.sandbox.listFaults().find((f) => f.spec.kind === 'bad_signature')?.fired).toBe(1);
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
  });
});
