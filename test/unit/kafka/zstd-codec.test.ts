import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { constants, zstdCompressSync } from 'node:zlib';
import kafkajs from 'kafkajs';
import { frameContentSize, registerZstdCodec } from '../../../src/kafka/zstd-codec.ts';

const { CompressionCodecs, CompressionTypes } = kafkajs;

registerZstdCodec();
const codec = (
  CompressionCodecs as unknown as Record<number, () => { decompress: (b: Buffer) => Promise<Buffer> }>
)[CompressionTypes.ZSTD]!();

const level1 = { [constants.ZSTD_c_compressionLevel]: 1, [constants.ZSTD_c_windowLog]: 17 };

describe('zstd codec', () => {
  it('reads the content size of frames with 1, 2, 4 and 8 byte size fields, with and without a window byte', () => {
    for (const length of [0, 1, 255, 256, 300, 65_791, 65_792, 200_000, 5_000_000]) {
      const input = Buffer.alloc(length, 'state ');
      for (const params of [level1, {}]) {
        const frame = zstdCompressSync(input, { params });
        expect(frameContentSize(frame)).toBe(length);
      }
    }
    // An 8-byte size field, written by hand (no encoder here writes one below 4 GiB).
    const frame = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0, 1, 2, 3, 4, 5, 6, 0, 0]);
    expect(frameContentSize(frame)).toBe(0x060504030201);
  });

  it('says nothing of a frame that declares no size, or of bytes that are not a frame', () => {
    const noSize = zstdCompressSync(Buffer.from('x'.repeat(10_000)), {
      params: { [constants.ZSTD_c_contentSizeFlag]: 0 },
    });
    expect(frameContentSize(noSize)).toBeUndefined();
    expect(frameContentSize(Buffer.from('not zstd at all'))).toBeUndefined();
    expect(frameContentSize(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]))).toBeUndefined();
    expect(frameContentSize(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x80, 0x38]))).toBeUndefined();
  });

  it('decompresses a batch to what was compressed, whatever size its frame declares or leaves out', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 3000 }),
        fc.integer({ min: 1, max: 200 }),
        fc.boolean(),
        async (part, times, declared) => {
          const batch = Buffer.from(part.repeat(times));
          const frame = zstdCompressSync(batch, {
            params: { ...level1, [constants.ZSTD_c_contentSizeFlag]: declared ? 1 : 0 },
          });
          expect((await codec.decompress(frame)).equals(batch)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
