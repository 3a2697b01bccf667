// What the worker's Kafka principal must be allowed, and nothing more: the one list the platform team grants (README,
// "Kafka ACLs", is checked against it) and the secured integration test applies to a broker with ACLs on. The worker
// creates no topic when they exist (the platform team creates them: README, "Kafka ACLs"), needs no Cluster
// permission (its producer is transactional: InitProducerId checks Write on the transactional id; the hints
// producer is not idempotent), and reads only its own topics. An authorization failure is explained with the ACL
// that covers it, so a missing one stops the worker with a message that says what to grant.
import { errorsWithin } from './kafka-errors.ts';

export type AclResourceType = 'Topic' | 'Group' | 'TransactionalId';
export type AclPatternType = 'LITERAL' | 'PREFIXED';
export type AclOperation = 'Read' | 'Write' | 'DescribeConfigs';

export interface WorkerAcl {
  readonly resourceType: AclResourceType;
  readonly patternType: AclPatternType;
  /** The resource name, or its prefix for PREFIXED. */
  readonly name: string;
  readonly operation: AclOperation;
  /** What the worker does with it. */
  readonly why: string;
}

export interface WorkerKafkaNames {
  readonly commands: string;
  readonly events: string;
  readonly state: string;
  readonly consumerGroup: string;
}

/** The worker's transactional id: one per replica, `<CONSUMER_GROUP>.<WORKER_ID>`. */
export function transactionalIdOf(consumerGroup: string, workerId: string): string {
  return `${consumerGroup}.${workerId}`;
}

/** The group id prefix of the state topic's readers: each process reads through a group of its own. */
export function stateReaderGroupPrefix(stateTopic: string): string {
  return `${stateTopic}.reader.`;
}

/** Every ACL the worker's principal needs (Read and Write imply Describe). */
export function workerAcls(names: WorkerKafkaNames): WorkerAcl[] {
  const topic = (name: string, operation: AclOperation, why: string): WorkerAcl => ({
    resourceType: 'Topic',
    patternType: 'LITERAL',
    name,
    operation,
    why,
  });
  return [
    topic(names.commands, 'Read', 'consume commands in the group; its end offsets for the consumer lag'),
    topic(
      names.commands,
      'Write',
      "webhook hints and commands forwarded to an order's partition, written to the commands topic",
    ),
    topic(names.commands, 'DescribeConfigs', 'the start-up check of its retention (a warning without it)'),
    topic(names.events, 'Write', 'the events, in the transactions'),
    topic(names.state, 'Read', 'every replica reads the whole state topic (restore, catch-up barriers)'),
    topic(names.state, 'Write', 'state records, catch-up barriers and tombstones, in the transactions'),
    topic(names.state, 'DescribeConfigs', 'the start-up check of its cleanup.policy'),
    {
      resourceType: 'Group',
      patternType: 'LITERAL',
      name: names.consumerGroup,
      operation: 'Read',
      why: 'join the group, commit offsets (also inside the transactions), read them for the lag',
    },
    {
      resourceType: 'Group',
      patternType: 'PREFIXED',
      name: stateReaderGroupPrefix(names.state),
      operation: 'Read',
      why: "the state topic's reader: a group of its own per process, which never commits",
    },
    {
      resourceType: 'TransactionalId',
      patternType: 'PREFIXED',
      name: `${names.consumerGroup}.`,
      operation: 'Write',
      why: "the transactional producer of each replica, `<CONSUMER_GROUP>.<WORKER_ID>` (fences a replica's predecessor)",
    },
  ];
}

const resourceOfFailure: Record<string, AclResourceType> = {
  TOPIC_AUTHORIZATION_FAILED: 'Topic',
  GROUP_AUTHORIZATION_FAILED: 'Group',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'TransactionalId',
};

const authorizationFailures = new Set([...Object.keys(resourceOfFailure), 'CLUSTER_AUTHORIZATION_FAILED']);

/** The broker's error names found in a kafkajs error and what it wraps (retries, aggregates, causes). */
export function kafkaErrorTypes(error: unknown): string[] {
  return errorsWithin(error).flatMap((e) => (typeof e.type === 'string' ? [e.type] : []));
}

/** The authorization failure in a Kafka error (TOPIC_AUTHORIZATION_FAILED, ...), or undefined for any other error. */
export function kafkaAuthorizationFailure(error: unknown): string | undefined {
  return kafkaErrorTypes(error).find((type) => authorizationFailures.has(type));
}

/**
 * For an authorization failure, a sentence that names it and the ACLs that cover it (all of them for a Cluster
 * refusal, which only a missing topic's creation causes); undefined for any other error.
 */
export function explainKafkaAccess(error: unknown, acls: readonly WorkerAcl[]): string | undefined {
  const failure = kafkaAuthorizationFailure(error);
  if (failure === undefined) return undefined;
  const resource = resourceOfFailure[failure];
  const covering = acls
    .filter((acl) => resource === undefined || acl.resourceType === resource)
    .map((acl) => `${acl.operation} on ${acl.resourceType} ${acl.patternType.toLowerCase()} "${acl.name}"`);
  const cluster =
    failure === 'CLUSTER_AUTHORIZATION_FAILED'
      ? ' (a Cluster refusal: a topic is missing and the worker may not create it; create the topics first)'
      : '';
  return (
    `Kafka refused the worker's principal: ${failure}${cluster}. It needs ${covering.join(', ')} ` +
    `(README, "Kafka ACLs")`
  );
}
