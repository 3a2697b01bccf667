// Benchmark of the shared request budget: two replica processes, each with its own ExchangeClient and its own
// RedisRequestBudget on one Redis, together offer twice the exchange's per-key budget for one window; the
// exchange (the sandbox, whose global throttle is a sliding window judged on arrival) says how many got through
// and how many it throttled. Prints: offered, admitted, accepted, 429s, % of the budget, admission waits.
//
//   node bench/request-budget.ts                 # the real budget: 2500 requests/min, one 60 s window
//   node bench/request-budget.ts --limit 600 --duration-ms 20000 --window-ms 20000
//
// A shorter window needs a judge that counts over it, so it uses the bench's own minimal throttle (`--judge
// builtin`); the sandbox (the default judge) always counts a 60 s window.
import { fork } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startLocalRedis } from '../dev/services/redis-local.ts';
import { ExchangeError } from '../src/exchange/errors.ts';
import { RedisRequestBudget } from '../src/exchange/redis-request-budget.ts';
import type { RequestPriority } from '../src/exchange/request-budget.ts';
import { defineRedisScripts } from '../src/redis/scripts.ts';
import { demoConfig, demoKeys, startSandbox } from '../sandbox/index.ts';
import { FullExchangeClient } from '../test/support/exchange/full-client.ts';
import { saveResult } from './lib/harness.ts';

interface ReplicaReport {
  offered: number;
  admitted: number;
  accepted: number;
  throttled429: number;
  otherErrors: Record<string, number>;
  unadmitted: number;
  waitMs: Record<RequestPriority, number[]>;
}

const builtinKey = 'bench-cefi-key-000000000001';

// ---------------------------------------------------------------------------------------------------------------
// Replica: offers `offerPerWindow` requests per window, open loop, for `durationMs`; 20% high priority.

async function runReplica(): Promise<void> {
  const env = (name: string): string => {
    const value = process.env[name];
    if (value === undefined) throw new Error(`replica: ${name} missing`);
    return value;
  };
  const limit = Number(env('BENCH_LIMIT'));
  const windowMs = Number(env('BENCH_WINDOW_MS'));
  const durationMs = Number(env('BENCH_DURATION_MS'));
  const offerPerWindow = Number(env('BENCH_OFFER_PER_WINDOW'));
  const startAt = Number(env('BENCH_START_AT'));
  const redis = defineRedisScripts(
    new Redis(env('REDIS_URL'), { enableOfflineQueue: false, maxRetriesPerRequest: 1 }),
  );
  await new Promise((resolve) => redis.once('ready', resolve));
  const budget = new RedisRequestBudget({ redis, limit, windowMs, keyPrefix: env('BENCH_PREFIX') });
  const report: ReplicaReport = {
    offered: 0,
    admitted: 0,
    accepted: 0,
    throttled429: 0,
    otherErrors: {},
    unadmitted: 0,
    waitMs: { high: [], normal: [], low: [] },
  };
  const deadline = new AbortController();
  // Counts admissions as the client passes the budget.
  const counted = {
    acquire: async (key: string, priority: RequestPriority, signal?: AbortSignal) => {
      await budget.acquire(key, priority, signal);
      report.admitted += 1;
    },
    penalize: (key: string, retryAfterMs: number) => budget.penalize(key, retryAfterMs),
  };
  const measured = new FullExchangeClient({
    baseUrl: env('BENCH_URL'),
    credentials: { cefi: env('BENCH_KEY') },
    budget: counted,
    retry: { maxAttempts: 1 }, // count every 429 the exchange sends, none hidden by a retry
  });

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
  const stopTimer = setTimeout(() => deadline.abort(new Error('bench window over')), durationMs);
  const intervalMs = windowMs / offerPerWindow;
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; !deadline.signal.aborted; i++) {
    const due = started + i * intervalMs;
    const sleepMs = due - performance.now();
    if (sleepMs > 0) await new Promise((resolve) => setTimeout(resolve, sleepMs));
    if (deadline.signal.aborted) break;
    const priority: RequestPriority = i % 5 === 0 ? 'high' : 'low';
    report.offered += 1;
    const offeredAt = performance.now();
    inFlight.push(
      (async () => {
        try {
          await measured.listPairs('cefi', { priority, signal: deadline.signal });
          report.accepted += 1;
          report.waitMs[priority].push(performance.now() - offeredAt);
        } catch (err) {
          if (err instanceof ExchangeError) {
            if (err.httpStatus === 429) report.throttled429 += 1;
            else report.otherErrors[err.code] = (report.otherErrors[err.code] ?? 0) + 1;
          } else {
            report.unadmitted += 1; // aborted while still waiting for the budget at the end of the run
          }
        }
      })(),
    );
  }
  clearTimeout(stopTimer);
  await Promise.all(inFlight);
  await measured.close();
  redis.disconnect();
  process.send?.(report);
}

// ---------------------------------------------------------------------------------------------------------------
// Judges

interface Judge {
  url: string;
  /** Requests the judge accepted / throttled, by its own count. */
  counts(): Promise<{ accepted: number; throttled: number } | undefined>;
  stop(): Promise<void>;
}

