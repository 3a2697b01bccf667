import { describe, expect, it } from 'vitest';
import { FleetMembers } from '../../../src/redis/fleet-members.ts';
import { useOwnRedis } from './redis-fixture.ts';

const redis = useOwnRedis();

describe('FleetMembers', () => {
  it('gives every replica the members announced lately, each as it last announced itself', async () => {
    const prefix = redis.prefix();
    const one = new FleetMembers(await redis.client({ keyPrefix: prefix }), { staleAfterMs: 10_000 });
    const other = new FleetMembers(await redis.client({ keyPrefix: prefix }), { staleAfterMs: 10_000 });
    const now = Date.now();
    await one.announce({ worker_id: 'w-1', url: 'http://10.0.0.1:9464', partitions: [0, 2], at: now });
    await other.announce({ worker_id: 'w-2', url: 'http://10.0.0.2:9464', partitions: [1], at: now });
    await one.announce({ worker_id: 'w-1', url: 'http://10.0.0.1:9464', partitions: [0], at: now + 1 });
    const members = await other.current(now + 2);
    expect(members.sort((a, b) => a.worker_id.localeCompare(b.worker_id))).toEqual([
      { worker_id: 'w-1', url: 'http://10.0.0.1:9464', partitions: [0], at: now + 1 },
      { worker_id: 'w-2', url: 'http://10.0.0.2:9464', partitions: [1], at: now },
    ]);
    await one.withdraw('w-1');
    expect((await other.current(now + 2)).map((m) => m.worker_id)).toEqual(['w-2']);
  });

  it('leaves out a member not announced for its stale time, deletes one ten times stale, and skips what is not a member', async () => {
    const prefix = redis.prefix();
    const client = await redis.client({ keyPrefix: prefix });
    const members = new FleetMembers(client, { staleAfterMs: 1_000 });
    const now = Date.now();
    await members.announce({ worker_id: 'w-quiet', url: 'http://a:1', partitions: [0], at: now - 5_000 });
    await members.announce({ worker_id: 'w-gone', url: 'http://b:1', partitions: [1], at: now - 20_000 });
    await members.announce({ worker_id: 'w-live', url: 'http://c:1', partitions: [2], at: now });
    await client.hset('fleet:members', 'junk', 'not json', 'w-other', JSON.stringify({ worker_id: 'w-x' }));
    expect((await members.current(now)).map((m) => m.worker_id)).toEqual(['w-live']);
    expect((await client.hkeys('fleet:members')).sort()).toEqual(['junk', 'w-live', 'w-other', 'w-quiet']);
    await expect(
      members.announce({ worker_id: 'w-bad', url: 'not a url', partitions: [], at: now }),
    ).rejects.toThrow();
  });
});
