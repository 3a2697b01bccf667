// Small process and socket helpers for provisioning local services in tests, benchmarks and the demo.
// Everything here is dev tooling: the worker itself never spawns services.
import { spawn } from 'node:child_process';
import { openSync, readFileSync, existsSync, closeSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Ports this process has handed out: never handed out twice (see freePort). */
const handedOut = new Set<number>();

/**
 * A port nothing listens on now, never one this process handed out before. The kernel hands a just-closed
 * ephemeral port out again readily (265 repeats in 2000 calls here), so callers that ask for ports before they bind
 * them (several workers started at once) could be given the same one, and one of them failed with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = await anyFreePort();
    if (!handedOut.has(port) || attempt >= 100) {
      handedOut.add(port);
      return port;
    }
  }
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export function canConnect(port: number, host = '127.0.0.1', timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export function isAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts a process that outlives its parent (so `services:up` can exit), with output appended to a log file. */
export function spawnDetached(
  command: string,
  args: string[],
  opts: { cwd?: string; logFile: string; env?: NodeJS.ProcessEnv },
): number {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  child.unref();
  if (!child.pid) throw new Error(`could not start ${command}`);
  return child.pid;
}

export async function killAndWait(
  pid: number | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
  timeoutMs = 20_000,
): Promise<void> {
  if (!pid || !isAlive(pid)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    while (isAlive(pid)) await sleep(50);
  }
}

export function tailFile(path: string, lines = 40): string {
  if (!existsSync(path)) return `(no log at ${path})`;
  const text = readFileSync(path, 'utf8').trimEnd().split('\n');
  return text.slice(-lines).join('\n');
}

export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  onTimeout?: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) {
      throw new Error(`${what} not ready after ${timeoutMs} ms${onTimeout ? `\n${onTimeout()}` : ''}`);
    }
    await sleep(200);
  }
}
