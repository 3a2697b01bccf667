// The local broker's KRaft cluster id is handed to kafka-storage as `-t <id>`: an id starting with '-' reads as an
// option there and the broker never starts (seen once in 64 starts). Ids are drawn again until they do not.
import { describe, expect, it } from 'vitest';
import { clusterId } from '../../../dev/services/kafka-local.ts';

describe('local Kafka cluster id', () => {
  it('never starts with a dash, even when the random bytes would make it', () => {
    // 0xf8 as the first byte encodes to '-' in base64url; the second draw does not.
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x41)];
    const id = clusterId(() => draws.shift()!);
    expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    expect(draws).toHaveLength(0);
    for (let i = 0; i < 5_000; i++) expect(clusterId()).not.toMatch(/^-/);
  });
});
