// What the worker asks the cluster besides reading and writing: whether it answers at all (readiness) and how far
// the command consumer group is behind (the `worker_consumer_lag` gauge).
import type { Admin } from 'kafkajs';
import { KafkaClient } from './kafka-client.ts';

export class ClusterAdmin {
  private readonly client: KafkaClient;
  private admin: Admin | undefined;

  constructor(client: KafkaClient) {
    this.client = client;
  }

  /** Connects the long-lived admin client the lag is measured with. */
  async connect(): Promise<void> {
    const admin = KafkaClient.kafkajs(this.client).admin();
    await admin.connect();
    this.admin = admin;
  }

  /** Whether the cluster answers, on a connection of its own (a stuck long-lived one must not hide an outage). */
  async reachable(): Promise<boolean> {
    const admin = KafkaClient.kafkajs(this.client).admin();
    await admin.connect();
    try {
      await admin.describeCluster();
      return true;
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Lag per partition of `partitions`: the topic's high watermark minus the group's committed offset (what a
   * replacement replica would have to redo), or minus the low watermark when the group committed nothing yet.
   * The committed offsets are read first and the watermarks after them: a command consumed and committed between
   * the two reads then moves the watermark too, never the committed offset alone past a watermark read earlier.
   */
  async consumerLag(
    topic: string,
    groupId: string,
    partitions: readonly number[],
  ): Promise<Map<number, number>> {
    const admin = this.admin;
    if (!admin) throw new Error('the cluster admin is not connected');
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    const committedOf = new Map(
      (committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)] as const),
    );
    const lag = new Map<number, number>();
    for (const partition of partitions) {
      const end = ends.find((e) => e.partition === partition);
      if (!end) continue;
      lag.set(partition, lagOf(BigInt(end.high), BigInt(end.low), committedOf.get(partition)));
    }
    return lag;
  }

  async disconnect(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await admin?.disconnect();
  }
}

/**
 * How many messages of one partition the group has still to do: `high` minus the committed offset (or minus `low`
 * when the group committed nothing, kafkajs's -1). Never negative: a committed offset read after the watermark
 * (or a watermark served by a lagging broker) may stand past it, and a gauge of -1 would read as "unknown".
 */
export function lagOf(high: bigint, low: bigint, committed: bigint | undefined): number {
  const from = committed !== undefined && committed >= 0n ? committed : low;
  return high > from ? Number(high - from) : 0;
}
