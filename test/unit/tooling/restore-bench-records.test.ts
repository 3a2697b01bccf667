// The restore benchmark's records (bench/restore-at-scale.ts cloneRecord): each a state record the worker accepts,
// of its own order and partition, and together as compressible as distinct orders' records are, not as clones of
// one record (those compressed about 100x in the benchmark's batches of 1,000, so a restore decoded 20-40 MiB per
// MiB fetched and the benchmark measured a peak no worker's own state topic makes).
import { zstdCompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { cloneRecord, templateRecord } from '../../../bench/restore-at-scale.ts';
import { orderRecordSchema } from '../../../src/kafka/order-state-store.ts';
import { zstdCompressOptions } from '../../../src/kafka/zstd-codec.ts';

describe('the restore benchmark records', () => {
  it('are records of distinct orders that compress as distinct orders do', async () => {
    const template = await templateRecord();
    const clones = Array.from({ length: 1_000 }, (_, i) => cloneRecord(template, i, 6, 'abc123'));
    const records = clones.map((c) => orderRecordSchema.parse(JSON.parse(c.value)));
    expect(new Set(records.map((r) => r.order_id)).size).toBe(1_000);
    expect(new Set(records.map((r) => r.unique_reference)).size).toBe(1_000);
    expect(new Set(records.map((r) => r.create_hash)).size).toBe(1_000);
    for (const [i, record] of records.entries()) {
      expect(record.order_id).toBe(clones[i]!.key);
      expect(record.partition).toBe(i % 6);
      expect(record.commands[0]?.[1]).toBe(record.create_hash);
    }
    const contexts = records.map(
      (r) => (r.machine as { context: { order: { depositAddress: string; rate: string } } }).context.order,
    );
    expect(new Set(contexts.map((o) => o.depositAddress)).size).toBe(1_000);
    expect(new Set(contexts.map((o) => o.rate)).size).toBeGreaterThan(900);
    const text = Buffer.from(clones.map((c) => c.value).join(''));
    const ratio = text.length / zstdCompressSync(text, zstdCompressOptions).length;
    // Clones that differ only in their ids: about 100x. The worker's own batches: about 14x.
    expect(ratio).toBeLessThan(30);
  });
});
