// A Redis Cluster runs a script only when all its KEYS live in one hash slot. Every script of src/redis/ takes the
// keys of one order, one API key or one listing mode, which share a hash tag (test/unit/redis/hash-slots.test.ts
// proves it for each), except the restore's batch of leases (lease-acquire-many-n.lua), whose keys belong to a hundred
// orders. On a Cluster client that batch is split here: the orders of one slot per script run, the runs in parallel
// (auto-pipelining sends those of one node in one write), the answers put back in the order asked. A single primary
// (a URL, a Sentinel set) runs the batch whole.
import calculateSlot from 'cluster-key-slot';
import type { RedisScriptCommands } from './redis-port.ts';

/** The hash slot a key lands in once the client's prefix is prepended (as ioredis does for KEYS too). */
export function keySlot(keyPrefix: string, key: string): number {
  return calculateSlot(`${keyPrefix}${key}`);
}

/**
 * The orders of one lease-acquire-many-n.lua call grouped by the slot of their keys: each group's KEYS and ARGV, and
 * the index of each of its orders in the call. KEYS are (lease key, fence counter) per order, ARGV owner, ttl, fence
 * retention, then one minFence per order.
 */
export function leaseBatchesBySlot(
  keyPrefix: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Array<{ slot: number; orders: number[]; keys: string[]; args: Array<string | number> }> {
  const [owner, ttl, retention, ...minFences] = args;
  if (
    owner === undefined ||
    ttl === undefined ||
    retention === undefined ||
    minFences.length * 2 !== keys.length
  )
    throw new TypeError('leaseAcquireMany: expected two keys and one minFence per order');
  const groups = new Map<
    number,
    { slot: number; orders: number[]; keys: string[]; args: Array<string | number> }
  >();
  for (let i = 0; i < minFences.length; i++) {
    const leaseKey = keys[2 * i] as string;
    const fenceKey = keys[2 * i + 1] as string;
    const slot = keySlot(keyPrefix, leaseKey);
    let group = groups.get(slot);
    if (!group) {
      group = { slot, orders: [], keys: [], args: [owner, ttl, retention] };
      groups.set(slot, group);
    }
    group.orders.push(i);
    group.keys.push(leaseKey, fenceKey);
    group.args.push(minFences[i] as string | number);
  }
  return [...groups.values()];
}

/** Makes a Cluster client's leaseAcquireMany split its batch by slot (see above); the client is returned. */
export function splitBatchesBySlot<Client extends RedisScriptCommands>(
  client: Client,
  keyPrefix: string,
): Client {
  // The script's own function, unbound: ioredis copies a client's commands onto each pipeline it makes (the
  // auto-pipeline included), where it must stay the plain script of one run.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with the right `this` below
  const whole = client.leaseAcquireMany;
  client.leaseAcquireMany = async function (this: unknown, numberOfKeys, ...keysThenArgs) {
    if (this !== client) return whole.call(this, numberOfKeys, ...keysThenArgs);
    const keys = keysThenArgs.slice(0, numberOfKeys).map(String);
    const batches = leaseBatchesBySlot(keyPrefix, keys, keysThenArgs.slice(numberOfKeys));
    if (batches.length <= 1) return whole.call(client, numberOfKeys, ...keysThenArgs);
    const answers = await Promise.all(
      batches.map((batch) => whole.call(client, batch.keys.length, ...batch.keys, ...batch.args)),
    );
    const fences = new Array<number>(keys.length / 2);
    batches.forEach((batch, b) =>
      batch.orders.forEach((order, j) => (fences[order] = Number(answers[b]?.[j] ?? 0))),
    );
    return fences;
  };
  return client;
}
