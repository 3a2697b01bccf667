// A resting order's lease against a real worker, Redis and Kafka: while the order only waits its lease is not
// renewed (the key runs out in Redis), and a command after that takes it up again under the next fence and is
// carried out; the order then completes with a gapless history.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seqProblems } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';
import { addresses, startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
let redis: Redis;
const leaseTtlMs = 3_000;

beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 1, env: { LEASE_TTL_MS: String(leaseTtlMs) } });
  redis = new Redis(services().redisUrl, { lazyConnect: true });
  await redis.connect();
});

afterAll(async () => {
  await cluster?.stop();
  redis?.disconnect();
});

const leaseKey = (orderId: string): string => `eow:${cluster.env['CONSUMER_GROUP']}:lease:{${orderId}}`;

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(50);
  }
}

describe('a resting order and its lease', () => {
  it('lets the lease of an order that only waits run out, takes it up again under the next fence for its command, and completes the order', async () => {
    const orderId = uniqueName('order');
    await cluster.send({
      type: 'order.create',
      command_id: `${orderId}-create`,
      order_id: orderId,
      mode: 'defi',
      deposit_currency: 'USDT',
      withdraw_currency: 'ETH',
      deposit_amount: '101.5',
      withdraw_address: addresses.eth,
    });
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
    const held = await redis.get(leaseKey(orderId));
    expect(held).toMatch(/^\d+:/);
    const fence = Number(held?.split(':')[0]);
    // Waiting for its deposit (a DeFi order: no listing wakes it, its first poll is 30 s away), the order rests (PASSIVATE_IDLE_MS 250) and nothing renews its lease: the key runs out
    // on its ttl. Renewed every ttl/3, it would never go.
    await until(
      "the resting order's lease to run out",
      async () => (await redis.exists(leaseKey(orderId))) === 0,
      4 * leaseTtlMs,
    );

    await cluster.send({
      type: 'order.submit_deposit',
      command_id: `${orderId}-deposit`,
      order_id: orderId,
      tx_hash: '0xfeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface',
    });
    await cluster.collector.waitForOrderEvent(orderId, 'order.deposit_submitted', 30_000);
    const reference = String(created['unique_reference']);
    expect(cluster.sandbox.orders.get(reference)?.order['deposit_transaction']).toMatch(/^0xfeedface/);
    // Woken for the command under a fresh grant: the next fence (nobody else held it in between).
    expect(await redis.get(leaseKey(orderId))).toMatch(new RegExp(`^${fence + 1}:`));

    cluster.sandbox.advanceOrder(reference, 'completed');
    await cluster.collector.waitForOrderEvent(orderId, 'order.completed', 60_000);
    expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
    expect(cluster.collector.of(orderId).filter((e) => e.type === 'order.deposit_submitted')).toHaveLength(1);
  });
});
