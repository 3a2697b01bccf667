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
   */
  async consumerLag(
    topic: string,
    groupId: string,
    partitions: readonly number[],
  ): Promise<Map<number, number>> {
    const admin = this.admin;
    if (!admin) throw new Error('the cluster admin is not connected');
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId, topics: [topic] }),
    ]);
    const committedOf = new Map(
      (committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)] as const),
    );
    const lag = new Map<number, number>();
    for (const partition of partitions) {
      const end = ends.find((e) => e.partition === partition);
      if (!end) continue;
      const done = committedOf.get(partition) ?? -1n;
      const from = done >= 0n ? done : BigInt(end.low);
      lag.set(partition, Number(BigInt(end.high) - from));
    }
    return lag;
  }

  async disconnect(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await admin?.disconnect();
  }
}
