// Proof that every Redis call the worker makes works on a Redis Cluster: a script (and any command) runs there only
// when all the keys it names hash to one slot. Every adapter of src/redis/ (and the request budget of src/exchange/)
// is run against a port that records the keys of each call; every script of the registry (src/redis/scripts.ts) and
// every command of the port must be among them, and each call's keys must share a slot under any deployment prefix,
// computed with the slot function ioredis routes with (cluster-key-slot). The one call whose keys span orders (the
// restore's batch of leases) must come out of the Cluster client's split one slot per run. The scripts themselves
// touch only the keys they are given. The port has no command that a Cluster cannot serve whole (KEYS, SCAN,
// MULTI/EXEC, pub/sub): `portCommands` below must name each of its commands, so a new one is looked at here.
import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tradingModes } from '../../../machines/domain.ts';
import { loadConfig } from '../../../src/config.ts';
import { orderCancelCommand } from '../../../src/contract/commands.ts';
import { RedisRequestBudget } from '../../../src/exchange/redis-request-budget.ts';
import { apiKeyFingerprint } from '../../../src/exchange/request-budget.ts';
import { FleetMembers } from '../../../src/redis/fleet-members.ts';
import { listingKeys, ListingShare } from '../../../src/redis/listing-share.ts';
import { OrderHomes } from '../../../src/redis/order-homes.ts';
import { OrderIndex } from '../../../src/redis/order-index.ts';
import { fenceKey, leaseKey, OrderLease } from '../../../src/redis/order-lease.ts';
import { QuoteCooldown } from '../../../src/redis/quote-cooldown.ts';
import type { RedisPort, RedisScriptCommands } from '../../../src/redis/redis-port.ts';
import { RedisCreatesInFlight } from '../../../src/redis/creates-in-flight.ts';
import { RedisReferenceClaims } from '../../../src/redis/reference-claims.ts';
import { luaScripts } from '../../../src/redis/scripts.ts';
import { leaseBatchesBySlot, splitBatchesBySlot } from '../../../src/redis/slot-batches.ts';
import { WebhookDedupe } from '../../../src/redis/webhook-dedupe.ts';

/** Every command of the port, and how many keys each takes (a script: as the registry says). */
const portCommands = {
  get: 1,
  set: 1,
  del: 1,
  pexpire: 1,
  hset: 1,
  hmget: 1,
  hdel: 1,
  hgetall: 1,
  leaseAcquire: 'script',
  leaseAcquireMany: 'script',
  leaseRenew: 'script',
  leaseRelease: 'script',
  leaseHolder: 'script',
  quoteCooldown: 'script',
  referenceClaim: 'script',
  createInFlight: 'script',
  requestBudget: 'script',
} as const satisfies Record<keyof RedisPort, 1 | 'script'>;

/** Commands a Cluster cannot serve as one call (they span nodes or slots), none of which the port may have. */
const clusterUnsafe = ['keys', 'scan', 'multi', 'exec', 'subscribe', 'psubscribe', 'publish', 'mget', 'mset'];

/**
 * Deployment prefixes the client prepends (`eow:<CONSUMER_GROUP>:`), including groups with braces in them (which the
 * configuration refuses with a Cluster, see the last test, but which do not split a call's keys either).
 */
const prefixes = ['', 'eow:exchange-order-worker:', 'eow:a{b:', 'eow:{grp}:', 'eow:x}y:'];

interface Call {
  command: keyof RedisPort;
  /** The keys of one unit that must share a slot (for the batch acquire: one entry per order). */
  keyGroups: string[][];
}

const scripts = new Map(luaScripts().map((script) => [script.name, script]));

function keysOf(command: keyof RedisPort, args: unknown[]): string[][] {
  const kind = portCommands[command];
  if (kind === 1) return [[String(args[0])]];
  const script = scripts.get(command as keyof RedisScriptCommands);
  if (!script) throw new Error(`${command} is not in the Lua registry`);
  if (script.numberOfKeys !== undefined) return [args.slice(0, script.numberOfKeys).map(String)];
  // "-n": the first argument says how many keys follow; the batch acquire's keys come in pairs, one pair per order.
  const keys = args.slice(1, 1 + Number(args[0])).map(String);
  const pairs: string[][] = [];
  for (let i = 0; i < keys.length; i += 2) pairs.push(keys.slice(i, i + 2));
  return pairs;
}

