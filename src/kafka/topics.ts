// Creates the worker's topics when they are missing: commands and events (delete policy) and the compacted
// state topic with the same partition count as commands (co-partitioning is what lets a replica restore exactly
// the orders of the partitions it is assigned). An existing commands topic decides the partition count.
// Then checks how long the commands topic may keep a command: a create replayed after the worker forgot its finished
// order (its retention, then its retired home) would be taken for a new order, so a topic that keeps commands longer
// is reported at start (error log), with the settings to change. An existing state topic must be compacted and only
// compacted: with `delete` in its cleanup.policy the broker drops an open order's only durable record once it is past
// retention.ms, so start-up is refused (topics the worker creates are compacted).
import kafkajs from 'kafkajs';
import { z } from 'zod';
import { KafkaClient } from './kafka-client.ts';
import { WorkerError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';

// Not one of the names Node's ESM loader detects in kafkajs's CommonJS exports.
const { ConfigResourceTypes } = kafkajs;

export interface TopicsConfig {
  commands: string;
  events: string;
  state: string;
  partitions: number;
  replicationFactor: number;
  /** min.insync.replicas of the topics the worker creates; undefined = the broker's default. */
  minInsyncReplicas?: number | undefined;
}

/** Kafka's default log.retention.check.interval.ms: a segment past its retention waits this long for deletion. */
const retentionCheckIntervalMs = 300_000;

/** The commands topic's settings that bound how long it keeps a record, as the broker describes them. */
const commandsRetentionSchema = z
  .object({
    'retention.ms': z.coerce.number().int(),
    'segment.ms': z.coerce.number().int().min(1),
    'cleanup.policy': z.string(),
  })
  .transform((entries) => ({
    retentionMs: entries['retention.ms'],
    segmentMs: entries['segment.ms'],
    cleanupPolicy: entries['cleanup.policy'],
  }));

/**
 * The longest a record may stay in a topic with these settings after it was written: the broker deletes whole
 * segments, once the newest record of one is past retention.ms, and rolls a segment segment.ms after its first
 * record at the latest. Infinity for a topic that keeps records for ever (retention.ms -1, or compacted).
 */
export function longestRecordLifetimeMs(settings: z.infer<typeof commandsRetentionSchema>): number {
  const policies = settings.cleanupPolicy.split(',').map((policy) => policy.trim());
  if (policies.includes('compact') || settings.retentionMs < 0) return Number.POSITIVE_INFINITY;
  return settings.retentionMs + settings.segmentMs + retentionCheckIntervalMs;
}

export interface EnsureTopicsOptions {
  /**
   * How long after a command was written a replay of it is still recognised (a finished order's retention plus
   * the time its retired home is kept): a commands topic that may keep commands longer is reported.
   */
  replayRecognisedForMs?: number;
}

export async function ensureTopics(
  client: KafkaClient,
  topics: TopicsConfig,
  logger: Logger,
  options: EnsureTopicsOptions = {},
): Promise<{ partitions: number; commandLifetimeMs?: number }> {
  const admin = KafkaClient.kafkajs(client).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    let partitions = topics.partitions;
    if (existing.has(topics.commands)) {
      const metadata = await whenKnown(() => admin.fetchTopicMetadata({ topics: [topics.commands] }));
      partitions = metadata.topics[0]?.partitions.length ?? partitions;
    }
    const durability =
      topics.minInsyncReplicas === undefined
        ? []
        : [{ name: 'min.insync.replicas', value: String(topics.minInsyncReplicas) }];
    const wanted = [
      {
        topic: topics.commands,
        numPartitions: partitions,
        replicationFactor: topics.replicationFactor,
        configEntries: durability,
      },
      {
        topic: topics.events,
        numPartitions: partitions,
        replicationFactor: topics.replicationFactor,
        configEntries: durability,
      },
      {
        topic: topics.state,
        numPartitions: partitions,
        replicationFactor: topics.replicationFactor,
        configEntries: [
          ...durability,
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'min.compaction.lag.ms', value: '60000' },
          { name: 'segment.ms', value: '3600000' },
        ],
      },
    ].filter((t) => !existing.has(t.topic));
    if (wanted.length) {
      try {
        await admin.createTopics({ topics: wanted, waitForLeaders: true });
        logger.info({ topics: wanted.map((t) => t.topic), partitions }, 'created missing topics');
      } catch (error) {
        // Another replica may have created them at the same moment.
        if (!/TOPIC_ALREADY_EXISTS|already exists/i.test((error as Error).message)) throw error;
      }
    }
    const state = await whenKnown(() => admin.fetchTopicMetadata({ topics: [topics.state] }));
    const statePartitions = state.topics[0]?.partitions.length ?? 0;
    if (statePartitions !== partitions) {
      throw new WorkerError(
        'topics_not_copartitioned',
        `${topics.state} has ${statePartitions} partitions but ${topics.commands} has ${partitions}; they must match`,
      );
    }
    await requireCompactedState(admin, topics.state);
    if (options.replayRecognisedForMs === undefined) return { partitions };
    const commandLifetimeMs = await checkCommandsRetention(
      admin,
      topics.commands,
      options.replayRecognisedForMs,
      logger,
    );
    return commandLifetimeMs === undefined ? { partitions } : { partitions, commandLifetimeMs };
  } finally {
    await admin.disconnect();
  }
}

