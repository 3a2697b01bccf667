// The Kafka parts: the client, the transactional writer (whose failure for good stops the process, the order host
// first), the state store that every replica reads (the read view of the fleet, the routes of its orders), the
// command consumer, the best-effort producer of hints and the cluster admin. `kafkaAccessOf` explains an
// authorization failure with the ACLs that cover it.
import type { WorkerConfig } from '../config.ts';
import type { FleetView } from '../fleet/fleet-view.ts';
import { BestEffortProducer } from '../kafka/best-effort-producer.ts';
import { ClusterAdmin } from '../kafka/cluster-admin.ts';
import { CommandConsumer } from '../kafka/command-consumer.ts';
import { createKafka, type KafkaClient } from '../kafka/kafka-client.ts';
import { OrderStateStore } from '../kafka/order-state-store.ts';
import { TransactionalWriter } from '../kafka/transactional-writer.ts';
import { explainKafkaAccess, transactionalIdOf, workerAcls } from '../kafka/worker-acls.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import type { OrderRoutes } from '../worker/webhook-routing.ts';

/** For a Kafka authorization failure, `access`: what the broker refused and the ACLs that cover it. */
export function kafkaAccessOf(error: unknown, config: WorkerConfig): { access?: string } {
  const access = explainKafkaAccess(
    error,
    workerAcls({ ...config.topics, consumerGroup: config.consumerGroup }),
  );
  return access === undefined ? {} : { access };
}

export function buildKafka(config: WorkerConfig, logger: Logger): KafkaClient {
  return createKafka({
    clientId: `exchange-order-worker.${config.workerId}`,
    brokers: config.kafkaBrokers,
    logger,
    security: config.security.kafka,
  });
}

/** The process stops when Kafka can no longer be written or read for good; another replica takes over. */
export interface KafkaFailures {
  /** Aborted when Kafka fails for good: the process stops. */
  readonly fatal: AbortController;
  /** Aborted first when the writer fails: the order host stops every actor before any waiter of a write resumes. */
  readonly writerFailed: AbortController;
}

export function buildWriter(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  kafka: KafkaClient,
  failures: KafkaFailures,
): TransactionalWriter {
  return new TransactionalWriter({
    kafka,
    transactionalId: transactionalIdOf(config.consumerGroup, config.workerId),
    consumerGroupId: config.consumerGroup,
    transactionTimeoutMs: config.kafkaTransactionTimeoutMs,
    lingerMs: config.kafkaTransactionLingerMs,
    logger,
    compressedTopics: [config.topics.state],
    onFatal: (error) => {
      failures.writerFailed.abort(error);
      failures.fatal.abort(error);
    },
    onTransaction: ({ outcome, seconds }) => {
      telemetry.metrics.kafkaCommitDuration.record(seconds, { outcome });
      if (outcome === 'committed') telemetry.metrics.kafkaTransactions.add(1);
    },
  });
}

export function buildStateStore(
  config: WorkerConfig,
  logger: Logger,
  parts: {
    kafka: KafkaClient;
    writer: TransactionalWriter;
    routes: Pick<OrderRoutes, 'record'>;
    fleet: FleetView;
  },
): OrderStateStore {
  const { routes, fleet } = parts;
  return new OrderStateStore({
    kafka: parts.kafka,
    topic: config.topics.state,
    workerId: config.workerId,
    writer: parts.writer,
    logger,
    transactionTimeoutMs: config.kafkaTransactionTimeoutMs,
    onReference: (reference, orderId, partition) => routes.record(reference, orderId, partition),
    // The read view of the orders this replica owns: the read API answers for them from it, and asks their owners
    // for the others (src/fleet/fleet-peers.ts).
    onRecord: (record) => ('forgotten' in record ? fleet.forget(record.forgotten) : fleet.apply(record)),
    onRelease: (partitions) => fleet.release(partitions),
  });
}

export function buildConsumer(
  config: WorkerConfig,
  logger: Logger,
  kafka: KafkaClient,
  failures: Pick<KafkaFailures, 'fatal'>,
): CommandConsumer {
  return new CommandConsumer({
    kafka,
    topic: config.topics.commands,
    groupId: config.consumerGroup,
    logger,
    onFatal: (error) => failures.fatal.abort(error),
    sessionTimeoutMs: config.kafkaSessionTimeoutMs,
  });
}

/** The hints producer and the cluster admin: parts of their own, each on the one client. */
export function buildKafkaSidecars(kafka: KafkaClient): { hints: BestEffortProducer; cluster: ClusterAdmin } {
  return { hints: new BestEffortProducer(kafka), cluster: new ClusterAdmin(kafka) };
}
