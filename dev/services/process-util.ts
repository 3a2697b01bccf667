// Small process and socket helpers for provisioning local services in tests, benchmarks and the demo.
// Everything here is dev tooling: the worker itself never spawns services.
import { spawn } from 'node:child_process';
import { openSync, readFileSync, existsSync, closeSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Ports this process has handed out: never handed out twice (see freePort). */
const handedOut = new Set<number>();

/**
 * A port nothing is bound to now, never one this process handed out before, and outside the kernel's ephemeral
 * range when it can tell. Two failures led here:
 * - the kernel hands a just-closed ephemeral port out again readily (265 repeats in 2000 calls here), so callers that
 *   ask for ports before they bind them (several workers started at once) could be given the same one;
 * - a port of the ephemeral range, free when it was picked, can be taken by an outgoing connection before the
 *   service binds it: a benchmark that had just sent 50,000 webhooks (a connection each) started a worker whose
 *   webhook port failed with EADDRINUSE. Ports below the range are never handed to outgoing connections.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralLow();
  for (let attempt = 0; attempt < 200 && below !== undefined; attempt++) {
    const port = lowPortFloor + Math.floor(Math.random() * (below - lowPortFloor));
    if (handedOut.has(port) || !(await canBind(port))) continue;
    handedOut.add(port);
    return port;
  }
  for (let attempt = 0; ; attempt++) {
    const port = await anyFreePort();
    if (!handedOut.has(port) || attempt >= 100) {
      handedOut.add(port);
      return port;
    }
  }
}

/** The lowest port freePort picks below the ephemeral range (above the ports well-known services use). */
const lowPortFloor = 20_000;

/** The first port of the kernel's ephemeral range (Linux), when it leaves room below it for freePort. */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > lowPortFloor + 1_000 ? low : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a server can listen on `port` on every interface (as the worker does) and on 127.0.0.1. */
async function canBind(port: number): Promise<boolean> {
  for (const host of [undefined, '127.0.0.1']) {
    const ok = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.unref();
      server.once('error', () => resolve(false));
      server.listen({ port, ...(host ? { host } : {}), exclusive: true }, () =>
        server.close(() => resolve(true)),
      );
    });
    if (!ok) return false;
  }
  return true;
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
