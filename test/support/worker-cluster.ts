// A whole system for integration tests: the exchange sandbox (in this process, so the test can drive it), real
// worker processes, a real Kafka (topics unique to the test) and a real Redis, a command producer and an event
// collector. Webhooks from the sandbox go, signed, to one chosen worker.
import {
  demoConfig,
  demoKeys,
  demoReferral,
  startSandbox,
  type SandboxConfigInput,
  type SandboxHandle,
} from '../../src/sandbox/index.ts';
import { freePort } from '../../dev/services/index.ts';
import { EventCollector, commandProducer, testKafka } from './kafka-helpers.ts';
import { services, uniqueName } from './services.ts';
import { startWorker, type WorkerProcess } from './worker-process.ts';

export const webhookSecret = 'test-webhook-secret-0123456789';

export interface Cluster {
  sandbox: SandboxHandle;
  workers: WorkerProcess[];
  collector: EventCollector;
  send: (command: Record<string, unknown>, opts?: { key?: string | null; raw?: string }) => Promise<void>;
  topics: { commands: string; events: string };
  env: Record<string, string>;
  webhookPort: number;
  startAnotherWorker: (name: string) => Promise<WorkerProcess>;
  stop: () => Promise<void>;
}

export async function startCluster(opts: {
  workers: number;
  partitions?: number;
  redisUrl?: string;
  env?: Record<string, string>;
  sandbox?: (config: SandboxConfigInput) => SandboxConfigInput;
}): Promise<Cluster> {
  const { kafkaBrokers, redisUrl } = services();
  const name = uniqueName('it');
  const topics = { commands: `${name}.commands`, events: `${name}.events` };
  const webhookPort = await freePort();
  const base: SandboxConfigInput = {
    ...demoConfig,
    partners: demoConfig.partners.map((partner) =>
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
  const sandbox = await startSandbox({ config: opts.sandbox ? opts.sandbox(base) : base });
  const env: Record<string, string> = {
    KAFKA_BROKERS: kafkaBrokers.join(','),
    REDIS_URL: opts.redisUrl ?? redisUrl,
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
    KAFKA_TRANSACTION_TIMEOUT_MS: '10000',
    SHUTDOWN_TIMEOUT_MS: '15000',
    ...opts.env,
  };
  const workers: WorkerProcess[] = [];
  const startAnotherWorker = async (workerName: string, port?: number): Promise<WorkerProcess> => {
    const worker = await startWorker(workerName, env, port);
    workers.push(worker);
    return worker;
  };
  // The first worker creates the topics; the others join its consumer group.
  for (let i = 0; i < opts.workers; i++)
    await startAnotherWorker(`${name}-w${i + 1}`, i === 0 ? webhookPort : undefined);
  await Promise.all(workers.map((w) => w.ready()));
  const kafka = testKafka(kafkaBrokers);
  const producer = await commandProducer(kafka, topics.commands);
  const collector = await EventCollector.start(kafka, topics.events);
  return {
    sandbox,
    workers,
    collector,
    send: producer.send,
    topics,
    env,
    webhookPort,
    startAnotherWorker: (workerName) => startAnotherWorker(workerName),
    stop: async () => {
      await Promise.all(workers.map((w) => w.kill('SIGTERM')));
      await producer.close();
      await collector.stop();
      await sandbox.close();
    },
  };
}

export const addresses = {
  eth: '0x52908400098527886E0F7030069857D2E4169EE7',
  eth2: '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
  btc: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
};