type Admin = ReturnType<ReturnType<typeof KafkaClient.kafkajs>['admin']>;

/** One topic's configuration entries, as the broker describes them (the principal needs DescribeConfigs). */
async function describeTopic(admin: Admin, topic: string, names: string[]): Promise<Record<string, string>> {
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: names }],
  });
  const resource = described.resources.find((r) => r.resourceName === topic);
  if (!resource || resource.errorCode !== 0)
    throw new Error(resource?.errorMessage || `no description of topic ${topic}`);
  return Object.fromEntries(resource.configEntries.map((entry) => [entry.configName, entry.configValue]));
}

/**
 * Refuses a state topic whose cleanup.policy is anything but `compact` (`delete`, `compact,delete`): the state topic
 * is the only record of every open order, and deletion by retention would lose the ones that rest longer than it.
 * A topic that cannot be described is refused too: the check is what start-up relies on.
 */
async function requireCompactedState(admin: Admin, topic: string): Promise<void> {
  let policy: string | undefined;
  try {
    policy = (await describeTopic(admin, topic, ['cleanup.policy']))['cleanup.policy'];
  } catch (error) {
    throw new WorkerError(
      'state_topic_undescribed',
      `cannot read the cleanup.policy of the state topic ${topic} (${(error as Error).message}); the worker needs DescribeConfigs on it`,
      { cause: error },
    );
  }
  const policies = (policy ?? '')
    .split(',')
    .map((each) => each.trim())
    .filter(Boolean);
  if (policies.length !== 1 || policies[0] !== 'compact')
    throw new WorkerError(
      'state_topic_not_compacted',
      `the state topic ${topic} has cleanup.policy=${policy ?? '(none)'}; it must be compact only (kafka-configs.sh --alter --entity-type topics --entity-name ${topic} --add-config cleanup.policy=compact), or the broker deletes open orders' records`,
    );
}

const dayMs = 86_400_000;
const days = (ms: number): number | string =>
  Number.isFinite(ms) ? Math.round((ms / dayMs) * 10) / 10 : 'for ever';

/**
 * Reads the commands topic's retention settings and reports (error log) one that may keep a command longer than a
 * replay of it is recognised. Resolves to the topic's longest record lifetime, or undefined when it could not be
 * read (a principal without DescribeConfigs on the topic: reported as a warning, the worker starts all the same).
 */
async function checkCommandsRetention(
  admin: Admin,
  topic: string,
  recognisedForMs: number,
  logger: Logger,
): Promise<number | undefined> {
  let settings: z.infer<typeof commandsRetentionSchema>;
  try {
    settings = commandsRetentionSchema.parse(
      await describeTopic(admin, topic, ['retention.ms', 'segment.ms', 'cleanup.policy']),
    );
  } catch (error) {
    logger.warn(
      { topic, err: { message: (error as Error).message } },
      'could not read the commands topic retention; check by hand that it keeps no command longer than a replay is recognised (docs/operations.md "Scaling")',
    );
    return undefined;
  }
  const lifetimeMs = longestRecordLifetimeMs(settings);
  if (lifetimeMs >= recognisedForMs)
    logger.error(
      {
        topic,
        ...settings,
        keepsCommandsDays: days(lifetimeMs),
        replayRecognisedDays: days(recognisedForMs),
      },
      'the commands topic may keep an order.create longer than a replay of it is recognised: replayed then, it would start its order again (a second exchange order); lower retention.ms or segment.ms of the topic, or raise FINISHED_ORDER_RETENTION_MS',
    );
  return lifetimeMs;
}

/** Errors a broker answers for a topic it has just created (or another replica has): its metadata is on its way. */
const notYetKnown = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

/**
 * Retries a metadata read while the broker does not know the topic yet: when replicas start together, one creates
 * the topics and another, told they exist, may read their metadata before it has reached the broker it asks (seen
 * as "This server does not host this topic-partition", which stopped that replica's start). Up to `timeoutMs`.
 */
export async function whenKnown<T>(read: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      const type = (error as { type?: unknown }).type;
      if (typeof type !== 'string' || !notYetKnown.has(type) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 100 * 2 ** attempt)));
    }
  }
}
