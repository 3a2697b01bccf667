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

/** TLS-only Redis with ACL users, for tests of secured connections. */
export interface LocalRedisSecurity {
  certFile: string;
  keyFile: string;
  caFile: string;
  /** Clients must present a certificate signed by caFile. */
  requireClientCertificate: boolean;
  /** ACL users with every command on every key; the password-less `default` user is switched off. */
  users: Array<{ name: string; password: string }>;
}

function securityArguments(security: LocalRedisSecurity, port: number): string[] {
  for (const user of security.users)
    if (!/^[A-Za-z0-9._-]+$/.test(user.name) || !/^[A-Za-z0-9._-]+$/.test(user.password))
      throw new Error('local Redis: ACL user names and passwords must be [A-Za-z0-9._-]');
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    security.certFile,
    '--tls-key-file',
    security.keyFile,
    '--tls-ca-cert-file',
    security.caFile,
    '--tls-auth-clients',
    security.requireClientCertificate ? 'yes' : 'no',
    '--user',
    'default',
    'off',
    ...security.users.flatMap((user) => [
      '--user',
      user.name,
      'on',
      `>${user.password}`,
      '~*',
      '&*',
      '+@all',
    ]),
  ];
}

export async function startLocalRedis(opts: {
  dir: string;
  port?: number;
  security?: LocalRedisSecurity;
  /** More server arguments (a replica's `--replicaof`, a Cluster node's `--cluster-enabled yes`). */
  args?: string[];
}): Promise<LocalRedis> {
  assertRedisBinary();
  const port = opts.port ?? (await freePort());
  mkdirSync(opts.dir, { recursive: true });
  const logFile = join(opts.dir, 'redis.log');
  const state: LocalRedisState = {
    kind: 'local',
    pid: 0,
    port,
    dir: opts.dir,
    url: `${opts.security ? 'rediss' : 'redis'}://127.0.0.1:${port}`,
  };
  const listen = opts.security ? securityArguments(opts.security, port) : ['--port', String(port)];

  const start = async (): Promise<void> => {
    state.pid = spawnDetached(
      redisBinary(),
      [
        ...listen,
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        opts.dir,
        ...(opts.args ?? []),
      ],
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
