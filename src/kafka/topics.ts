// Creates the worker's topics when they are missing: commands and events (delete policy) and the compacted
// state topic with the same partition count as commands (co-partitioning is what lets a replica restore exactly
// the orders of the partitions it is assigned). An existing commands topic decides the partition count.
import { KafkaClient } from './kafka-client.ts';
import { WorkerError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';

export interface TopicsConfig {
  commands: string;
  events: string;
  state: string;
  partitions: number;
  replicationFactor: number;
  /** min.insync.replicas of the topics the worker creates; undefined = the broker's default. */
  minInsyncReplicas?: number | undefined;
}

export async function ensureTopics(
  client: KafkaClient,
  topics: TopicsConfig,
  logger: Logger,
): Promise<{ partitions: number }> {
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
    return { partitions };
  } finally {
    await admin.disconnect();
  }
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