/** A port that answers every command plausibly and records the keys of each call. */
function recordingPort(): { port: RedisPort; calls: Call[] } {
  const calls: Call[] = [];
  const replies: { [K in keyof RedisPort]: (...args: unknown[]) => unknown } = {
    get: () => null,
    set: () => 'OK',
    del: () => 1,
    pexpire: () => 1,
    hset: () => 1,
    hmget: (_key, ...fields) => fields.map(() => null),
    hdel: () => 1,
    hgetall: () => ({
      'w-old': JSON.stringify({ worker_id: 'w-old', url: 'http://a:1', partitions: [0], at: 1 }),
    }),
    leaseAcquire: () => 1,
    leaseAcquireMany: (n) => Array.from({ length: Number(n) / 2 }, () => 1),
    leaseRenew: () => 1,
    leaseRelease: () => 1,
    leaseHolder: () => ['1:replica-a', 1_000],
    quoteCooldown: () => -1,
    referenceClaim: () => 1,
    createInFlight: () => 0,
    requestBudget: () => [1, 0],
  };
  const port = Object.fromEntries(
    Object.entries(replies).map(([command, reply]) => [
      command,
      (...args: unknown[]) => {
        calls.push({
          command: command as keyof RedisPort,
          keyGroups: keysOf(command as keyof RedisPort, args),
        });
        return Promise.resolve(reply(...args));
      },
    ]),
  ) as unknown as RedisPort;
  return { port, calls };
}

/** Runs every adapter that talks to Redis through each of its calls. */
async function exerciseEveryAdapter(port: RedisPort): Promise<void> {
  const lease = new OrderLease(port);
  const grant = await lease.acquire('order-1', 'replica-a', 10_000, 3);
  if (!grant) throw new Error('expected a grant');
  await lease.acquireMany(
    ['order-1', 'order-2', 'order-3', 'ord{er}-4'].map((orderId) => ({ orderId, minFence: 0 })),
    'replica-a',
    10_000,
  );
  await lease.renew(grant);
  await lease.release(grant);
  await lease.holder('order-1');

  await new QuoteCooldown(port).tryAcquire('defi', 'ETHBTC', '1.5', 15_000, Date.now(), 'token');
  const claims = new RedisReferenceClaims(port);
  await claims.claim('REF1', 'order-1');
  await claims.owner('REF1');
  const marks = new RedisCreatesInFlight(port);
  await marks.open('cefi|BTC|ETH|0xabc', 'order-1', 30_000);
  await marks.othersOut('cefi|BTC|ETH|0xabc', 'order-2');
  await marks.close('cefi|BTC|ETH|0xabc', 'order-1');

  const budget = new RedisRequestBudget({ redis: port, limit: 100, windowMs: 1_000 });
  await budget.acquire(apiKeyFingerprint('live-key'), 'normal');
  await budget.penalize(apiKeyFingerprint('live-key'), 1_000);

  const members = new FleetMembers(port);
  await members.announce({ worker_id: 'w-1', url: 'http://10.0.0.1:9464', partitions: [0], at: Date.now() });
  await members.current(Date.now());
  await members.withdraw('w-1');

  const listing = new ListingShare(port, { intervalMs: 30_000 });
  await listing.latest('cefi');
  const claimed = await listing.claim('cefi');
  if (!claimed) throw new Error('expected a walk');
  await listing.keep('cefi', claimed.token);
  await listing.record('cefi', claimed.walk, [{ uniqueReference: 'REF1', status: 'PAID', at: 1 }]);
  await listing.complete('cefi', claimed.walk, 1, claimed.token);
  await listing.release('cefi', claimed.token);
  await listing.rowsOf('cefi', claimed.walk, ['REF1', 'REF2']);

  const index = new OrderIndex(port);
  await index.put('REF1', 'order-1', 3);
  await index.get('REF2');
  await index.forget('REF1');

  const homes = new OrderHomes(port, { ttlMs: 86_400_000 });
  await homes.claim('order-1', 3);
  await homes.retire('order-1', 3);

  const dedupe = new WebhookDedupe(port);
  await dedupe.firstSeen('REF1', 'PAID');
  await dedupe.forget('REF1', 'PAID');
}

