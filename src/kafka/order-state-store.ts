// The durable record of every order: a compacted state topic, co-partitioned with the commands topic
// (a record is always written to the partition its commands arrive on). Every replica reads every partition, so a
// replica that waited (for a lease, for Redis) sees an order another replica created meanwhile, whichever partition
// it is on now (reading only the assigned partitions was tried and reverted: the fault suite's Redis run drove two
// orders twice with it, and a crashed reader left a replica unable to restore after broker restarts).
// Before any order of a newly assigned partition is driven, catchUp writes a barrier record into it and waits to
// read it back, which proves that this replica has seen every committed record before the barrier (including the
// last words of a replica that died). Open orders of the partitions this replica owns are held whole, a finished one
// only in a compact form (what answers a late command the same way: its create hash, its remembered command ids, its
// seq) until the retention sweep of the partition's owner tombstones it; an order of another partition, open or
// finished, only as where it lives: a row of numbers keyed by a hash of its id (partition, fence, rev, finished, and
// a hash of its reference: foreign-orders.ts). Until its first assignment every partition is another's: a replica
// joining a group holds whole only what it is given. Owning a partition read that way re-reads it from its
// beginning before its barrier. Records are ordered by (fence, rev): a record from an older lease
// holder never replaces a newer one. This replica's own writes are applied when they commit; read back from the
// topic they are recognised by their head and not parsed again.
import { withTimeout } from '../timeouts.ts';
import { randomUUID } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { KafkaClient } from './kafka-client.ts';
import { z } from 'zod';
import type { Logger } from '../telemetry/logger.ts';
import type { TransactionalWriter } from './transactional-writer.ts';
import { WorkerError } from '../errors.ts';
import { ForeignOrders, type ForeignEntry } from './foreign-orders.ts';

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
  /** The machine's persisted form (versioned by the machine module); null in a finished order's compact form. */
  machine: z.unknown(),
  /**
   * Commands accepted and not answered yet, [type, command_id] (src/contract/command-answers.ts): the events that
   * answer them carry their command_id, after a restore too. Absent when none is open.
   */
  answering: z
    .array(z.tuple([z.string(), z.string()]))
    .max(8)
    .optional(),
  /** W3C traceparent of the command that created the order: traces of its later polls link to it. */
  trace_origin: z.string().max(55).optional(),
});
export type OrderRecord = z.infer<typeof orderRecordSchema>;

const barrierSchema = z.object({ barrier: z.string() });

/**
 * A finished order as held in memory: no machine, and its remembered commands as one JSON string (a fraction of
 * the memory of an array of pairs). `get` turns it back into a record with `machine: null`.
 */
interface FinishedOrder extends Omit<OrderRecord, 'commands' | 'machine' | 'terminal'> {
  terminal: true;
  commands: string;
  /** updated_at in epoch ms: when the retention of the finished order started. */
  finishedAt: number;
}

type HeldRecord = OrderRecord | FinishedOrder;

function isFinished(record: HeldRecord): record is FinishedOrder {
  return typeof (record as Partial<FinishedOrder>).commands === 'string';
}

/** A held record as `get` answers it: a finished one expanded, an open one as it is. */
function viewOf(record: HeldRecord): OrderRecord {
  return isFinished(record) ? expand(record) : record;
}

/** What a record of a partition this replica does not own leaves out: asking for it throws (retryable). */
const notHeld = ['seq', 'updated_at', 'mode', 'create_hash', 'commands', 'unique_reference'] as const;

/**
 * The record of an order of a partition not owned, as `get` answers it: where it lives, its (fence, rev) and
 * whether it is finished; `machine` null. Its other fields are not held here (its reference only as a hash, which
 * `orderIdByReference` answers): reading one throws a retryable `state_not_held` (never a made-up value); they are
 * not enumerable, so a log line or a copy of the view leaves them out.
 */
function foreignView(orderId: string, held: ForeignEntry): OrderRecord {
  const view = {
    v: 1,
    order_id: orderId,
    partition: held.partition,
    fence: held.fence,
    rev: held.rev,
    terminal: held.terminal,
    machine: null,
  };
  for (const field of notHeld)
    Object.defineProperty(view, field, {
      enumerable: false,
      get: () => {
        throw new WorkerError(
          'state_not_held',
          `order ${orderId} lives on state partition ${held.partition}, which this replica does not own: its ${field} is not held here`,
          { retryable: true },
        );
      },
    });
  return view as unknown as OrderRecord;
}

