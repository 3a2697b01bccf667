// A redis-server of the test file's own (so a test may kill and restart it) plus clients with unique key
// prefixes, all cleaned up after the file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { canConnect } from '../../../dev/services/process-util.ts';
import { startLocalRedis, type LocalRedis } from '../../../dev/services/redis-local.ts';
import type { WorkerError } from '../../../src/errors.ts';
import { closeRedis, createRedis, whenRedisReady, type RedisClient } from '../../../src/redis/connect.ts';
import { uniqueName } from '../../support/services.ts';

export interface RedisFixture {
  server(): LocalRedis;
  /** A ready client; pass the same prefix to make two clients share keys (two replicas). */
  client(opts?: { keyPrefix?: string; commandTimeoutMs?: number }): Promise<RedisClient>;
  prefix(): string;
  /** Connection errors seen by every client of this file. */
  readonly connectionErrors: WorkerError[];
}

export function useOwnRedis(): RedisFixture {
  let dir = '';
  let server: LocalRedis | undefined;
  const clients: RedisClient[] = [];
  const connectionErrors: WorkerError[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'redis-adapter-'));
    server = await startLocalRedis({ dir });
  });
  afterEach(async () => {
    // A test that stopped the server leaves it running again for the next one.
    if (server && !(await pingable(server))) await server.start();
  });
  afterAll(async () => {
    for (const client of clients.splice(0)) await closeRedis(client);
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  return {
    server: () => {
      if (!server) throw new Error('redis-server not started yet');
      return server;
    },
    prefix: () => `${uniqueName('t')}:`,
    connectionErrors,
    async client(opts = {}) {
      if (!server) throw new Error('redis-server not started yet');
      const client = createRedis(server.url, {
        keyPrefix: opts.keyPrefix ?? `${uniqueName('t')}:`,
        onError: (error) => connectionErrors.push(error),
        ...(opts.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: opts.commandTimeoutMs }),
        maxReconnectDelayMs: 200,
      });
      clients.push(client);
      await whenRedisReady(client, 10_000);
      return client;
    },
  };
}

function pingable(server: LocalRedis): Promise<boolean> {
  return canConnect(server.port);
}

/** Polls until `check` holds (for reconnects and timers), failing with `what` after timeoutMs. */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(25);
  }
}

/** Waits until the client answers commands again after the server came back (it reconnects on its own). */
export async function reconnected(client: RedisClient): Promise<void> {
  await eventually(
    'client reconnected',
    () =>
      client.ping().then(
        () => true,
        () => false,
      ),
    15_000,
  );
}
