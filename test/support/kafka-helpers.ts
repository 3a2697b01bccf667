// Kafka helpers for integration tests: a producer of commands and a reader that collects every event of a topic
// (read_committed, like any consumer of the worker's contract), grouped by order.
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
// Imported for its side effect: kafkajs's request queues quieted for the tests' own clients too.
import '../../src/kafka/kafka-client.ts';
import { uniqueName } from './unique-name.ts';

export interface PublishedEvent {
  type: string;
  event_id: string;
  order_id: string | null;
  seq: number;
  occurred_at: string;
  partition: number;
  offset: string;
  key: string | null;
  /** The record's headers as text (`event-type`, `traceparent`, …). */
  headers: Record<string, string>;
  [field: string]: unknown;
}

export function testKafka(brokers: string[]): Kafka {
  return new Kafka({
    clientId: uniqueName('test'),
    brokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 20, initialRetryTime: 200 },
  });
}

/** key: the message key (default order_id; null for none); raw: the value as is; partition: chosen by hand. */
export interface SendOptions {
  key?: string | null;
  raw?: string;
  partition?: number;
  headers?: Record<string, string>;
  /** Send an operator command (order.settle) as a trading service would: without the operator's signature. */
  unsigned?: boolean;
}

export async function commandProducer(
  kafka: Kafka,
  topic: string,
): Promise<{
  send: (command: Record<string, unknown>, opts?: SendOptions) => Promise<void>;
  close: () => Promise<void>;
}> {
  const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  return {
    send: async (command, opts = {}) => {
      const key =
        opts.key === undefined
          ? typeof command['order_id'] === 'string'
            ? command['order_id']
            : ''
          : opts.key;
      await producer.send({
        topic,
        messages: [
          {
            key,
            value: opts.raw ?? JSON.stringify(command),
            ...(opts.partition === undefined ? {} : { partition: opts.partition }),
            ...(opts.headers ? { headers: opts.headers } : {}),
          },
        ],
      });
    },
    close: () => producer.disconnect(),
  };
}

export class EventCollector {
  readonly events: PublishedEvent[] = [];
  /** Records already read, by partition and offset: a rejoin of the collector's own group re-reads a range. */
  private readonly seen = new Set<string>();
  private consumer: Consumer | undefined;
  private stopped = false;

  static async start(kafka: Kafka, topic: string): Promise<EventCollector> {
    const collector = new EventCollector();
    await collector.consume(kafka, topic, uniqueName('collector'));
    return collector;
  }

  /**
   * Reads the topic with a consumer of the collector's group. A consumer that kafkajs gives up on (a crash it does
   * not restart from, e.g. "failed to find group coordinator" while the fault suite restarts the broker) is
   * replaced by a new one of the same group, which resumes from the group's offsets: without it the collector
   * stopped reading for good, and whatever waited on its events (the exchange driver) with it.
   */
  private async consume(kafka: Kafka, topic: string, groupId: string): Promise<void> {
    const consumer = kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 100 });
    this.consumer = consumer;
    consumer.on(consumer.events.CRASH, (event) => {
      if (event.payload.restart || this.stopped) return;
      void (async () => {
        await consumer.disconnect().catch(() => {});
        for (let attempt = 0; !this.stopped; attempt++) {
          try {
            await this.consume(kafka, topic, groupId);
            return;
          } catch {
            await sleep(Math.min(5_000, 250 * 2 ** attempt));
          }
        }
      })();
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ partition, message }) => {
        // A starved test process misses its group's session timeout; the rejoin resumes from the last auto-committed
        // offset and hands over records read before. They are the same records, not events written twice.
        const at = `${partition}:${message.offset}`;
        if (this.seen.has(at)) return Promise.resolve();
        this.seen.add(at);
        const value = JSON.parse(message.value?.toString() ?? 'null') as PublishedEvent;
        this.events.push({
          ...value,
          partition,
          offset: message.offset,
          key: message.key?.toString() ?? null,
          headers: Object.fromEntries(
            Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]),
          ),
        });
        return Promise.resolve();
      },
    });
  }

  of(orderId: string): PublishedEvent[] {
    return this.events.filter((e) => e.order_id === orderId).sort((a, b) => a.seq - b.seq);
  }

  async waitFor(
    predicate: (events: PublishedEvent[]) => boolean,
    what: string,
    timeoutMs = 120_000,
  ): Promise<PublishedEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (Date.now() > deadline) {
        const summary = this.events
          .slice(-30)
          .map(
            (e) =>
              `${e.order_id}#${e.seq} ${e.type}${typeof e['status'] === 'string' ? ` ${e['status']}` : ''}${typeof e['reason'] === 'string' ? ` (${e['reason']})` : ''}`,
          );
        throw new Error(`timed out waiting for ${what}; last events:\n${summary.join('\n')}`);
      }
      await sleep(100);
    }
    return this.events;
  }

  async waitForOrderEvent(orderId: string, type: string, timeoutMs = 120_000): Promise<PublishedEvent> {
    await this.waitFor(
      (events) => events.some((e) => e.order_id === orderId && e.type === type),
      `${type} of ${orderId}`,
      timeoutMs,
    );
    return this.of(orderId).find((e) => e.type === type) as PublishedEvent;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.consumer?.disconnect();
  }
}

/** Asserts seq of an order's events is 1..n with no gap and no repeat; returns the problems found. */
export function seqProblems(events: PublishedEvent[]): string[] {
  const problems: string[] = [];
  // seq 0 marks a rejection of a command that named no existing order: not part of the order's history.
  const seqs = events
    .filter((e) => e.seq > 0)
    .map((e) => e.seq)
    .sort((a, b) => a - b);
  seqs.forEach((seq, index) => {
    if (seq !== index + 1) problems.push(`expected seq ${index + 1}, saw ${seq}`);
  });
  return problems;
}