/** The bench's own minimal exchange: GET /pair/ behind the document's global throttle, a sliding window. */
async function builtinJudge(limit: number, windowMs: number): Promise<Judge & { key: string }> {
  const hits: number[] = [];
  let accepted = 0;
  let throttled = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const now = Date.now();
    if (req.headers.authorization !== `ApiKey ${builtinKey}`) {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end('{"detail":"Authentication credentials were not provided."}');
      return;
    }
    while (hits.length > 0 && (hits[0] ?? 0) <= now - windowMs) hits.shift();
    if (hits.length >= limit) {
      throttled += 1;
      const wait = Math.max(1, Math.ceil(((hits[0] ?? now) + windowMs - now) / 1000));
      res
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': String(wait) })
        .end(JSON.stringify({ detail: `Request was throttled. Expected available in ${wait} seconds.` }));
      return;
    }
    hits.push(now);
    accepted += 1;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end('[{"name":"ETHBTC","from":"BTC","to":"ETH","disabled":false}]');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/api/v2`,
    key: builtinKey,
    counts: () => Promise.resolve({ accepted, throttled }),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The sandbox's demo world with its global throttle at `limitPerMinute`; its demo CeFi key is the bench key. */
async function sandboxJudge(limitPerMinute: number): Promise<Judge & { key: string }> {
  const handle = await startSandbox({
    config: { ...demoConfig, limits: { ...demoConfig.limits, globalRequestsPerMinute: limitPerMinute } },
  });
  return {
    url: handle.url,
    key: demoKeys.cefi,
    counts: () => Promise.resolve(undefined),
    stop: () => handle.close(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Parent

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      limit: { type: 'string', default: '2500' },
      'window-ms': { type: 'string', default: '60000' },
      'duration-ms': { type: 'string' },
      judge: { type: 'string', default: 'sandbox' },
    },
  });
  const limit = Number(values.limit);
  const windowMs = Number(values['window-ms']);
  const durationMs = Number(values['duration-ms'] ?? windowMs);
  let judge: (Judge & { key: string }) | undefined;
  let judgeName = values.judge;
  if (judgeName === 'sandbox' && windowMs === 60_000) judge = await sandboxJudge(limit);
  if (judge === undefined) {
    judgeName = 'builtin';
    judge = await builtinJudge(limit, windowMs);
  }

  let redisUrl = process.env['REDIS_URL'];
  let cleanup = (): Promise<void> => Promise.resolve();
  if (redisUrl === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-redis-'));
    const redis = await startLocalRedis({ dir });
    redisUrl = redis.url;
    cleanup = async () => {
      await redis.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
  }

  const replicas = 2;
  const startAt = Date.now() + 1_500;
  const env = {
    ...process.env,
    REDIS_URL: redisUrl,
    BENCH_URL: judge.url,
    BENCH_KEY: judge.key,
    BENCH_LIMIT: String(limit),
    BENCH_WINDOW_MS: String(windowMs),
    BENCH_DURATION_MS: String(durationMs),
    BENCH_OFFER_PER_WINDOW: String(limit), // each replica offers the whole budget: together twice the budget
    BENCH_START_AT: String(startAt),
    BENCH_PREFIX: `bench:budget:${Date.now().toString(36)}`,
  };
  const reports = await Promise.all(
    Array.from(
      { length: replicas },
      () =>
        new Promise<ReplicaReport>((resolve, reject) => {
          const child = fork(new URL(import.meta.url), ['--replica'], { env, stdio: 'inherit' });
          child.once('message', (message) => resolve(message as ReplicaReport));
          child.once('exit', (code) =>
            code === 0 ? undefined : reject(new Error(`replica exited with ${code}`)),
          );
        }),
    ),
  );
  const judged = await judge.counts();
  await judge.stop();
  await cleanup();

  const sum = (pick: (r: ReplicaReport) => number): number =>
    reports.reduce((total, r) => total + pick(r), 0);
  const budgetInRun = limit * (durationMs / windowMs);
  const accepted = sum((r) => r.accepted);
  const waits = (p: RequestPriority): number[] => reports.flatMap((r) => r.waitMs[p]);
  const otherErrors: Record<string, number> = {};
  for (const r of reports)
    for (const [code, n] of Object.entries(r.otherErrors)) otherErrors[code] = (otherErrors[code] ?? 0) + n;
  const figures = {
    judge: judgeName,
    limit: `${limit} per ${windowMs} ms`,
    durationMs,
    replicas,
    offered: sum((r) => r.offered),
    offeredPerReplica: reports.map((r) => r.offered),
    admittedByBudget: sum((r) => r.admitted),
    acceptedByExchange: accepted,
    acceptedPerReplica: reports.map((r) => r.accepted),
    throttled429: sum((r) => r.throttled429),
    otherErrors,
    stillWaitingAtEnd: sum((r) => r.unadmitted),
    judgeOwnCount: judged ?? 'n/a',
    percentOfBudget: Number(((100 * accepted) / budgetInRun).toFixed(2)),
    waitMsP50: {
      high: Math.round(percentile(waits('high'), 50)),
      low: Math.round(percentile(waits('low'), 50)),
    },
    waitMsP95: {
      high: Math.round(percentile(waits('high'), 95)),
      low: Math.round(percentile(waits('low'), 95)),
    },
  };
  console.log(JSON.stringify(figures, null, 2));
  await saveResult('request-budget', figures);
}

if (process.argv.includes('--replica')) await runReplica();
else await main();
