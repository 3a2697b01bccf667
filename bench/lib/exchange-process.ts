// The exchange simulator of a benchmark in a process of its own: the sandbox and the timing pass-through in front of
// it, so that the benchmark's process only produces commands, paces, reads events and meters (with both beside it,
// that one process gave way under 10k orders' completion before the worker did). Its CPU is the simulator's: the
// benchmark meters the workers (or the floor) alone, as before.
//
// The parent forks this file (node runs the .ts directly) with an IPC channel: the child starts the pass-through and
// says `ready` with its URL; the parent then asks it to start the sandbox on the worker environment's configuration
// (the pass-through forwards to it from then on), for the call records and to set the throttle. The sandbox itself
// is driven over its admin HTTP API (`/_sandbox`). Every message that crosses is validated with zod on arrival. The
// child exits when its IPC channel closes: when the parent closes it, exits or is killed, so none outlives it.
//
// As a process of its own: node bench/lib/exchange-process.ts --exchange-process; its parent drives it.
import { fork, type ChildProcess } from 'node:child_process';
import { z } from 'zod';
import {
  parseSandboxConfig,
  startSandbox,
  type AdvanceTarget,
  type SandboxHandle,
  type WebhookOutcomeCount,
} from '../../sandbox/index.ts';
import type { ExchangeSimulator, SandboxStart } from '../../test/support/worker-environment.ts';
import { startTimedExchange, type TimedCall, type TimedExchange } from './timed-exchange.ts';

// ---- the protocol -----------------------------------------------------------------------------------------------

const requestId = z.int().nonnegative();

/** Parent -> child. */
const requestSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('start-sandbox'),
    id: requestId,
    config: z.unknown(),
    seed: z.int().optional(),
  }),
  z.object({ type: z.literal('calls'), id: requestId, from: z.int().nonnegative() }),
  z.object({ type: z.literal('call-count'), id: requestId }),
  z.object({ type: z.literal('throttle'), id: requestId, limit: z.int().positive().nullable() }),
  z.object({ type: z.literal('close-sandbox'), id: requestId }),
  z.object({ type: z.literal('close'), id: requestId }),
]);
type ExchangeRequest = z.infer<typeof requestSchema>;
/** A request as the parent writes it: its id is added on sending. */
type WithoutId<R> = R extends unknown ? Omit<R, 'id'> : never;
type RequestBody = WithoutId<ExchangeRequest>;

/** Child -> parent. */
const childMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), url: z.url() }),
  z.object({ type: z.literal('reply'), id: requestId, value: z.unknown() }),
  z.object({ type: z.literal('failure'), id: requestId, error: z.string() }),
]);
type ChildMessage = z.infer<typeof childMessageSchema>;

const sandboxUrlsSchema = z.object({ url: z.url(), v1Url: z.url(), adminUrl: z.url() });

const timedCallSchema = z.object({
  method: z.string(),
  path: z.string(),
  query: z.string(),
  startedAt: z.number(),
  endedAt: z.number().nullable(),
  status: z.int().nullable(),
}) satisfies z.ZodType<TimedCall>;

// ---- the sandbox's admin API, as the benchmark uses it ----------------------------------------------------------

const webhookOutcomeSchema = z.object({
  outcome: z.enum(['pending', 'delivered', 'failed', 'timeout', 'dropped']),
  httpStatus: z.int().nullable(),
  error: z.string().nullable(),
  count: z.int().nonnegative(),
}) satisfies z.ZodType<WebhookOutcomeCount>;

/** An exchange order as the admin API lists it (`ControlOrderView`): the v2 order and the sandbox's bookkeeping. */
const orderViewSchema = z.object({
  order: z.record(z.string(), z.unknown()),
  statusCode: z.int(),
  mode: z.string(),
  partnerId: z.string().nullable(),
  history: z.array(z.object({ status: z.string(), at: z.string() })),
});
export type RemoteOrderView = z.infer<typeof orderViewSchema>;

const batchAdvanceSchema = z.object({
  results: z.array(
    z.union([
      z.object({ reference: z.string(), passed: z.array(z.string()) }),
      z.object({ reference: z.string(), status: z.int(), detail: z.string() }),
    ]),
  ),
});

