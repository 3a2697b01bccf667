// The system around real worker processes, for integration tests and benchmarks: the exchange sandbox in this
// process (so the caller can drive it), worker child processes configured against it, topics and a consumer
// group unique to the run. Webhooks from the sandbox go, signed, to the first worker. A benchmark may start the
// sandbox elsewhere (`startSandbox`: in a process of its own) on the very configuration built here.
import { randomBytes } from 'node:crypto';
import { freePort } from '../../dev/services/index.ts';
import {
  demoConfig,
  demoKeys,
  demoReferral,
  startSandbox,
  type SandboxConfigInput,
  type SandboxHandle,
} from '../../sandbox/index.ts';
import { testOperatorPublicKeys } from './operator-key.ts';
import { startWorker, type WorkerProcess } from './worker-process.ts';

export const webhookSecret = 'test-webhook-secret-0123456789';

/** What the environment needs of an exchange simulator: where the workers reach it, and how to stop it. */
export interface ExchangeSimulator {
  /** v2 base URL (no trailing slash). */
  readonly url: string;
  /** v1 base URL (no trailing slash). */
  readonly v1Url: string;
  close(): Promise<void>;
}

/** The sandbox to start: the environment's configuration (webhooks to the first worker, signed) and seed. */
export interface SandboxStart {
  config: SandboxConfigInput;
  seed?: number;
}

export interface WorkerEnvironment<S extends ExchangeSimulator = SandboxHandle> {
  sandbox: S;
  workers: WorkerProcess[];
  topics: { commands: string; events: string };
  env: Record<string, string>;
  webhookPort: number;
  startAnotherWorker: (name: string) => Promise<WorkerProcess>;
  stop: () => Promise<void>;
}

export interface WorkerEnvironmentOptions {
  kafkaBrokers: string[];
  redisUrl: string;
  workers: number;
  partitions?: number;
  env?: Record<string, string>;
  sandbox?: (config: SandboxConfigInput) => SandboxConfigInput;
  baseConfig?: SandboxConfigInput;
  /** Seed of the sandbox's PRNG (fault draws), so a fault run replays. */
  sandboxSeed?: number;
}

/** The sandbox in this process (the tests drive it through its handle). */
export function startWorkerEnvironment(opts: WorkerEnvironmentOptions): Promise<WorkerEnvironment>;
/** The sandbox started by `startSandbox` (e.g. in another process) on the configuration the environment built. */
export function startWorkerEnvironment<S extends ExchangeSimulator>(
  opts: WorkerEnvironmentOptions & { startSandbox: (start: SandboxStart) => Promise<S> },
): Promise<WorkerEnvironment<S>>;
export async function startWorkerEnvironment(
  opts: WorkerEnvironmentOptions & { startSandbox?: (start: SandboxStart) => Promise<ExchangeSimulator> },
): Promise<WorkerEnvironment<ExchangeSimulator>> {
  const name = `it-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const topics = { commands: `${name}.commands`, events: `${name}.events` };
  const webhookPort = await freePort();
  const config = opts.baseConfig ?? demoConfig;
  const base: SandboxConfigInput = {
    ...config,
    partners: config.partners.map((partner) =>
      partner.id === 'demo'
        ? {
            ...partner,
            webhooks: [
              {
                id: 'worker',
                url: `http://127.0.0.1:${webhookPort}/webhooks/exchange`,
                categories: ['order_status', 'kyc_status'],
                payloadVersion: 'v2',
                secret: webhookSecret,
              },
            ],
          }
        : partner,
    ),
    quotes: { ttlSeconds: 120, actionableDelayMs: 300 },
  };
  const start: SandboxStart = {
    config: opts.sandbox ? opts.sandbox(base) : base,
    ...(opts.sandboxSeed === undefined ? {} : { seed: opts.sandboxSeed }),
  };
  const sandbox = await (opts.startSandbox ?? startSandbox)(start);
  const env: Record<string, string> = {
    KAFKA_BROKERS: opts.kafkaBrokers.join(','),
    REDIS_URL: opts.redisUrl,
    EXCHANGE_API_URL: sandbox.url,
    EXCHANGE_API_V1_URL: sandbox.v1Url,
    EXCHANGE_API_KEY_DEFI: demoKeys.defi,
    EXCHANGE_API_KEY_CEFI: demoKeys.cefi,
    EXCHANGE_API_KEY_CEFI_FIXED: demoKeys.cefiFixed,
    EXCHANGE_REFERRAL_TOKEN: demoReferral.token,
    WEBHOOK_SECRET: webhookSecret,
    TOPIC_COMMANDS: topics.commands,
    TOPIC_EVENTS: topics.events,
    TOPIC_PARTITIONS: String(opts.partitions ?? 3),
    CONSUMER_GROUP: `${name}.workers`,
    LEASE_TTL_MS: '6000',
    CREATE_SETTLE_MS: '8000',
    PARKED_RECHECK_MS: '10000',
    KAFKA_TRANSACTION_TIMEOUT_MS: '10000',
    SHUTDOWN_TIMEOUT_MS: '15000',
    // Far shorter than the 2 s default: nearly every wait of a test's orders (a poll, a deposit, a webhook) is
    // spent passivated, so the paths that bring an order back are exercised end to end.
    PASSIVATE_IDLE_MS: '250',
    // The test operator's key: operator commands the tests send are signed with it (worker-cluster.ts).
    OPERATOR_PUBLIC_KEYS: testOperatorPublicKeys,
    ...opts.env,
  };
  const workers: WorkerProcess[] = [];
  const startAnotherWorker = async (workerName: string, port?: number): Promise<WorkerProcess> => {
    const worker = await startWorker(workerName, env, port);
    workers.push(worker);
    return worker;
  };
  // The first worker creates the topics and receives the webhooks; the others join its consumer group.
  for (let i = 0; i < opts.workers; i++)
    await startAnotherWorker(`${name}-w${i + 1}`, i === 0 ? webhookPort : undefined);
  try {
    await Promise.all(workers.map((w) => w.ready()));
  } catch (error) {
    // Nobody gets a handle to stop them: a replica that never got ready must not outlive the test.
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await sandbox.close();
    throw error;
  }
  return {
    sandbox,
    workers,
    topics,
    env,
    webhookPort,
    startAnotherWorker: (workerName) => startAnotherWorker(workerName),
    stop: async () => {
      await Promise.all(workers.map((w) => w.kill('SIGTERM')));
      await sandbox.close();
    },
  };
}
