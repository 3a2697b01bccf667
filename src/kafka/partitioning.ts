// The partition the Java client's default partitioner picks for a key (murmur2 of the key's UTF-8 bytes, made
// positive, modulo the partition count): the Apache Kafka Java client, kafkajs's DefaultPartitioner and librdkafka's
// `murmur2_random` agree on it. An order's home is this partition of its order_id (docs/decisions/
// partitioner-independent-commands.md), so a producer using that partitioner reaches the home directly and every
// other producer's command is forwarded there.

/** Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2): a signed 32-bit hash of the bytes. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  let h = 0x9747b28c ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k =
      (data[i] as number) |
      ((data[i + 1] as number) << 8) |
      ((data[i + 2] as number) << 16) |
      ((data[i + 3] as number) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const rest = length & 3;
  if (rest === 3) h ^= (data[whole + 2] as number) << 16;
  if (rest >= 2) h ^= (data[whole + 1] as number) << 8;
  if (rest >= 1) {
    h ^= data[whole] as number;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition of `partitions` that the Java client's default partitioner gives this key. */
export function defaultPartitionOf(key: string, partitions: number): number {
  if (!Number.isSafeInteger(partitions) || partitions < 1)
    throw new RangeError(`a topic has at least one partition, not ${partitions}`);
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions;
}

/**
 * The commands topic's partitioning once its partition count is known (the worker learns it when it ensures the
 * topics at start, before any command is consumed); until then, `partitionOf` answers undefined.
 */
export class KeyPartitioning {
  #partitions: number | undefined;

  /** The commands topic has this many partitions (fixed for the deployment: start-up refuses a change). */
  usePartitionCount(partitions: number): void {
    defaultPartitionOf('', partitions); // validates the count
    this.#partitions = partitions;
  }

  get partitions(): number | undefined {
    return this.#partitions;
  }

  partitionOf(key: string): number | undefined {
    return this.#partitions === undefined ? undefined : defaultPartitionOf(key, this.#partitions);
  }
}
