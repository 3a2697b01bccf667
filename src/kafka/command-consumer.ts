// Reads the commands topic with a consumer group. Offsets are never auto-committed: they are committed inside
// the Kafka transaction that writes the command's effects (see transactional-writer.ts). Partition assignment
// changes are reported before any message of a new partition is handled, and a message waits until its
// partition is restored. Consumption pauses when the worker has too much in flight (backpressure).
// Headers are handed on as text: they carry the caller's trace context (traceparent/tracestate).
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../telemetry/logger.ts';
import { headersAsText } from '../telemetry/propagation.ts';

export interface InboundCommandMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  /** The message's headers as text (lower-case names). */
  headers?: Record<string, string>;
  /** The consumer group that consumed it. */
  consumerGroup?: string;
}

export interface CommandConsumerHandlers {
  /** Called with the new full assignment; resolves when added partitions are restored. */
  onAssignment: (assigned: number[], revoked: number[], added: number[]) => Promise<void>;
  onMessage: (message: InboundCommandMessage) => Promise<void>;
}

function decodeAssignment(memberAssignment: Record<string, number[]> | undefined, topic: string): number[] {
  return [...(memberAssignment?.[topic] ?? [])].sort((a, b) => a - b);
}

export class CommandConsumer {
  private readonly consumer: Consumer;
  private assignment: number[] = [];
  private readonly ready = new Map<number, Promise<void>>();
  private paused = false;
  private readonly topic: string;
  private readonly groupId: string;
  private readonly logger: Logger;
  private handlers: CommandConsumerHandlers | undefined;
  private assignmentChain: Promise<void> = Promise.resolve();
  restoredPartitions = new Set<number>();
  /** Joined the consumer group at least once (a member may legitimately hold no partition). */
  joined = false;

  constructor(opts: { kafka: Kafka; topic: string; groupId: string; partitions: number; logger: Logger }) {
    this.topic = opts.topic;
    this.groupId = opts.groupId;
    this.logger = opts.logger.child({ component: 'command-consumer' });
    this.consumer = opts.kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout: 15_000,
      heartbeatInterval: 3_000,
      rebalanceTimeout: 30_000,
      maxWaitTimeInMs: 200,
      readUncommitted: false,
      retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 5_000 },
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (event) => {
      this.joined = true;
      const next = decodeAssignment(event.payload.memberAssignment, this.topic);
      this.changeAssignment(next);
    });
    this.consumer.on(this.consumer.events.CRASH, (event) => {
      this.logger.error(
        { err: event.payload.error, restart: event.payload.restart },
        'command consumer crashed',
      );
    });
  }

  private changeAssignment(next: number[]): void {
    const previous = new Set(this.assignment);
    const nextSet = new Set(next);
    const added = next.filter((p) => !previous.has(p));
    const revoked = this.assignment.filter((p) => !nextSet.has(p));
    this.assignment = next;
    for (const p of revoked) {
      this.ready.delete(p);
      this.restoredPartitions.delete(p);
    }
    const handlers = this.handlers;
    if (!handlers) return;
    // Assignment changes are handled one after another; messages of an added partition wait for its restore.
    const done = (this.assignmentChain = this.assignmentChain
      .catch(() => {})
      .then(() => handlers.onAssignment(next, revoked, added)));
    for (const p of added) {
      this.ready.set(
        p,
        done.then(() => {
          this.restoredPartitions.add(p);
        }),
      );
    }
    this.logger.info({ assigned: next, added, revoked }, 'partition assignment changed');
  }

  get assigned(): readonly number[] {
    return this.assignment;
  }

  allRestored(): boolean {
    return this.assignment.every((p) => this.restoredPartitions.has(p));
  }

  async start(handlers: CommandConsumerHandlers, partitionsConsumedConcurrently: number): Promise<void> {
    this.handlers = handlers;
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently,
      eachMessage: async ({ topic, partition, message }) => {
        const ready = this.ready.get(partition);
        if (ready) await ready;
        await handlers.onMessage({
          topic,
          partition,
          offset: message.offset,
          key: message.key?.toString() ?? null,
          value: message.value,
          headers: headersAsText(message.headers),
          consumerGroup: this.groupId,
        });
      },
    });
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.consumer.pause([{ topic: this.topic }]);
    this.logger.warn('consumption paused (backpressure)');
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.consumer.resume([{ topic: this.topic }]);
    this.logger.info('consumption resumed');
  }

  get isPaused(): boolean {
    return this.paused;
  }

  async stop(): Promise<void> {
    await this.consumer.stop().catch(() => {});
    await this.consumer.disconnect();
  }
}
