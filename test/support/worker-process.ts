// Real worker processes for integration tests: `node src/main.ts` as a child process with its own environment,
// its output in a log file, readiness through /readyz, and the ability to kill it (SIGTERM or SIGKILL).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../dev/services/index.ts';
import { allocatorEnv } from '../../src/process/allocator-env.ts';

const root = resolve(import.meta.dirname, '..', '..');
export const logsDir = join(root, '.services', 'test-logs');

export interface WorkerProcess {
  readonly name: string;
  /** HTTP_PORT: POST /webhooks/exchange only. */
  readonly port: number;
  /** METRICS_PORT: /healthz, /readyz, /metrics. */
  readonly metricsPort: number;
  readonly logFile: string;
  readonly child: ChildProcess;
  exited: Promise<number | null>;
  ready(timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  log(): string;
}

export async function startWorker(
  name: string,
  env: Record<string, string>,
  fixedPort?: number,
): Promise<WorkerProcess> {
  mkdirSync(logsDir, { recursive: true });
  const port = fixedPort ?? (await freePort());
  const metricsPort = await freePort();
  const logFile = join(logsDir, `${name}-${Date.now()}.log`);
  const out = createWriteStream(logFile);
  const child = spawn(process.execPath, [join(root, 'src', 'main.ts')], {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '',
      // The allocator settings of the worker image (src/process/allocator-env.ts).
      ...allocatorEnv,
      HTTP_PORT: String(port),
      METRICS_PORT: String(metricsPort),
      WORKER_ID: name,
      // WORKER_LOG_LEVEL=debug replays a run with every order's lease and load decisions in the workers' logs.
      LOG_LEVEL: process.env['WORKER_LOG_LEVEL'] ?? 'info',
      // WORKER_NODE_OPTIONS=--cpu-prof profiles the workers of a test or benchmark.
      ...(process.env['WORKER_NODE_OPTIONS'] ? { NODE_OPTIONS: process.env['WORKER_NODE_OPTIONS'] } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const handle: WorkerProcess = {
    name,
    port,
    metricsPort,
    logFile,
    child,
    exited,
    log: () => readFileSync(logFile, 'utf8'),
    async ready(timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (child.exitCode !== null)
          throw new Error(`worker ${name} exited with ${child.exitCode}:\n${handle.log().slice(-3000)}`);
        try {
          const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
          if (res.status === 200) return;
        } catch {
          /* not listening yet */
        }
        if (Date.now() > deadline)
          throw new Error(`worker ${name} not ready after ${timeoutMs} ms:\n${handle.log().slice(-3000)}`);
        await sleep(250);
      }
    },
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  return handle;
}