function compact(record: OrderRecord): FinishedOrder {
  const { commands, machine: _dropped, terminal: _terminal, ...rest } = record;
  const finishedAt = Date.parse(record.updated_at);
  return {
    ...rest,
    terminal: true,
    commands: JSON.stringify(commands),
    finishedAt: Number.isFinite(finishedAt) ? finishedAt : 0,
  };
}

/** The record again, its commands parsed only when read (a restore lists every finished order of a partition). */
function expand(record: FinishedOrder): OrderRecord {
  const { commands, finishedAt: _finishedAt, ...rest } = record;
  let parsed: [string, string][] | undefined;
  return Object.defineProperty({ ...rest, machine: null }, 'commands', {
    get: () => (parsed ??= JSON.parse(commands) as [string, string][]),
    enumerable: true,
  }) as OrderRecord;
}

/** A finished order whose retention has passed: what the retention sweep needs to tombstone it under a lease. */
export interface ExpiredOrder {
  orderId: string;
  partition: number;
  fence: number;
  rev: number;
  uniqueReference: string | null;
}

/**
 * How long a catch-up may take. It waits out a dead producer's open transaction, which the broker aborts after
 * that producer's transaction timeout (plus its abort sweep, every 10 s by default), so it must exceed the
 * transaction timeout with a margin: twice it plus 30 s, and never less than two minutes.
 */
export function catchUpTimeoutFor(transactionTimeoutMs: number): number {
  return Math.max(120_000, 2 * transactionTimeoutMs + 30_000);
}

/** The head of a record as the journal writes it: `{"v":1,"order_id":…,"partition":…,"fence":…,"rev":…,`. */
const recordHead = /^\{"v":1,"order_id":"([^"\\]*)","partition":(\d+),"fence":(\d+),"rev":(\d+),/;
const recordHeadBytes = 240;

function newer(candidate: OrderRecord, current: { fence: number; rev: number } | undefined): boolean {
  if (!current) return true;
  if (candidate.fence !== current.fence) return candidate.fence > current.fence;
  return candidate.rev >= current.rev;
}

interface Waiter {
  partition: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

export class OrderStateStore {
  /** The orders of the partitions this replica owns (before its first catch-up: of every partition). */
  private records = new Map<string, HeldRecord>();
  private references = new Map<string, string>();
  /** The orders of every other partition, as where they live. */
  private readonly foreign = new ForeignOrders();
  private readonly waiters = new Map<string, Waiter>();
  /** The partitions this replica is assigned (catchUp adds, release removes): its retention sweep's share. */
  private readonly owned = new Set<number>();
  /** Partitions holding records only as where they live: owning one again means reading it from its beginning. */
  private readonly foreignPartitions = new Set<number>();
  private consumer: Consumer | undefined;
  private readonly kafka: KafkaClient;
  private readonly topic: string;
  private readonly workerId: string;
  private readonly writer: TransactionalWriter;
  private readonly logger: Logger;
  private readonly catchUpTimeoutMs: number;
  private readonly onReference: ((reference: string, orderId: string, partition: number) => void) | undefined;
  private readonly onRecord: ((record: OrderRecord | { forgotten: string }) => void) | undefined;
  private readonly onRelease: ((partitions: readonly number[]) => void) | undefined;
  private stopped = false;
  invalidRecords = 0;