/** The sandbox in the exchange's process, driven over its admin HTTP API (what the benchmarks call of it). */
export interface RemoteSandbox extends ExchangeSimulator {
  /** Admin API base URL (no trailing slash). */
  readonly adminUrl: string;
  /**
   * Walks each order forward to `to` (one status change and webhook per step), in one request; the statuses each
   * passed. Throws, after the others moved, when any could not move (as the handle's advanceOrder throws).
   */
  advanceOrders(references: string[], to: AdvanceTarget): Promise<string[][]>;
  /** Webhook deliveries queued or in flight. */
  webhooksPending(): Promise<number>;
  /** Webhook deliveries counted by outcome, HTTP status and error. */
  webhookOutcomes(): Promise<WebhookOutcomeCount[]>;
  readonly orders: { list(): Promise<RemoteOrderView[]> };
}

async function adminCall<S extends z.ZodType>(
  adminUrl: string,
  path: string,
  schema: S,
  body?: unknown,
): Promise<z.output<S>> {
  const response = await fetch(
    `${adminUrl}${path}`,
    body === undefined
      ? {}
      : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
  );
  const text = await response.text();
  if (response.status !== 200)
    throw new Error(`sandbox admin ${path}: ${response.status} ${text.slice(0, 300)}`);
  const parsed = schema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(`sandbox admin ${path}: unexpected answer\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function remoteSandbox(urls: z.infer<typeof sandboxUrlsSchema>, close: () => Promise<void>): RemoteSandbox {
  const { adminUrl } = urls;
  return {
    ...urls,
    close,
    async advanceOrders(references, to) {
      const { results } = await adminCall(adminUrl, '/orders/advance/', batchAdvanceSchema, {
        references,
        to,
      });
      const refused = results.flatMap((r) =>
        'passed' in r ? [] : [`${r.reference}: ${r.status} ${r.detail}`],
      );
      if (refused.length > 0)
        throw new Error(
          `sandbox refused to advance ${refused.length} of ${references.length} orders: ${refused.slice(0, 5).join('; ')}`,
        );
      return results.map((r) => ('passed' in r ? r.passed : []));
    },
    webhooksPending: async () =>
      (await adminCall(adminUrl, '/webhooks/pending/', z.object({ pending: z.int().nonnegative() }))).pending,
    webhookOutcomes: () => adminCall(adminUrl, '/webhooks/outcomes/', z.array(webhookOutcomeSchema)),
    orders: { list: () => adminCall(adminUrl, '/orders/', z.array(orderViewSchema)) },
  };
}

// ---- the parent's side ------------------------------------------------------------------------------------------

/** The exchange's process: the pass-through's records and throttle (`TimedExchange`), and the sandbox to start. */
export interface ExchangeProcess extends TimedExchange {
  readonly child: ChildProcess;
  /** Starts the sandbox in the child; the pass-through forwards to it from then on. Once per process. */
  startSandbox(start: SandboxStart): Promise<RemoteSandbox>;
}

/** Forks the exchange's process and waits until its pass-through listens. */
export async function startExchangeProcess(): Promise<ExchangeProcess> {
  const child = fork(new URL(import.meta.url), ['--exchange-process'], {
    // Whatever flags the benchmark runs with (--expose-gc, --cpu-prof, --input-type), the simulator needs none;
    // BENCH_EXCHANGE_NODE_OPTIONS=--cpu-prof profiles it (as WORKER_NODE_OPTIONS does the workers).
    execArgv: [],
    env: {
      PATH: process.env['PATH'] ?? '',
      ...(process.env['BENCH_EXCHANGE_NODE_OPTIONS']
        ? { NODE_OPTIONS: process.env['BENCH_EXCHANGE_NODE_OPTIONS'] }
        : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let ready: (url: string) => void = () => undefined;
  const readyUrl = new Promise<string>((resolve, reject) => {
    ready = resolve;
    void exited.then((code) => reject(new Error(`exchange process exited with ${code} before it was ready`)));
  });
  child.on('message', (raw: unknown) => {
    const parsed = childMessageSchema.safeParse(raw);
    if (!parsed.success) {
      process.emitWarning(`exchange process: unexpected message\n${z.prettifyError(parsed.error)}`);
      return;
    }
    const message: ChildMessage = parsed.data;
    if (message.type === 'ready') return ready(message.url);
    const pending = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.type === 'reply') pending?.resolve(message.value);
    else pending?.reject(new Error(`exchange process: ${message.error}`));
  });
  void exited.then((code) => {
    for (const pending of waiting.values()) pending.reject(new Error(`exchange process exited with ${code}`));
    waiting.clear();
  });

  const ask = async <S extends z.ZodType>(body: RequestBody, schema: S): Promise<z.output<S>> => {
    if (!child.connected) throw new Error('exchange process: not running');
    const id = nextId++;
    const value = await new Promise<unknown>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      child.send({ ...body, id } satisfies ExchangeRequest, (error) => {
        if (error) {
          waiting.delete(id);
          reject(error);
        }
      });
    });
    const parsed = schema.safeParse(value);
    if (!parsed.success)
      throw new Error(`exchange process: unexpected ${body.type} answer\n${z.prettifyError(parsed.error)}`);
    return parsed.data;
  };

  const url = await readyUrl;
  return {
    child,
    url,
    async startSandbox(start) {
      const urls = await ask(
        {
          type: 'start-sandbox',
          config: start.config,
          ...(start.seed === undefined ? {} : { seed: start.seed }),
        },
        sandboxUrlsSchema,
      );
      return remoteSandbox(urls, async () => {
        if (child.connected) await ask({ type: 'close-sandbox' }, z.null());
      });
    },
    calls: (from = 0) => ask({ type: 'calls', from }, z.array(timedCallSchema)),
    callCount: () => ask({ type: 'call-count' }, z.int().nonnegative()),
    throttle: async (limit) => {
      await ask({ type: 'throttle', limit }, z.null());
    },
    close: async () => {
      if (child.connected) {
        await ask({ type: 'close' }, z.null());
        child.disconnect();
      }
      await exited;
    },
  };
}

// ---- the child's side -------------------------------------------------------------------------------------------

async function exchangeProcess(): Promise<void> {
  // The parent went (closed the channel, exited or was killed): nothing of this process is of use any more.
  process.once('disconnect', () => process.exit(0));
  const send = (message: ChildMessage): void => {
    process.send?.(message);
  };
  const exchange = await startTimedExchange();
  let sandbox: SandboxHandle | undefined;

  const answer = async (request: ExchangeRequest): Promise<unknown> => {
    switch (request.type) {
      case 'start-sandbox': {
        if (sandbox) throw new Error('the sandbox is already running');
        sandbox = await startSandbox({
          config: parseSandboxConfig(request.config),
          ...(request.seed === undefined ? {} : { seed: request.seed }),
        });
        exchange.setUpstream(sandbox.url);
        return { url: sandbox.url, v1Url: sandbox.v1Url, adminUrl: sandbox.adminUrl };
      }
      case 'calls':
        return exchange.calls.slice(request.from);
      case 'call-count':
        return exchange.calls.length;
      case 'throttle':
        exchange.throttle(request.limit);
        return null;
      case 'close-sandbox':
        await sandbox?.close();
        return null;
      case 'close':
        await sandbox?.close();
        await exchange.close();
        return null;
    }
  };

  process.on('message', (raw: unknown) => {
    const parsed = requestSchema.safeParse(raw);
    if (!parsed.success) {
      process.emitWarning(`exchange process: unexpected request\n${z.prettifyError(parsed.error)}`);
      return;
    }
    const request = parsed.data;
    answer(request).then(
      (value) => send({ type: 'reply', id: request.id, value }),
      (error: unknown) =>
        send({ type: 'failure', id: request.id, error: (error as Error).stack ?? String(error) }),
    );
  });
  send({ type: 'ready', url: exchange.url });
}

if (process.argv.includes('--exchange-process')) await exchangeProcess();
