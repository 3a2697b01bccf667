// Zstandard for kafkajs, from Node's own zlib (no native add-on): kafkajs 2.2.4 ships only gzip and throws on a
// zstd batch without a codec registered. Registered once, for the whole process, when this module is loaded (by
// kafka-client.ts, which every Kafka use in src/ goes through), so every consumer of ours can read what a producer
// of ours compressed. The worker compresses only its own state topic with it (see TransactionalWriter's
// `compressedTopics`): state records are repetitive JSON (the machine's snapshot), about 14 times smaller
// compressed, and zstd costs about a millisecond per 4 MB here. Events stay uncompressed so that any client can
// read them.
import { constants, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import kafkajs from 'kafkajs';

// CompressionCodecs is not one of the names Node's ESM loader detects in kafkajs's CommonJS exports.
const { CompressionCodecs, CompressionTypes } = kafkajs;

/**
 * Level 1: as small as the default level on these records (a few KB to a few hundred KB per batch), faster. A
 * 128 KiB window (the default at level 1 is 512 KiB-1 MiB): the same ratio on batches of such records, and a
 * quarter of the CPU per small batch, which went to setting up the larger window's tables.
 */
export const zstdCompressOptions = {
  params: { [constants.ZSTD_c_compressionLevel]: 1, [constants.ZSTD_c_windowLog]: 17 },
};

/** What this process compressed so far (bytes before and after), for tests and benchmarks. */
export const zstdTotals = { batches: 0, bytesIn: 0, bytesOut: 0 };

// Synchronous on purpose: a batch is at most about 512 KiB (the writer's cap per partition), well under a
// millisecond, and zlib's asynchronous form costs more than the work itself at these sizes (a stream per call, a
// thread-pool hand-off and its wake-ups): about 175 against 100 microseconds of CPU to compress a 10 KB batch, 150
// against 32 to decompress it.
const zstdCodec = {
  compress: (encoder: { buffer: Buffer }): Promise<Buffer> => {
    const out = zstdCompressSync(encoder.buffer, zstdCompressOptions);
    zstdTotals.batches++;
    zstdTotals.bytesIn += encoder.buffer.length;
    zstdTotals.bytesOut += out.length;
    return Promise.resolve(out);
  },
  decompress: (buffer: Buffer): Promise<Buffer> => Promise.resolve(decompress(buffer)),
};

/** Larger claims are not believed (a batch is at most a few MiB decompressed): zlib's own chunks are used. */
const maxTrustedContentSize = 64 * 1024 * 1024;

/**
 * The decompressed size a Zstandard frame declares in its header (RFC 8878, 3.1.1.1), or undefined when it declares
 * none (or this is not a frame's start). zstdCompressSync writes it: it compresses the whole input in one call.
 */
export function frameContentSize(frame: Buffer): number | undefined {
  if (frame.length < 5 || frame.readUInt32LE(0) !== 0xfd2fb528) return undefined;
  const descriptor = frame[4]!;
  const sizeFlag = descriptor >> 6;
  const singleSegment = (descriptor >> 5) & 1;
  const dictionaryIdBytes = [0, 1, 2, 4][descriptor & 3]!;
  const sizeBytes = sizeFlag === 0 ? singleSegment : 1 << sizeFlag;
  if (sizeBytes === 0) return undefined;
  const at = 5 + (singleSegment ? 0 : 1) + dictionaryIdBytes;
  if (frame.length < at + sizeBytes) return undefined;
  switch (sizeBytes) {
    case 1:
      return frame[at]!;
    case 2:
      return frame.readUInt16LE(at) + 256;
    case 4:
      return frame.readUInt32LE(at);
    default:
      return Number(frame.readBigUInt64LE(at));
  }
}

/**
 * Decompressed into one buffer the size the frame declares (one byte more, so zlib sees room left and stops):
 * with its default 16 KiB chunks, zlib allocates a buffer per chunk and then copies them all into one, which took
 * about half of the time of decompressing a state batch (a restore of 100k orders spent 9 % of its CPU there).
 */
function decompress(buffer: Buffer): Buffer {
  const size = frameContentSize(buffer);
  if (size === undefined || size > maxTrustedContentSize) return zstdDecompressSync(buffer);
  return zstdDecompressSync(buffer, { chunkSize: Math.max(64, size + 1) });
}

let registered = false;

export function registerZstdCodec(): void {
  if (registered) return;
  registered = true;
  (CompressionCodecs as Record<number, () => typeof zstdCodec>)[CompressionTypes.ZSTD] = () => zstdCodec;
}

registerZstdCodec();
