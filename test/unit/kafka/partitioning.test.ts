// The canonical partition of a key is the one the Java client's default partitioner picks: checked against the
// vectors of Kafka's own UtilsTest.testMurmur2 and against kafkajs's DefaultPartitioner over many keys.
import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { defaultPartitionOf, KeyPartitioning, murmur2 } from '../../../src/kafka/partitioning.ts';

describe('key partitioning', () => {
  it.each([
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ])('hashes %j as Kafka’s murmur2 does (%i)', (text, expected) => {
    expect(murmur2(Buffer.from(text))).toBe(expected);
  });

  it("picks the partition kafkajs's DefaultPartitioner picks, for every key length and partition count", () => {
    const partitioner = Partitioners.DefaultPartitioner();
    for (const partitions of [1, 3, 12, 50]) {
      const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
        partitionId,
        leader: 0,
        partitionErrorCode: 0,
        replicas: [0],
        isr: [0],
      }));
      for (let i = 0; i < 500; i++) {
        const key = `order-${i}-${'é'.repeat(i % 7)}${String.fromCodePoint(0x1f600 + (i % 5))}`;
        const expected = partitioner({ topic: 't', partitionMetadata, message: { key, value: null } });
        expect(defaultPartitionOf(key, partitions)).toBe(expected);
      }
    }
  });

  it('answers nothing until the partition count is known, and refuses a count below one', () => {
    const partitioning = new KeyPartitioning();
    expect(partitioning.partitionOf('o-1')).toBeUndefined();
    partitioning.usePartitionCount(12);
    expect(partitioning.partitionOf('o-1')).toBe(defaultPartitionOf('o-1', 12));
    expect(() => partitioning.usePartitionCount(0)).toThrow(RangeError);
  });
});
