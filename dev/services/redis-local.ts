// A redis-server of our own on a free port, with its own directory, so tests can kill and restart it.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  canConnect,
  freePort,
  isAlive,
  killAndWait,
  spawnDetached,
  tailFile,
  waitUntil,
} from './process-util.ts';

export interface LocalRedisState {
  kind: 'local';
  pid: number;
  port: number;
  dir: string;
  url: string;
}

export interface LocalRedis {
  readonly url: string;
  readonly port: number;
  readonly state: LocalRedisState;
  /** Stops the server; with no persistence configured, a restart comes back empty. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
}

function redisBinary(): string {
  return process.env['REDIS_SERVER_BIN'] ?? 'redis-server';
}

export function assertRedisBinary(): void {
  try {
    execFileSync(redisBinary(), ['--version'], { stdio: 'pipe' });
  } catch {
    throw new Error(`redis-server not found (set REDIS_URL, install redis-server, or set REDIS_SERVER_BIN)`);
  }
}

export async function startLocalRedis(opts: { dir: string; port?: number }): Promise<LocalRedis> {
  assertRedisBinary();
  const port = opts.port ?? (await freePort());
  mkdirSync(opts.dir, { recursive: true });
  const logFile = join(opts.dir, 'redis.log');
  const state: LocalRedisState = {
    kind: 'local',
    pid: 0,
    port,
    dir: opts.dir,
    url: `redis://127.0.0.1:${port}`,
  };

  const start = async (): Promise<void> => {
    state.pid = spawnDetached(
      redisBinary(),
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', opts.dir],
      { logFile },
    );
    await waitUntil(
      `redis-server on port ${port}`,
      async () => isAlive(state.pid) && (await canConnect(port)),
      15_000,
      () => tailFile(logFile),
    );
  };
  await start();
  return {
    url: state.url,
    port,
    state,
    stop: (signal = 'SIGTERM') => killAndWait(state.pid, signal),
    start,
    restart: async () => {
      await killAndWait(state.pid, 'SIGKILL');
      await start();
    },
  };
}

export async function stopLocalRedis(state: LocalRedisState): Promise<void> {
  await killAndWait(state.pid);
  rmSync(state.dir, { recursive: true, force: true });
}
