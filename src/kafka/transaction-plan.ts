// The plan of a transaction: how the queued writes are cut into transactions that a broker accepts (the records of
// one partition under a byte cap, each write whole), how large a record is on the wire, and the offset holds that
// keep a partition's committed offset below a command whose write was refused.

/** What the plan reads of a record (an OutboundRecord or a tombstone of transactional-writer.ts). */
export interface PlannedRecord {
  readonly topic: string;
  readonly partition?: number | undefined;
  readonly key: string;
  readonly value: string | null;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** A command's offset to commit (OffsetToCommit of transactional-writer.ts). */
export interface PlannedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/**
 * Bytes of one partition's records in one transaction, by default: half the broker's default max.message.bytes
 * (1 MiB), leaving room for the record batch overhead. Records without an explicit partition (spread by key) are
 * counted together per topic, which can only overestimate.
 */
export const DEFAULT_MAX_TRANSACTION_BYTES_PER_PARTITION = 512 * 1024;

/** Approximate size of a record on the wire (key, value, headers and a fixed per-record overhead). */
export function recordBytes(record: PlannedRecord): number {
  let bytes = 70 + Buffer.byteLength(record.key) + Buffer.byteLength(record.value ?? '');
  for (const [name, value] of Object.entries(record.headers ?? {}))
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value) + 8;
  return bytes;
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** Holds each offset's partition at that offset, unless it is held at an earlier one already. */
export function holdAt(holds: Map<string, bigint>, offsets: readonly PlannedOffset[]): void {
  for (const offset of offsets) {
    const key = partitionKey(offset.topic, offset.partition);
    const at = BigInt(offset.offset);
    const held = holds.get(key);
    if (held === undefined || at < held) holds.set(key, at);
  }
}

function bucketOf(record: PlannedRecord): string {
  return `${record.topic}\u0000${record.partition ?? '*'}`;
}

/**
 * Splits queued writes, in order, into transactions whose records stay under `maxBytesPerPartition` per partition.
 * A write is never split (its events, state record and offset must commit together); one larger than the cap on
 * its own gets a transaction of its own.
 */
export function planTransactions<T extends { records: readonly PlannedRecord[] }>(
  items: readonly T[],
  maxBytesPerPartition: number,
): T[][] {
  const plan: T[][] = [];
  let current: T[] = [];
  let load = new Map<string, number>();
  for (const item of items) {
    const own = new Map<string, number>();
    for (const record of item.records)
      own.set(bucketOf(record), (own.get(bucketOf(record)) ?? 0) + recordBytes(record));
    const overflows = [...own].some(
      ([bucket, bytes]) => (load.get(bucket) ?? 0) + bytes > maxBytesPerPartition,
    );
    if (overflows && current.length) {
      plan.push(current);
      current = [];
      load = new Map();
    }
    current.push(item);
    for (const [bucket, bytes] of own) load.set(bucket, (load.get(bucket) ?? 0) + bytes);
  }
  if (current.length) plan.push(current);
  return plan;
}
