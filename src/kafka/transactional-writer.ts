// Group commit into Kafka transactions: every order's events, its state record and the offsets of the commands
// that caused them are written atomically. Whatever is queued while one transaction commits goes into the next,
// so throughput does not depend on one round trip per transition. Order of records per key is preserved.
// A record whose guard fails at commit time (its order's lease is no longer ours) is dropped, not written.
// Tracing: each write is a producer span (`send <topic>`) of the context that asked for it, and its records carry
// that span's traceparent, so a consumer of our events continues the order's trace whatever batch they shared.
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import { WorkerError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';
import { injectContext } from '../telemetry/propagation.ts';
import {
  ATTR_MESSAGING_BATCH_MESSAGE_COUNT,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
} from '../telemetry/semconv.ts';

const tracer = trace.getTracer('exchange-order-worker');

export interface OutboundRecord {
  topic: string;
  key: string;
  value: string;
  partition?: number;
  headers?: Record<string, string>;
}

export interface OffsetToCommit {
  topic: string;
  partition: number;
  /** The offset of the processed message (the writer commits offset + 1). */
  offset: string;
}

interface Pending {
  records: OutboundRecord[];
  offsets: OffsetToCommit[];
  guard: (() => boolean) | undefined;
  /** Resolves true once committed, false when the guard refused the records (nothing of them was written). */
  resolve: (written: boolean) => void;
  reject: (error: Error) => void;
}

export interface TransactionalWriterOptions {
  kafka: Kafka;
  transactionalId: string;
  consumerGroupId: string;
  transactionTimeoutMs: number;
  logger: Logger;
  /** Called when the producer can no longer write (fenced or failing for good); the process should stop. */
  onFatal: (error: Error) => void;
  /** Told of every transaction that ended (metrics). */
  onTransaction?: (transaction: {
    outcome: 'committed' | 'aborted';
    seconds: number;
    records: number;
  }) => void;
}

export class TransactionalWriter {
  private readonly producer: Producer;
  private queue: Pending[] = [];
  private running = false;
  private closed = false;
  private idle: Promise<void> = Promise.resolve();
  committedTransactions = 0;
  committedRecords = 0;

  private readonly opts: TransactionalWriterOptions;

  constructor(opts: TransactionalWriterOptions) {
    this.opts = opts;
    this.producer = opts.kafka.producer({
      transactionalId: opts.transactionalId,
      transactionTimeout: opts.transactionTimeoutMs,
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      // An idempotent producer must not give up on its own retries (kafkajs warns it breaks EoS otherwise).
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 100, maxRetryTime: 2_000 },
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
  }

  /**
   * Queues records (and offsets) for the next transaction; resolves true once they are committed, false when the
   * guard refused them at commit time (then none of them, offsets included, was written).
   */
  write(records: OutboundRecord[], offsets: OffsetToCommit[] = [], guard?: () => boolean): Promise<boolean> {
    if (this.closed) return Promise.reject(new WorkerError('writer_closed', 'the Kafka writer is closed'));
    if (records.length === 0 && offsets.length === 0) return Promise.resolve(true);
    const span = records.length ? this.startSendSpan(records) : undefined;
    const carrier = span ? injectContext(trace.setSpan(context.active(), span)) : {};
    const traced = span ? records.map((r) => ({ ...r, headers: { ...r.headers, ...carrier } })) : records;
    return new Promise((resolve, reject) => {
      this.queue.push({
        records: traced,
        offsets,
        guard,
        resolve: (written) => {
          span?.setAttribute('worker.kafka.written', written);
          span?.end();
          resolve(written);
        },
        reject: (error) => {
          span?.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
          span?.end();
          reject(error);
        },
      });
      this.kick();
    });
  }

  /** `send <topic>` (the first record's topic: an order's events come before its state record). */
  private startSendSpan(records: OutboundRecord[]): Span {
    const topic = records[0]?.topic ?? 'unknown';
    return tracer.startSpan(`send ${topic}`, {
      kind: SpanKind.PRODUCER,
      attributes: {
        [ATTR_MESSAGING_SYSTEM]: 'kafka',
        [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
        [ATTR_MESSAGING_OPERATION_NAME]: 'send',
        [ATTR_MESSAGING_DESTINATION_NAME]: topic,
        [ATTR_MESSAGING_BATCH_MESSAGE_COUNT]: records.length,
        'messaging.kafka.transactional_id': this.opts.transactionalId,
      },
    });
  }

  /** Resolves once everything queued so far is committed. */
  async flush(): Promise<void> {
    while (this.running || this.queue.length) await this.idle;
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    this.idle = this.drain().finally(() => {
      this.running = false;
      if (this.queue.length && !this.closed) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      // Let synchronous transitions of the same tick join this transaction.
      await new Promise((resolve) => setImmediate(resolve));
      const batch = this.queue.splice(0, this.queue.length);
      try {
        const refused = await this.commitWithRetry(batch);
        for (const item of batch) item.resolve(!refused.has(item));
      } catch (error) {
        const failure = error instanceof Error ? error : new Error(String(error));
        for (const item of batch) item.reject(failure);
        this.opts.onFatal(failure);
        return;
      }
    }
  }

  /**
   * Retries a failed transaction (aborted first, so nothing of it is visible) for up to two minutes with a capped
   * backoff; a fenced producer (another process took our transactional id) is final at once. Giving up is fatal:
   * the process stops and another replica restores its orders from Kafka.
   */
  private async commitWithRetry(batch: Pending[]): Promise<Set<Pending>> {
    let lastError: unknown;
    const deadline = Date.now() + 120_000;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.commitOnce(batch);
      } catch (error) {
        lastError = error;
        const name =
          (error as { name?: string; type?: string }).type ?? (error as { name?: string }).name ?? '';
        // CONCURRENT_TRANSACTIONS: the previous commit's markers are still being written; routine, retried.
        this.opts.logger[name === 'CONCURRENT_TRANSACTIONS' ? 'debug' : 'warn'](
          { attempt, err: { name, message: (error as Error).message } },
          'kafka transaction failed',
        );
        if (/FENCED|INVALID_PRODUCER_EPOCH|TRANSACTIONAL_ID_AUTHORIZATION/.test(name)) break;
        if (Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * attempt)));
      }
    }
    throw new WorkerError(
      'kafka_transaction_failed',
      `could not commit a Kafka transaction: ${(lastError as Error)?.message ?? 'unknown'}`,
      { cause: lastError },
    );
  }

  private async commitOnce(batch: Pending[]): Promise<Set<Pending>> {
    const slow = setTimeout(() => {
      this.opts.logger.error(
        { transactionalId: this.opts.transactionalId },
        'a Kafka transaction has not committed after 30 s: is the transaction coordinator available? ' +
          '(a broker needs transaction.state.log.replication.factor and min.isr no larger than its broker count)',
      );
    }, 30_000);
    try {
      return await this.commitOnceUnwatched(batch);
    } finally {
      clearTimeout(slow);
    }
  }

  private async commitOnceUnwatched(batch: Pending[]): Promise<Set<Pending>> {
    const byTopic = new Map<string, OutboundRecord[]>();
    const offsets = new Map<string, OffsetToCommit>();
    const refused = new Set<Pending>();
    for (const item of batch) {
      if (item.guard && !item.guard()) {
        refused.add(item);
        continue;
      }
      for (const record of item.records) {
        const list = byTopic.get(record.topic) ?? [];
        list.push(record);
        byTopic.set(record.topic, list);
      }
      for (const offset of item.offsets) {
        const id = `${offset.topic}\u0000${offset.partition}`;
        const current = offsets.get(id);
        if (!current || BigInt(offset.offset) > BigInt(current.offset)) offsets.set(id, offset);
      }
    }
    if (byTopic.size === 0 && offsets.size === 0) return refused;
    const startedAt = performance.now();
    const recordCount = [...byTopic.values()].reduce((n, list) => n + list.length, 0);
    const ended = (outcome: 'committed' | 'aborted'): void =>
      this.opts.onTransaction?.({
        outcome,
        seconds: (performance.now() - startedAt) / 1000,
        records: recordCount,
      });
    const transaction = await this.producer.transaction();
    try {
      const topicMessages = [...byTopic.entries()].map(([topic, records]) => ({
        topic,
        messages: records.map((r) => ({
          key: r.key,
          value: r.value,
          ...(r.partition === undefined ? {} : { partition: r.partition }),
          ...(r.headers ? { headers: r.headers } : {}),
        })),
      }));
      if (topicMessages.length) await transaction.sendBatch({ topicMessages });
      if (offsets.size) {
        const perTopic = new Map<string, Array<{ partition: number; offset: string }>>();
        for (const o of offsets.values()) {
          const list = perTopic.get(o.topic) ?? [];
          list.push({ partition: o.partition, offset: (BigInt(o.offset) + 1n).toString() });
          perTopic.set(o.topic, list);
        }
        await transaction.sendOffsets({
          consumerGroupId: this.opts.consumerGroupId,
          topics: [...perTopic.entries()].map(([topic, partitions]) => ({ topic, partitions })),
        });
      }
      await transaction.commit();
      ended('committed');
      this.committedTransactions++;
      for (const list of byTopic.values()) this.committedRecords += list.length;
      return refused;
    } catch (error) {
      await transaction.abort().catch(() => {});
      ended('aborted');
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    await this.producer.disconnect();
  }
}