/** CRC16-XMODEM, as Redis computes key slots (src/crc16.c). */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * The slot as the server decides it (keyHashSlot in Redis's cluster.c): the bytes between the first "{" and the first
 * "}" after it, unless there are none, then the whole key. cluster-key-slot differs for an empty tag ("{}"): it reads
 * on to the next "}". The client routes with one, the server refuses with the other, so both must agree.
 */
function serverSlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  const close = open < 0 ? -1 : bytes.indexOf(0x7d, open + 1);
  return (close > open + 1 ? crc16(bytes.subarray(open + 1, close)) : crc16(bytes)) & 0x3fff;
}

function sameSlot(prefix: string, keys: readonly string[]): boolean {
  const routed = new Set(keys.map((key) => calculateSlot(`${prefix}${key}`)));
  const served = new Set(keys.map((key) => serverSlot(`${prefix}${key}`)));
  return routed.size <= 1 && served.size <= 1;
}

describe('hash slots (Redis Cluster)', () => {
  it("the check itself tells keys of two slots apart, by the client's slot function and the server's", () => {
    expect(serverSlot('123456789')).toBe(0x31c3);
    expect(calculateSlot('123456789')).toBe(0x31c3);
    expect(serverSlot('{user1000}.following')).toBe(calculateSlot('{user1000}.following'));
    expect(sameSlot('eow:g:', ['lease:{a}', 'lease:{a}:fence'])).toBe(true);
    expect(sameSlot('eow:g:', ['lease:{a}', 'lease:{b}:fence'])).toBe(false);
    expect(sameSlot('eow:g:', ['lease:a', 'lease:a:fence'])).toBe(false);
  });

  it('every script of the registry and every command of the port is exercised, and none a Cluster cannot serve', async () => {
    const { port, calls } = recordingPort();
    await exerciseEveryAdapter(port);
    const seen = new Set(calls.map((call) => call.command));
    expect([...scripts.keys()].filter((name) => !seen.has(name))).toEqual([]);
    expect(Object.keys(portCommands).filter((name) => !seen.has(name as keyof RedisPort))).toEqual([]);
    expect(Object.keys(portCommands).filter((name) => clusterUnsafe.includes(name.toLowerCase()))).toEqual(
      [],
    );
  });

  it.each(prefixes)('keeps the keys of each call in one slot under the prefix %j', async (prefix) => {
    const { port, calls } = recordingPort();
    await exerciseEveryAdapter(port);
    const crossSlot = calls.flatMap((call) =>
      call.keyGroups
        .filter((keys) => !sameSlot(prefix, keys))
        .map((keys) => `${call.command}: ${keys.join(' ')}`),
    );
    expect(crossSlot).toEqual([]);
    // The multi-key calls are among them, so the check above is not vacuous.
    expect(
      calls.filter((call) => call.keyGroups.some((keys) => keys.length > 1)).map((c) => c.command),
    ).toEqual(expect.arrayContaining(['leaseAcquire', 'leaseAcquireMany', 'requestBudget']));
  });

  it('keeps the lease and fence keys of any order, the budget keys of any API key and a mode listing keys together', () => {
    const prefix = fc.constantFrom(...prefixes);
    // Order ids are the contract's identifiers (a brace is refused there, so no order id makes a hash tag of its own).
    const orderIds = fc.stringMatching(/^[A-Za-z0-9._:@-]{1,128}$/);
    expect(
      orderCancelCommand.safeParse({ type: 'order.cancel', command_id: 'c', order_id: 'a{b}' }).success,
    ).toBe(false);
    fc.assert(
      fc.property(prefix, orderIds, (p, orderId) => {
        expect(sameSlot(p, [leaseKey(orderId), fenceKey(orderId)])).toBe(true);
      }),
    );
    for (const mode of tradingModes) {
      const keys = listingKeys(mode);
      for (const p of prefixes)
        expect(sameSlot(p, [keys.walking, keys.latest, keys.rows('walk-1')])).toBe(true);
    }
    // Budget keys are fingerprints of API keys, whatever the key.
    fc.assert(
      fc.property(prefix, fc.string({ minLength: 1 }), (p, apiKey) => {
        const budgetKeys: string[] = [];
        const budget = new RedisRequestBudget({
          redis: {
            requestBudget: (tat: string, penalty: string, ..._rest: unknown[]) => {
              budgetKeys.push(tat, penalty);
              return Promise.resolve([1, 0]);
            },
          },
        });
        void budget.penalize(apiKeyFingerprint(apiKey), 1);
        expect(budgetKeys).toHaveLength(2);
        expect(sameSlot(p, budgetKeys)).toBe(true);
      }),
    );
  });

  it('a batch of leases across slots is split for a Cluster into runs of one slot, answered in the order asked', async () => {
    const orders = Array.from({ length: 50 }, (_, i) => `order-${i}`);
    const keys = orders.flatMap((orderId) => [leaseKey(orderId), fenceKey(orderId)]);
    const args = ['replica-a', 10_000, 0, ...orders.map((_, i) => String(i))];
    for (const prefix of prefixes) {
      const batches = leaseBatchesBySlot(prefix, keys, args);
      // A prefix with a hash tag of its own pins every key to one slot: then the batch stays whole.
      expect(batches.length > 1).toBe(!/\{[^}]+\}/.test(prefix));
      for (const batch of batches) expect(sameSlot(prefix, batch.keys)).toBe(true);
      expect(batches.flatMap((batch) => batch.orders).sort((a, b) => a - b)).toEqual(orders.map((_, i) => i));
    }
    // The split client: each run gets its own orders' keys and minFences, and the answers come back in place.
    const runs: string[][] = [];
    const client = splitBatchesBySlot(
      {
        leaseAcquireMany: (n: number, ...rest: Array<string | number>) => {
          const runKeys = rest.slice(0, n).map(String);
          expect(sameSlot('eow:g:', runKeys)).toBe(true);
          runs.push(runKeys);
          // Grant each order its minFence + 1 (so the answer says which order it was for).
          return Promise.resolve(rest.slice(n + 3).map((minFence) => Number(minFence) + 1));
        },
      } as unknown as RedisScriptCommands,
      'eow:g:',
    );
    const fences = await client.leaseAcquireMany(keys.length, ...keys, ...args);
    expect(runs.length).toBeGreaterThan(1);
    expect(fences).toEqual(orders.map((_, i) => i + 1));
  });

  it('each script touches only keys it was given in KEYS (a key it built itself could lie in another slot)', () => {
    for (const script of luaScripts()) {
      const fromKeys = new Set(
        [...script.lua.matchAll(/local\s+([\w\s,]+?)\s*=\s*KEYS\[/g)].flatMap((m) =>
          (m[1] ?? '').split(',').map((name) => name.trim()),
        ),
      );
      const calls = [...script.lua.matchAll(/(?:rcall|redis\.call)\(\s*["'](\w+)["']\s*(?:,\s*([^,)]+))?/g)];
      expect(calls.length, script.name).toBeGreaterThan(0);
      for (const [, command, firstArg] of calls) {
        if (command?.toUpperCase() === 'TIME') continue;
        const key = (firstArg ?? '').trim();
        expect(/^KEYS\[[^\]]+\]$/.test(key) || fromKeys.has(key), `${script.name}: ${command} ${key}`).toBe(
          true,
        );
      }
    }
  });

  it('refuses a consumer group with braces on a Cluster: its prefix could hash every key whole ("{}") or pin all to one slot', () => {
    // An empty hash tag in the prefix makes Redis hash the whole key: the lease and its fence counter part.
    expect(sameSlot('eow:{}:', [leaseKey('order-1'), fenceKey('order-1')])).toBe(false);
    const env = {
      KAFKA_BROKERS: 'kafka:9092',
      REDIS_CLUSTER_NODES: 'redis-0:6379,redis-1:6379',
      EXCHANGE_API_URL: 'https://exchange.example/api/v2',
      EXCHANGE_API_KEY_DEFI: 'key',
      WEBHOOK_SECRET: 'secret',
    };
    expect(() => loadConfig({ ...env, CONSUMER_GROUP: 'orders{}' })).toThrow(
      /CONSUMER_GROUP: must not contain \{ or \} with REDIS_CLUSTER_NODES/,
    );
    expect(loadConfig({ ...env, CONSUMER_GROUP: 'orders' }).redis.topology.kind).toBe('cluster');
  });
});
