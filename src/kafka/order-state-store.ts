// The durable record of every order: a compacted state topic, co-partitioned with the commands topic
// (a record is always written to the partition its commands arrive on). Every replica reads the whole topic
// into memory, so it can answer "does this order exist?" and route webhooks for any order; a replica that is
// assigned a partition first writes a barrier record into it and waits to read it back, which proves that it has
// seen every committed record before the barrier (including the last words of a replica that died).
// Records are ordered by (fence, rev): a record from an older lease holder never replaces a newer one.
import { randomUUID } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { KafkaClient } from './kafka-client.ts';
import { z } from 'zod';
import type { Logger } from '../telemetry/logger.ts';
import type { TransactionalWriter } from './transactional-writer.ts';

export const orderRecordSchema = z.object({
  v: z.literal(1),
  order_id: z.string(),
  partition: z.number().int().min(0),
  fence: z.number().int().min(0),
  rev: z.number().int().min(0),
  seq: z.number().int().min(0),
  updated_at: z.string(),
  mode: z.enum(['defi', 'cefi', 'cefi_fixed']),
  create_hash: z.string(),
  commands: z.array(z.tuple([z.string(), z.string()])),
  unique_reference: z.string().nullable(),
  terminal: z.boolean(),
  /**
   * Set when the order's actor stopped on an error the machine did not model (a bug): order.parked (reason
   * internal_error) was published once. A replica that restores the order tries its last good state again.
   */
  halted: z.object({ code: z.string(), message: z.string(), at: z.string() }).nullish(),
  /** The machine's durable form (versioned by the machine module). */
  machine: z.unknown(),
  /** W3C traceparent of the command that created the order: traces of its later polls link to it. */
  trace_origin: z.string().max(55).optional(),
});
export type OrderRecord = z.infer<typeof orderRecordSchema>;

const barrierSchema = z.object({ barrier: z.string() });

/**
 * How long a catch-up may take. It waits out a dead producer's open transaction, which the broker aborts after
 * that producer's transaction timeout (plus its abort sweep, every 10 s by default), so it must exceed the
 * transaction timeout with a margin: twice it plus 30 s, and never less than two minutes.
 */
export function catchUpTimeoutFor(transactionTimeoutMs: number): number {
  return Math.max(120_000, 2 * transactionTimeoutMs + 30_000);
}

function newer(candidate: OrderRecord, current: OrderRecord | undefined): boolean {
  if (!current) return true;
  if (candidate.fence !== current.fence) return candidate.fence > current.fence;
  return candidate.rev >= current.rev;
}

export class OrderStateStore {
  private readonly records = new Map<string, OrderRecord>();
  private readonly references = new Map<string, string>();
  private readonly waiters = new Map<string, () => void>();
  private consumer: Consumer | undefined;
  private readonly kafka: KafkaClient;
  private readonly topic: string;
  private readonly workerId: string;
  private readonly writer: TransactionalWriter;
  private readonly logger: Logger;
  private readonly catchUpTimeoutMs: number;
  invalidRecords = 0;

  constructor(opts: {
    kafka: KafkaClient;
    topic: string;
    workerId: string;
    writer: TransactionalWriter;
    logger: Logger;
    /** The producers' transaction timeout (KAFKA_TRANSACTION_TIMEOUT_MS), which a catch-up may have to wait out. */
    transactionTimeoutMs: number;
  }) {
    this.catchUpTimeoutMs = catchUpTimeoutFor(opts.transactionTimeoutMs);
    this.kafka = opts.kafka;
    this.topic = opts.topic;
    this.workerId = opts.workerId;
    this.writer = opts.writer;
    this.logger = opts.logger.child({ component: 'state-store' });
  }

  async start(): Promise<void> {
    // A group of its own (one member) so this replica reads every partition from the beginning; it never commits.
    this.consumer = KafkaClient.kafkajs(this.kafka).consumer({
      groupId: `${this.topic}.reader.${this.workerId}.${randomUUID()}`,
      sessionTimeout: 30_000,
      readUncommitted: false,
      maxWaitTimeInMs: 100,
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 4,
      eachMessage: ({ message, partition }) => {
        this.consume(message.key?.toString() ?? '', message.value, partition);
        return Promise.resolve();
      },
    });
  }

  private consume(key: string, value: Buffer | null, partition: number): void {
    if (value === null) return;
    let json: unknown;
    try {
      json = JSON.parse(value.toString());
    } catch {
      this.invalidRecords++;
      this.logger.error({ key, partition }, 'state record is not JSON; ignored');
      return;
    }
    const barrier = barrierSchema.safeParse(json);
    if (barrier.success) {
      this.waiters.get(barrier.data.barrier)?.();
      return;
    }
    const parsed = orderRecordSchema.safeParse(json);
    if (!parsed.success) {
      this.invalidRecords++;
      this.logger.error(
        { key, partition, problem: parsed.error.issues[0]?.message },
        'state record does not match its schema; ignored',
      );
      return;
    }
    this.apply(parsed.data);
  }

  /** Applies a record we committed ourselves (or read back); keeps the newest by (fence, rev). */
  apply(record: OrderRecord): void {
    if (!newer(record, this.records.get(record.order_id))) return;
    this.records.set(record.order_id, record);
    if (record.unique_reference) this.references.set(record.unique_reference, record.order_id);
  }

  get(orderId: string): OrderRecord | undefined {
    return this.records.get(orderId);
  }

  orderIdByReference(uniqueReference: string): string | undefined {
    return this.references.get(uniqueReference);
  }

  recordsOfPartition(partition: number): OrderRecord[] {
    return [...this.records.values()].filter((record) => record.partition === partition);
  }

  size(): number {
    return this.records.size;
  }

  /**
   * Proves this replica has read every committed record of these partitions: writes one barrier per partition
   * and waits until all of them are read back. Open transactions of a dead producer delay it until the broker
   * aborts them (the producers' transaction timeout, which the default timeout exceeds).
   */
  async catchUp(partitions: number[], timeoutMs = this.catchUpTimeoutMs): Promise<void> {
    if (partitions.length === 0) return;
    const pending = partitions.map((partition) => {
      const nonce = randomUUID();
      const seen = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.waiters.delete(nonce);
          reject(new Error(`state partition ${partition} not caught up after ${timeoutMs} ms`));
        }, timeoutMs);
        this.waiters.set(nonce, () => {
          clearTimeout(timer);
          this.waiters.delete(nonce);
          resolve();
        });
      });
      return {
        seen,
        record: {
          topic: this.topic,
          key: `__barrier__:${this.workerId}:${partition}`,
          partition,
          value: JSON.stringify({ barrier: nonce }),
        },
      };
    });
    await this.writer.write(pending.map((p) => p.record));
    await Promise.all(pending.map((p) => p.seen));
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }
}
