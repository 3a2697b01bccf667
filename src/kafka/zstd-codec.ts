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
const compressOptions = {
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
    const out = zstdCompressSync(encoder.buffer, compressOptions);
    zstdTotals.batches++;
    zstdTotals.bytesIn += encoder.buffer.length;
    zstdTotals.bytesOut += out.length;
    return Promise.resolve(out);
  },
  decompress: (buffer: Buffer): Promise<Buffer> => Promise.resolve(zstdDecompressSync(buffer)),
};

let registered = false;

export function registerZstdCodec(): void {
  if (registered) return;
  registered = true;
  (CompressionCodecs as Record<number, () => typeof zstdCodec>)[CompressionTypes.ZSTD] = () => zstdCodec;
}

registerZstdCodec();
