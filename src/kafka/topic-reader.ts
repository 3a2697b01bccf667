// Reads a topic from the beginning to the end offsets it had when reading started (read_committed, as every
// consumer of the worker's contract reads), optionally staying on it for new messages. The consumer group is
// throw-away and never commits, so the inspector leaves no trace on the cluster. "The end" is known per partition
// from kafkajs' batch events, which also count the transaction markers that end a partition.
import { randomUUID } from 'node:crypto';
import type { Consumer, IHeaders } from 'kafkajs';
import { KafkaClient } from './kafka-client.ts';

export interface TopicMessage {
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

export interface TopicReading {
  /** Resolves when every partition was read up to its end offset at start (or `settleMs` passed without progress). */
  caughtUp: Promise<{ incomplete: string[] }>;
  stop(): Promise<void>;
}

function headersOf(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first.toString();
  }
  return out;
}

export async function readTopic(
  client: KafkaClient,
  topic: string,
  onMessage: (message: TopicMessage) => void,
  opts: { settleMs?: number; groupPrefix?: string } = {},
): Promise<TopicReading> {
  const kafka = KafkaClient.kafkajs(client);
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  try {
    if (!(await admin.listTopics()).includes(topic))
      throw new Error(
        `topic ${topic} does not exist on this cluster (check TOPIC_COMMANDS, TOPIC_EVENTS, TOPIC_STATE)`,
      );
    const offsets = await admin.fetchTopicOffsets(topic);
    ends = new Map(
      offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high)]),
    );
  } finally {
    await admin.disconnect();
  }
  const reached = new Map<number, bigint>();
  let settle: (value: { incomplete: string[] }) => void = () => {};
  const caughtUp = new Promise<{ incomplete: string[] }>((resolve) => (settle = resolve));
  const pending = (): number[] =>
    [...ends].filter(([p, end]) => (reached.get(p) ?? -1n) + 1n < end).map(([p]) => p);
  const check = (): void => {
    if (pending().length === 0) settle({ incomplete: [] });
  };
  check();

  const consumer: Consumer = kafka.consumer({
    groupId: `${opts.groupPrefix ?? 'inspect'}.${randomUUID()}`,
    readUncommitted: false,
    maxWaitTimeInMs: 200,
    sessionTimeout: 30_000,
  });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic !== topic) return;
    const last = BigInt(payload.lastOffset);
    if (last > (reached.get(payload.partition) ?? -1n)) reached.set(payload.partition, last);
    check();
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: ({ partition, message }) => {
      onMessage({
        partition,
        offset: message.offset,
        key: message.key?.toString() ?? null,
        value: message.value,
        headers: headersOf(message.headers),
      });
      return Promise.resolve();
    },
  });
  // An open (or never-ended) transaction holds a read_committed reader before the end offset: do not wait forever.
  const settleMs = opts.settleMs ?? 20_000;
  const timer = setTimeout(
    () =>
      settle({
        incomplete: pending().map(
          (p) =>
            `${topic}[${p}] read to offset ${String(reached.get(p) ?? -1n)} of ${String((ends.get(p) ?? 0n) - 1n)}`,
        ),
      }),
    settleMs,
  );
  void caughtUp.then(() => clearTimeout(timer));
  return {
    caughtUp,
    stop: async () => {
      clearTimeout(timer);
      await consumer.disconnect();
    },
  };
}