  constructor(opts: {
    kafka: KafkaClient;
    topic: string;
    workerId: string;
    writer: TransactionalWriter;
    logger: Logger;
    /** The producers' transaction timeout (KAFKA_TRANSACTION_TIMEOUT_MS), which a catch-up may have to wait out. */
    transactionTimeoutMs: number;
    /**
     * Told once per order (per time its partition is caught up here) of the exchange order it records: the
     * composition root publishes "reference -> order, partition" for replicas that do not hold the partition.
     */
    onReference?: (reference: string, orderId: string, partition: number) => void;
    /**
     * Told of every record accepted as the newest of an order of a partition owned (the very object held, which
     * must not be changed), and of every order forgotten.
     */
    onRecord?: (record: OrderRecord | { forgotten: string }) => void;
    /** Told of partitions released: their orders are held from now on only as where they live. */
    onRelease?: (partitions: readonly number[]) => void;
  }) {
    this.catchUpTimeoutMs = catchUpTimeoutFor(opts.transactionTimeoutMs);
    this.kafka = opts.kafka;
    this.topic = opts.topic;
    this.workerId = opts.workerId;
    this.writer = opts.writer;
    this.logger = opts.logger.child({ component: 'state-store' });
    this.onReference = opts.onReference;
    this.onRecord = opts.onRecord;
    this.onRelease = opts.onRelease;
  }

  async start(): Promise<void> {
    await this.startReader();
  }

