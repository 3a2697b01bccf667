// A Sentinel client through the failover messages of a killed primary, driven at the moment that used to end it
// for good: +switch-master arriving while its reconnect asks the sentinels for the primary (a real Sentinel set makes
// that race now and then: test/integration/redis-sentinel.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startLocalRedis } from '../../../dev/services/redis-local.ts';
import type { WorkerError } from '../../../src/errors.ts';
import { closeRedis, createRedis, whenRedisReady } from '../../../src/redis/connect.ts';
import { eventually } from './redis-fixture.ts';
import { startScriptedSentinel } from './scripted-sentinel.ts';

const name = 'mymaster';

/** A Sentinel topology of one sentinel (the scripted one), plain TCP, no auth. */
function sentinelTopology(port: number): Parameters<typeof createRedis>[0] {
  return {
    kind: 'sentinel',
    sentinels: [{ host: '127.0.0.1', port }],
    name,
    tls: false,
    sentinelUsername: undefined,
    sentinelPassword: undefined,
  };
}

async function primaries() {
  const dir = mkdtempSync(join(tmpdir(), 'sentinel-reconnect-'));
  const first = await startLocalRedis({ dir: join(dir, 'first') });
  const second = await startLocalRedis({ dir: join(dir, 'second') });
  onTestFinished(async () => {
    await Promise.all([first.stop('SIGKILL'), second.stop('SIGKILL')]);
    rmSync(dir, { recursive: true, force: true });
  });
  return { first, second };
}

describe('a Sentinel client', () => {
  it('reaches the new primary when +switch-master comes while its reconnect asks the sentinels for the primary', async () => {
    const { first, second } = await primaries();
    const sentinel = await startScriptedSentinel({ name, primaryPort: first.port });
    onTestFinished(() => sentinel.close());
    const errors: WorkerError[] = [];
    const client = createRedis(sentinelTopology(sentinel.port), {
      keyPrefix: 'switch:',
      onError: (error) => errors.push(error),
      maxReconnectDelayMs: 100,
    });
    onTestFinished(() => closeRedis(client));
    await whenRedisReady(client, 5_000);
    await eventually('the failover detector subscribed', () => sentinel.subscribers() > 0, 5_000);

    // The primary dies; the client's reconnect asks the sentinel, which switches to the second primary meanwhile.
    const lookup = sentinel.duringNextLookup(() => {
      sentinel.name(second.port);
      sentinel.switchMaster(first.port, second.port);
    }, 100);
    await first.stop('SIGKILL');
    await lookup;

    await eventually(
      'the client on the new primary',
      () =>
        client.set('k', 'v').then(
          () => true,
          () => false,
        ),
      10_000,
    );
    expect(client.status).toBe('ready');
    const direct = createRedis(second.url, { onError: () => {} });
    onTestFinished(() => closeRedis(direct));
    await whenRedisReady(direct, 5_000);
    expect(await direct.get('switch:k')).toBe('v');
    // It was ended on the way (what ioredis left at that, for good).
    expect(errors.map((error) => error.message).join('\n')).toContain('Connection is closed.');
  });

  it('stays closed once closeRedis closed it while it was connecting', async () => {
    const { first } = await primaries();
    const sentinel = await startScriptedSentinel({ name, primaryPort: first.port });
    onTestFinished(() => sentinel.close());
    const client = createRedis(sentinelTopology(sentinel.port), {
      onError: () => {},
      maxReconnectDelayMs: 100,
    });
    // Its first lookup is held: closeRedis finds it connecting.
    const lookup = sentinel.duringNextLookup(() => {}, 300);
    await lookup;
    expect(client.status).toBe('connecting');
    await closeRedis(client);
    await sleep(800);
    expect(client.status).toBe('end');
  });
});
