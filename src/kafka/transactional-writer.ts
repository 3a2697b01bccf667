// Group commit into Kafka transactions: every order's events, its state record and the offsets of the commands
// that caused them are written atomically. Whatever is queued while one transaction commits goes into the next,
// so throughput does not depend on one round trip per transition. Under load (writes queued while the last
// transaction, of several writes, committed) the next one lingers a few milliseconds for more before it starts, as
// Kafka Streams commits on an interval: the broker's work is per transaction rather than per record (see
// `lingerMs`); a write that finds the writer idle is not delayed. Order of records per key is preserved.
// A record whose guard fails at commit time (its order's lease is no longer ours) is dropped, not written.
// A transaction is capped by bytes per partition (a broker refuses a record batch above its max.message.bytes, for
// good): a large queue is split into several transactions, each write (records + offsets) staying whole, and a
// size refusal is split around - only a write that is too large on its own fails, and only its caller hears of it.
// Offsets in order: a command's offset is committed with its effects, and never one past a command whose write the
// guard refused. When commands of one partition are pipelined (the next handled before the last one's transaction
// committed), a refused write at offset N holds that partition's offsets at N: later writes of the partition still
// commit their records, but not their offsets, until the command at N is written again (after the consumer is
// rewound to it) or the hold is released with the partition's assignment. Committing a later offset would commit N
// with it, and the command at N would never be handled.
// Tracing: each write is a producer span (`send <topic>`) of the context that asked for it, and its records carry
// that span's traceparent, so a consumer of our events continues the order's trace whatever batch they shared.
// How queued writes are cut into transactions: transaction-plan.ts; Kafka errors as the writer classifies them:
// kafka-errors.ts.
import { withTimeout } from '../timeouts.ts';
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { CompressionTypes, Partitioners, type Producer } from 'kafkajs';
import { KafkaClient } from './kafka-client.ts';
import { WorkerError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';
import { injectContext } from '../telemetry/propagation.ts';
import { ATTR_MESSAGING_BATCH_MESSAGE_COUNT } from '../telemetry/semconv.ts';
import { isRecordSizeError, transactionFailureOf } from './kafka-errors.ts';
import { startSendSpan } from './send-span.ts';
import {
  DEFAULT_MAX_TRANSACTION_BYTES_PER_PARTITION,
  holdAt,
  partitionKey,
  planTransactions,
  recordBytes,
} from './transaction-plan.ts';

export interface OutboundRecord {
  topic: string;
  key: string;
  value: string;
  partition?: number;
  headers?: Record<string, string>;
  /**
   * The record only matters as its key's latest (an order's state record in the compacted state topic, read for
   * each order's latest record only): a later record of the same topic, partition and key that is also marked,
   * in the same transaction, replaces it, and it is not sent. The transaction is atomic, so no reader could have
   * seen it. Never set on a record someone waits to read back (a barrier) or that readers take one by one.
   */
  latestOnly?: boolean;
}

/** A null value for a key of the compacted state topic: the topic forgets the key (an order past its retention). */
export type TombstoneRecord = Omit<OutboundRecord, 'value'> & { value: null };

/** What one transaction may hold. */
export type WritableRecord = OutboundRecord | TombstoneRecord;

export interface OffsetToCommit {
  topic: string;
  partition: number;
  /** The offset of the processed message (the writer commits offset + 1). */
  offset: string;
}

interface Pending {
  records: WritableRecord[];
  offsets: OffsetToCommit[];
  guard: (() => boolean) | undefined;
  /** Offset holds released once the writes queued before this one are written (`topic\u0000partition` keys). */
  releaseHolds?: readonly string[];
  /** Resolves true once committed, false when the guard refused the records (nothing of them was written). */
  resolve: (written: boolean) => void;
  reject: (error: Error) => void;
}

/**
 * Below this many bytes of compressed topics' records, a transaction that also carries other records sends them all
 * in one uncompressed produce call (see `compressFromBytes`).
 */
export const DEFAULT_COMPRESS_FROM_BYTES = 6 * 1024;

/** Writes in the last transaction from which the next lingers (`lingerMs`): fewer is a writer that is not busy. */
export const DEFAULT_LINGER_FROM_WRITES = 4;

export interface TransactionalWriterOptions {
  kafka: KafkaClient;
  transactionalId: string;
  consumerGroupId: string;
  transactionTimeoutMs: number;
  logger: Logger;
  /** Called when the producer can no longer write (fenced or failing for good); the process should stop. */
  onFatal: (error: Error) => void;
  /**
   * How long one attempt at a transaction may take before it is given up as stuck and retried on a new producer
   * (default: twice transactionTimeoutMs, at least 30 s). kafkajs can leave a transactional call unsettled for good
   * after broker restarts; without a bound every write queued behind it, and every order waiting on them, waits too.
   */
  attemptTimeoutMs?: number;
  /**
   * Topics whose records are sent zstd-compressed (the state topic: only the worker reads it, and its records are
   * repetitive JSON, about 14 times smaller compressed). Every other topic is sent uncompressed, readable by any
   * client. The cap below counts uncompressed bytes, which can only overestimate.
   */
  compressedTopics?: readonly string[];
  /**
   * Compressed topics' records are sent compressed from this many bytes (recordBytes) in one transaction (default
   * DEFAULT_COMPRESS_FROM_BYTES, 6 KiB: about two state records). Below it, a transaction that also carries records
   * of other topics sends everything in one uncompressed produce call: one AddPartitionsToTxn and one Produce round
   * trip fewer (kafkajs takes one compression per call), which is what a lone transaction's latency is made of (an
   * order's change that a webhook announced), for a few KiB more on the wire. Under load transactions are larger and
   * compressed as before (at 16 KiB, a 50k-order creation spent 2.44 ms of CPU per order against 2.26 without the
   * rule, one pair of runs). Readers take either: a record batch says its own compression.
   */
  compressFromBytes?: number;
  /**
   * Under load, how long a transaction waits for more writes before it starts (default 0: never). Load is writes
   * queued while the last transaction committed, that one of at least `lingerFromWrites` writes; a write that finds
   * the writer idle, or behind a transaction of fewer writes, is not delayed (a webhook's status change on a quiet
   * replica). The broker's CPU goes to each transaction far more than to its records (AddPartitionsToTxn, the
   * coordinator's state, a commit marker per partition, the offset commit): `bench/kafka-transaction-cost.ts`
   * measures it. So fewer, larger transactions leave the machine to the workers, at the price of this much latency
   * per durable step under load.
   */
  lingerMs?: number;
  /** The last transaction's writes from which the next one lingers (default DEFAULT_LINGER_FROM_WRITES). */
  lingerFromWrites?: number;
  /** Cap of one partition's records in one transaction (default DEFAULT_MAX_TRANSACTION_BYTES_PER_PARTITION). */
  maxTransactionBytesPerPartition?: number;
  /** Told of every transaction that ended (metrics). */
  onTransaction?: (transaction: {
    outcome: 'committed' | 'aborted';
    seconds: number;
    records: number;
  }) => void;
}

/** An attempt that neither committed nor failed within attemptTimeoutMs: retried on a new producer. */
class TransactionStuckError extends Error {
  constructor(ms: number) {
    super(`a Kafka transaction neither committed nor failed within ${ms} ms`);
    this.name = 'KafkaTransactionStuck';
  }
}

/** A guard refused at the last check before the commit: the transaction was aborted, to be retried without it. */
class GuardLapsedError extends Error {
  constructor() {
    super('a write guard lapsed before the commit');
    this.name = 'GuardLapsedError';
  }
}

export class TransactionalWriter {
  private producer: Producer;
  private queue: Pending[] = [];
  private running = false;
  /** Set once a transaction failed for good: no further write is accepted. */
  private failure: Error | undefined;
  private closed = false;
  private idle: Promise<void> = Promise.resolve();
  committedTransactions = 0;
  /** Transactions that lingered for more writes before they started (under load). */
  lingeredTransactions = 0;
  /** Writes taken into the last transaction: how busy the writer is. */
  private lastWrites = 0;
  committedRecords = 0;
  /** Writes refused by the broker for their size even alone (a bug: nothing should produce such a record). */
  oversizedWrites = 0;
  /**
   * Per partition (`topic\u0000partition`), the offset of the first command whose write the guard refused: no offset
   * at or past it is committed until that command is written again (see the header). Changed only by a commit.
   */
  private offsetHolds = new Map<string, bigint>();

  private readonly opts: TransactionalWriterOptions;
  private readonly compressedTopics: ReadonlySet<string>;
  private readonly compressFromBytes: number;
  /** Records marked latestOnly left out of a transaction because a later marked one of the same key was in it. */
  supersededRecords = 0;

  constructor(opts: TransactionalWriterOptions) {
    this.opts = opts;
    this.compressedTopics = new Set(opts.compressedTopics ?? []);
    this.compressFromBytes = opts.compressFromBytes ?? DEFAULT_COMPRESS_FROM_BYTES;
    this.producer = this.newProducer();
  }

  private newProducer(): Producer {
    return KafkaClient.kafkajs(this.opts.kafka).producer({
      transactionalId: this.opts.transactionalId,
      transactionTimeout: this.opts.transactionTimeoutMs,
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      // An idempotent producer must not give up on its own retries (kafkajs warns it breaks EoS otherwise).
      // The first retry comes after about 10 ms, not kafkajs's usual 100: right after a commit the coordinator
      // answers the next transaction's AddPartitionsToTxn with CONCURRENT_TRANSACTIONS for the few milliseconds it
      // takes to write the markers, and kafkajs retries that after its initial retry time. At 100 ms every
      // back-to-back transaction paid a tenth of a second there, which capped the writer at about ten
      // transactions a second (the Java producer retries this one after 20 ms for the same reason).
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 10, maxRetryTime: 2_000 },
    });
  }

  /**
   * Replaces the producer after a failed transaction. kafkajs rolls back the sequence numbers of every partition
   * of a produce request that failed, including partitions the broker did append to; the same producer would then
   * resend those records under sequence numbers the broker already saw, and the broker would acknowledge them as
   * duplicates without writing them (records silently lost). A new producer starts a new epoch with fresh
   * sequences (and the coordinator aborts whatever the old one left open).
   */
  private async renewProducer(): Promise<void> {
    const old = this.producer;
    this.producer = this.newProducer();
    // The old producer may be stuck itself: its disconnect is not waited for long.
    await Promise.race([
      old.disconnect().catch(() => {}),
      new Promise((resolve) => setTimeout(resolve, 5_000).unref()),
    ]);
    await this.producer.connect();
  }

  async connect(): Promise<void> {
    await this.producer.connect();
  }

  /**
   * Queues records (and offsets) for the next transaction; resolves true once they are committed, false when the
   * guard refused them at commit time (then none of them, offsets included, was written).
   */
  write(records: WritableRecord[], offsets: OffsetToCommit[] = [], guard?: () => boolean): Promise<boolean> {
    if (this.closed) return Promise.reject(new WorkerError('writer_closed', 'the Kafka writer is closed'));
    if (this.failure) return Promise.reject(this.failure);
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

  /**
   * Releases the offset holds of these partitions once every write queued before this call is done (a partition
   * assigned anew: its consumer starts from the group's committed offset, whatever was refused before).
   */
  releaseOffsetHolds(topic: string, partitions: readonly number[]): Promise<void> {
    if (this.closed || this.failure || partitions.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.queue.push({
        records: [],
        offsets: [],
        guard: undefined,
        releaseHolds: partitions.map((partition) => partitionKey(topic, partition)),
        resolve: () => resolve(),
        reject,
      });
      this.kick();
    });
  }

  /** The offset a partition's commits are held at (a refused write), if any: for tests and diagnostics. */
  offsetHold(topic: string, partition: number): string | undefined {
    return this.offsetHolds.get(partitionKey(topic, partition))?.toString();
  }

  /** `send <topic>` (the first record's topic: an order's events come before its state record). */
  private startSendSpan(records: WritableRecord[]): Span {
    return startSendSpan(records[0]?.topic ?? 'unknown', {
      [ATTR_MESSAGING_BATCH_MESSAGE_COUNT]: records.length,
      'messaging.kafka.transactional_id': this.opts.transactionalId,
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
    // Whether the writes of this turn were queued while the last transaction committed (the writer has not been idle).
    let queuedWhileCommitting = false;
    while (this.queue.length) {
      // Let synchronous transitions of the same tick join this transaction.
      await new Promise((resolve) => setImmediate(resolve));
      // Under load, a short linger for the writes that are on their way (see `lingerMs`).
      const lingerMs = this.opts.lingerMs ?? 0;
      if (
        lingerMs > 0 &&
        queuedWhileCommitting &&
        !this.closed &&
        this.lastWrites >= (this.opts.lingerFromWrites ?? DEFAULT_LINGER_FROM_WRITES)
      ) {
        this.lingeredTransactions++;
        await new Promise((resolve) => setTimeout(resolve, lingerMs));
      }
      const batch = this.queue.splice(0, this.queue.length);
      this.lastWrites = batch.length;
      const plan = planTransactions(
        batch,
        this.opts.maxTransactionBytesPerPartition ?? DEFAULT_MAX_TRANSACTION_BYTES_PER_PARTITION,
      );
      for (const [index, chunk] of plan.entries()) {
        try {
          await this.commitSplittingOnSize(chunk);
        } catch (error) {
          const failure = error instanceof Error ? error : new Error(String(error));
          // Failed for good: every later write is refused too, and onFatal runs before any waiter resumes, so
          // nothing that waited for durability acts on a write that never happened.
          this.failure = failure;
          const waiting = [...plan.slice(index).flat(), ...this.queue.splice(0, this.queue.length)];
          this.opts.onFatal(failure);
          for (const item of waiting) item.reject(failure);
          return;
        }
      }
      queuedWhileCommitting = true;
    }
  }

  /**
   * Commits one planned transaction. A size refusal (our estimate was off, or the broker's limit is lower than
   * the cap) is split around: halves are committed one after the other, in order, down to a single write, which
   * alone is refused to its caller (non-retryable) while the writer carries on.
   */
  private async commitSplittingOnSize(chunk: Pending[]): Promise<void> {
    try {
      const refused = await this.commitWithRetry(chunk);
      for (const item of chunk) item.resolve(!refused.has(item));
    } catch (error) {
      if (!isRecordSizeError(error)) throw error;
      if (chunk.length > 1) {
        const half = Math.ceil(chunk.length / 2);
        await this.commitSplittingOnSize(chunk.slice(0, half));
        await this.commitSplittingOnSize(chunk.slice(half));
        return;
      }
      const [item] = chunk;
      if (!item) return;
      this.oversizedWrites++;
      // Nothing of it was written: no later offset of its partitions may commit it.
      holdAt(this.offsetHolds, item.offsets);
      const bytes = item.records.reduce((sum, record) => sum + recordBytes(record), 0);
      const topics = [...new Set(item.records.map((record) => record.topic))];
      // Sizes and topics only: record contents may carry what must not be logged.
      this.opts.logger.error(
        { bytes, records: item.records.length, topics },
        'the broker refused a write for its size even alone; it is dropped and its caller fails (a bug: report it)',
      );
      item.reject(
        new WorkerError(
          'kafka_record_too_large',
          `a write of ${bytes} bytes (${item.records.length} records) exceeds the broker's maximum message size`,
          { cause: error },
        ),
      );
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
        return await this.commitWithin(batch);
      } catch (error) {
        lastError = error;
        // A fenced or unauthorized producer is final (kafka-errors.ts).
        const { name, fenced } = transactionFailureOf(error);
        // CONCURRENT_TRANSACTIONS is refused before anything is produced; any other failure may have appended
        // part of the records, so the next attempt needs fresh sequence numbers (see renewProducer).
        if (!fenced && name !== 'CONCURRENT_TRANSACTIONS' && !this.closed) {
          await this.renewProducer().catch((renewError: unknown) => {
            this.opts.logger.warn(
              { err: { message: (renewError as Error).message } },
              'could not renew the Kafka producer',
            );
          });
        }
        // A guard that lapsed before the commit: routine, retried at once (its write is refused this time).
        if (error instanceof GuardLapsedError) continue;
        // A size refusal is final for this transaction: the caller splits around it.
        if (isRecordSizeError(error)) throw error;
        // CONCURRENT_TRANSACTIONS: the previous commit's markers are still being written; routine, retried.
        this.opts.logger[name === 'CONCURRENT_TRANSACTIONS' ? 'debug' : 'warn'](
          { attempt, err: { name, message: (error as Error).message } },
          'kafka transaction failed',
        );
        if (fenced) break;
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

  /**
   * One attempt, bounded: a stuck one is given up (the caller renews the producer, whose new epoch makes the
   * coordinator abort what the old one left open) and whatever it does later is ignored.
   */
  private commitWithin(batch: Pending[]): Promise<Set<Pending>> {
    const limitMs = this.opts.attemptTimeoutMs ?? Math.max(30_000, 2 * this.opts.transactionTimeoutMs);
    const attempt = this.commitOnce(batch);
    attempt.catch(() => {});
    return withTimeout(attempt, limitMs, () => new TransactionStuckError(limitMs));
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

  /** The size (recordBytes) of a transaction's records of compressed topics. */
  private compressedBytes(byTopic: ReadonlyMap<string, readonly WritableRecord[]>): number {
    let bytes = 0;
    for (const [topic, records] of byTopic)
      if (this.compressedTopics.has(topic)) for (const record of records) bytes += recordBytes(record);
    return bytes;
  }

  private async commitOnceUnwatched(batch: Pending[]): Promise<Set<Pending>> {
    const byTopic = new Map<string, WritableRecord[]>();
    const offsets = new Map<string, OffsetToCommit>();
    const refused = new Set<Pending>();
    // The holds as they will be once this transaction commits (kept only if it does), applied in queue order.
    const holds = new Map(this.offsetHolds);
    for (const item of batch) {
      for (const key of item.releaseHolds ?? []) holds.delete(key);
      if (item.guard && !item.guard()) {
        refused.add(item);
        holdAt(holds, item.offsets);
        continue;
      }
      for (const record of item.records) {
        const list = byTopic.get(record.topic) ?? [];
        list.push(record);
        byTopic.set(record.topic, list);
      }
      for (const offset of item.offsets) {
        const id = partitionKey(offset.topic, offset.partition);
        const at = BigInt(offset.offset);
        const held = holds.get(id);
        // Past a refused command: its records are written, its offset waits for the refused one.
        if (held !== undefined && at > held) continue;
        // The refused command itself, written this time: the partition's offsets move on again.
        if (held !== undefined && at === held) holds.delete(id);
        const current = offsets.get(id);
        if (!current || at > BigInt(current.offset)) offsets.set(id, offset);
      }
    }
    // Every write still resolves as committed: a record left out is in the transaction's outcome, as its successor.
    for (const [topic, records] of byTopic)
      if (records.length > 1) byTopic.set(topic, this.latestOnly(records));
    if (byTopic.size === 0 && offsets.size === 0) {
      this.offsetHolds = holds;
      return refused;
    }
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
      let zstd = topicMessages.filter((entry) => this.compressedTopics.has(entry.topic));
      let plain = topicMessages.filter((entry) => !this.compressedTopics.has(entry.topic));
      if (plain.length && zstd.length && this.compressedBytes(byTopic) < this.compressFromBytes) {
        plain = topicMessages;
        zstd = [];
      }
      if (plain.length) await transaction.sendBatch({ topicMessages: plain });
      if (zstd.length)
        await transaction.sendBatch({ topicMessages: zstd, compression: CompressionTypes.ZSTD });
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
      // Fencing once more, as late as possible: a guard (an order's lease) that no longer holds once the records are
      // sent means this process was paused or starved between the first check and now, and another replica may
      // already write for that order. Nothing of this transaction is committed; the retry leaves that write out.
      if (batch.some((item) => item.guard !== undefined && !refused.has(item) && !item.guard()))
        throw new GuardLapsedError();
      await transaction.commit();
      this.offsetHolds = holds;
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

  /** One topic's records without those marked latestOnly that a later marked record of their key replaces. */
  private latestOnly(records: WritableRecord[]): WritableRecord[] {
    const keyOf = (record: WritableRecord): string => `${record.partition ?? '*'}\u0000${record.key}`;
    const last = new Map<string, number>();
    let marked = 0;
    for (let i = 0; i < records.length; i++) {
      const record = records[i] as WritableRecord;
      if (record.latestOnly !== true) continue;
      marked++;
      last.set(keyOf(record), i);
    }
    if (last.size === marked) return records;
    this.supersededRecords += marked - last.size;
    return records.filter((record, i) => record.latestOnly !== true || last.get(keyOf(record)) === i);
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    await this.producer.disconnect();
  }
}