  /**
   * A group of its own (one member, a fresh id each time) that never commits: it reads every partition from its
   * beginning. A reader that kafkajs will not restart itself (a crash on a non-retriable error, such as "failed to
   * find group coordinator" while brokers restart) is replaced: barriers must keep being read.
   */
  private async startReader(): Promise<void> {
    const consumer = KafkaClient.kafkajs(this.kafka).consumer({
      groupId: `${this.topic}.reader.${this.workerId}.${randomUUID()}`,
      sessionTimeout: 30_000,
      readUncommitted: false,
      maxWaitTimeInMs: 100,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || this.stopped || this.consumer !== consumer) return;
      this.logger.warn(
        { err: { message: payload.error.message } },
        'state reader crashed and will not restart by itself; starting a new one',
      );
      const retry = (): void => {
        if (this.stopped || this.consumer !== consumer) return;
        this.startReader().catch((error: unknown) => {
          this.logger.warn(
            { err: { message: (error as Error).message } },
            'state reader did not start; retrying',
          );
          setTimeout(retry, 2_000).unref();
        });
      };
      setTimeout(retry, 1_000).unref();
    });
    await consumer.connect();
    await consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 4,
      eachMessage: ({ message, partition }) => {
        this.consume(message.key?.toString() ?? '', message.value, partition);
        return Promise.resolve();
      },
    });
  }

  private consume(key: string, value: Buffer | null, partition: number): void {
    if (value === null) {
      // A tombstone: the order's retention passed and its record left the topic. "No record" from here on.
      this.forget(key);
      return;
    }
    if (this.alreadyHeld(key, value)) return;
    let json: unknown;
    try {
      json = JSON.parse(value.toString());
    } catch {
      this.invalidRecords++;
      this.logger.error({ key, partition }, 'state record is not JSON; ignored');
      return;
    }
    // Only a record with a `barrier` key can be one (asked first: a failed parse builds its issues, for every record).
    const barrier =
      typeof json === 'object' && json !== null && 'barrier' in json
        ? barrierSchema.safeParse(json)
        : undefined;
    if (barrier?.success) {
      this.waiters.get(barrier.data.barrier)?.resolve();
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

  /**
   * A record this store holds already, whole (not foreign): most often this replica's own write read back, which
   * `apply` took when it committed. Known by its head (order, partition, fence, rev, which the journal writes
   * first), without parsing 2-3 KB of JSON and validating it again. Records are unique per (order, fence, rev): one
   * lease holder per fence writes each rev once. Anything else - a head in another form, a newer or an older
   * record, an order held only as where it lives (a partition being made whole) - takes the full path.
   */
  private alreadyHeld(key: string, value: Buffer): boolean {
    const held = this.records.get(key);
    if (!held) return false;
    const head = recordHead.exec(value.toString('latin1', 0, recordHeadBytes));
    return (
      head !== null &&
      head[1] === key &&
      Number(head[2]) === held.partition &&
      Number(head[3]) === held.fence &&
      Number(head[4]) === held.rev
    );
  }

  /**
   * Applies a record we committed ourselves (or read back); keeps the newest by (fence, rev). A record of a
   * partition this replica does not own is held only as where its order lives; a finished order is kept in its
   * compact form. Only the orders of owned partitions are told to `onReference` (their owner publishes their routes).
   */
  apply(record: OrderRecord): void {
    const orderId = record.order_id;
    // From the start: before its first assignment a replica owns nothing, so a replica joining a group of N holds
    // about 1/N of the orders whole, not all of them (it reads the partitions it is then given again).
    if (!this.owned.has(record.partition)) {
      if (!newer(record, this.foreign.get(orderId))) return;
      this.foreign.set(orderId, record, record.unique_reference);
      this.foreignPartitions.add(record.partition);
      return;
    }
    // A partition read again from its beginning (owned again): its orders' last records replace where they lived.
    const located = this.foreign.get(orderId);
    if (!newer(record, this.records.get(orderId) ?? located)) return;
    if (located) this.foreign.delete(orderId);
    this.records.set(orderId, record.terminal ? compact(record) : record);
    this.onRecord?.(record);
    const reference = record.unique_reference;
    if (reference && this.references.get(reference) !== orderId) {
      this.references.set(reference, orderId);
      this.onReference?.(reference, orderId, record.partition);
    }
  }

  /**
   * The order's record: finished ones with `machine: null`; an order of a partition this replica does not own as
   * where it lives only (its other fields throw `state_not_held` when read: only the owner drives the order or
   * answers its commands, and catchUp makes a partition's records whole).
   */
  get(orderId: string): OrderRecord | undefined {
    const record = this.records.get(orderId);
    if (record !== undefined) return viewOf(record);
    const located = this.foreign.get(orderId);
    return located && foreignView(orderId, located);
  }

  /**
   * The order recording this exchange order, among the partitions this replica owns; null when an order of
   * another partition records it (its id is not held here); undefined when no order does.
   */
  orderIdByReference(uniqueReference: string): string | null | undefined {
    return (
      this.references.get(uniqueReference) ?? (this.foreign.hasReference(uniqueReference) ? null : undefined)
    );
  }

  /** The records of a partition owned (finished ones in their compact form, `machine: null`); none of another. */
  recordsOfPartition(partition: number): OrderRecord[] {
    const found: OrderRecord[] = [];
    for (const record of this.records.values()) {
      if (record.partition === partition) found.push(viewOf(record));
    }
    return found;
  }

  /** Orders known here: open ones and finished ones within their retention, of every partition. */
  size(): number {
    return this.records.size + this.foreign.size;
  }

  /** The partitions this replica owns (caught up and not released). */
  ownedPartitions(): number[] {
    return [...this.owned].sort((a, b) => a - b);
  }

  /** Finished orders whose last record is older than `finishedBefore` (epoch ms). */
  expired(finishedBefore: number): ExpiredOrder[] {
    const found: ExpiredOrder[] = [];
    for (const record of this.records.values()) {
      if (!this.owned.has(record.partition)) continue;
      if (!isFinished(record) || record.finishedAt >= finishedBefore) continue;
      found.push({
        orderId: record.order_id,
        partition: record.partition,
        fence: record.fence,
        rev: record.rev,
        uniqueReference: record.unique_reference,
      });
    }
    return found;
  }

  /** Drops an order (its tombstone was written or read): from here on it has no record. */
  forget(orderId: string): void {
    this.onRecord?.({ forgotten: orderId });
    const record = this.records.get(orderId);
    if (!record) {
      this.foreign.delete(orderId);
      return;
    }
    this.records.delete(orderId);
    const reference = record.unique_reference;
    if (reference && this.references.get(reference) === orderId) this.references.delete(reference);
  }

  /**
   * Proves this replica has read every committed record of these partitions: starts reading the ones it does not
   * hold yet (from their beginning), writes one barrier per partition and waits until all of them are read back.
   * Open transactions of a dead producer delay it until the broker aborts them (the producers' transaction
   * timeout, which the default timeout exceeds). Rejects when a partition is released meanwhile.
   */
  async catchUp(partitions: number[], timeoutMs = this.catchUpTimeoutMs): Promise<void> {
    if (partitions.length === 0) return;
    for (const partition of partitions) this.owned.add(partition);
    // A partition held without machines is read again from its beginning; the barrier below is read after it.
    const reread: number[] = [];
    for (const partition of partitions) {
      if (!this.foreignPartitions.delete(partition)) continue;
      reread.push(partition);
      try {
        this.consumer?.seek({ topic: this.topic, partition, offset: '0' });
        this.logger.info({ partition }, 'state partition owned again: reading it from its beginning');
      } catch (error) {
        // A reader still starting (replacing a crashed one) reads every partition from its beginning anyway.
        this.logger.info(
          { partition, err: { message: (error as Error).message } },
          'state partition owned again; the reader is starting and reads it from its beginning',
        );
      }
    }
    const pending = partitions.map((partition) => {
      const nonce = randomUUID();
      const seen = new Promise<void>((resolve, reject) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(nonce);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`state partition ${partition} not caught up after ${timeoutMs} ms`));
        }, timeoutMs);
        this.waiters.set(nonce, {
          partition,
          resolve: () => {
            done();
            resolve();
          },
          reject: (error) => {
            done();
            reject(error);
          },
        });
      });
      // Observed through Promise.all below; a release before the barrier is written must not go unhandled.
      seen.catch(() => {});
      return {
        nonce,
        seen,
        record: {
          topic: this.topic,
          key: `__barrier__:${this.workerId}:${partition}`,
          partition,
          value: JSON.stringify({ barrier: nonce }),
        },
      };
    });
    // The barrier's write is bounded by the same timeout: a writer stuck behind a broker restart must not hold a
    // partition's restore (and every message queued behind it) for good; the caller retries.
    try {
      await withTimeout(
        this.writer.write(pending.map((p) => p.record)),
        timeoutMs,
        () => new Error(`state barrier not written after ${timeoutMs} ms`),
      );
    } catch (error) {
      for (const p of pending) this.waiters.get(p.nonce)?.reject(error as Error);
      throw error;
    }
    await Promise.all(pending.map((p) => p.seen));
    // A seek the reader dropped (its own group rebalanced meanwhile) leaves orders held only as where they live:
    // caught up is only what is whole. The caller retries (a restore, a reload, a create), and the partition is re-read.
    const partial = reread.filter((partition) => this.foreign.holds(partition));
    if (partial.length) {
      for (const partition of partial) this.foreignPartitions.add(partition);
      throw new Error(`state partitions ${partial.join(', ')} not yet read again from their beginning`);
    }
  }

  /**
   * An owned open order's machine changed without a write (it only confirms its record: MachineBinding.confirmsOnly):
   * the record held for that rev takes it, so that the order's host and this store hold one form, and a restore or a
   * reload here starts from what the order last confirmed. A record read from the topic later replaces it as always.
   */
  amend(orderId: string, rev: number, machine: unknown): void {
    const held = this.records.get(orderId);
    if (held && !isFinished(held) && held.rev === rev) held.machine = machine;
  }

  /**
   * Partitions this replica no longer owns: their records stay (every replica reads every partition), held only
   * as where their orders live; a catch-up of one of them still waiting is rejected, and the retention sweep leaves them to
   * their new owner.
   */
  release(partitions: readonly number[]): void {
    const released = partitions.filter((partition) => this.owned.delete(partition));
    if (released.length === 0) return;
    this.stripForeign();
    this.onRelease?.(released);
    const gone = new Set(released);
    for (const waiter of [...this.waiters.values()])
      if (gone.has(waiter.partition))
        waiter.reject(new Error(`state partition ${waiter.partition} was released while catching up`));
    this.logger.info({ released }, 'state partitions released');
  }

  /** Holds every order of a partition this replica does not own only as where it lives. */
  private stripForeign(): void {
    const before = this.records.size;
    for (const [orderId, record] of this.records) {
      if (this.owned.has(record.partition)) continue;
      this.foreign.set(orderId, record, record.unique_reference);
      this.records.delete(orderId);
      const reference = record.unique_reference;
      if (reference && this.references.get(reference) === orderId) this.references.delete(reference);
      this.foreignPartitions.add(record.partition);
    }
    // V8 shrinks a Map's table only once it is less than a quarter full: one that held every partition's orders
    // and keeps a third of them (3 replicas) would keep its table sized for all (about 3.7 MiB per 100k orders
    // for these two). Copied, each gets a table for what it holds.
    if (this.records.size * 2 <= before) {
      this.records = new Map(this.records);
      this.references = new Map(this.references);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const waiter of [...this.waiters.values()]) waiter.reject(new Error('state store stopped'));
    await this.consumer?.disconnect();
  }
}
