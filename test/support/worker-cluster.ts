// A whole system for integration tests: the worker environment (sandbox + worker processes) on the services the
// global setup provisioned, plus a command producer and an event collector on the run's own topics.
import type { SandboxConfigInput } from '../../sandbox/index.ts';
import { EventCollector, commandProducer, testKafka, type SendOptions } from './kafka-helpers.ts';
import { operatorHeadersFor } from './operator-key.ts';
import { services } from './services.ts';
import { startWorkerEnvironment, type WorkerEnvironment } from './worker-environment.ts';

export { addresses } from './addresses.ts';
export { webhookSecret } from './worker-environment.ts';

export interface Cluster extends WorkerEnvironment {
  collector: EventCollector;
  send: (command: Record<string, unknown>, opts?: SendOptions) => Promise<void>;
}

export async function startCluster(opts: {
  workers: number;
  partitions?: number;
  redisUrl?: string;
  /** Brokers of a Kafka of the test's own (e.g. one it restarts); default: the provisioned one. */
  kafkaBrokers?: string[];
  env?: Record<string, string>;
  sandbox?: (config: SandboxConfigInput) => SandboxConfigInput;
  sandboxSeed?: number;
}): Promise<Cluster> {
  const { redisUrl } = services();
  const kafkaBrokers = opts.kafkaBrokers ?? services().kafkaBrokers;
  const environment = await startWorkerEnvironment({
    ...opts,
    kafkaBrokers,
    redisUrl: opts.redisUrl ?? redisUrl,
  });
  const kafka = testKafka(kafkaBrokers);
  const producer = await commandProducer(kafka, environment.topics.commands);
  const collector = await EventCollector.start(kafka, environment.topics.events);
  return {
    ...environment,
    collector,
    // The tests play the operator too: an order.settle is signed with the test operator's key unless `unsigned`.
    send: (command, sendOpts = {}) => {
      if (command['type'] !== 'order.settle' || sendOpts.unsigned || sendOpts.raw !== undefined)
        return producer.send(command, sendOpts);
      const key = sendOpts.key === undefined ? String(command['order_id']) : (sendOpts.key ?? '');
      return producer.send(command, {
        ...sendOpts,
        headers: { ...sendOpts.headers, ...operatorHeadersFor(key, JSON.stringify(command)) },
      });
    },
    stop: async () => {
      await environment.stop();
      await producer.close();
      await collector.stop();
    },
  };
}
