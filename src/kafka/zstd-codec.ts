// Zstandard for kafkajs, from Node's own zlib (no native add-on): kafkajs 2.2.4 ships only gzip and throws on a
// zstd batch without a codec registered. Registered once, for the whole process, when this module is loaded (by
// kafka-client.ts, which every Kafka use in src/ goes through), so every consumer of ours can read what a producer
// of ours compressed. The worker compresses only its own state topic with it (see TransactionalWriter's
// `compressedTopics`): state records are repetitive JSON (the machine's snapshot), about 14 times smaller
// compressed, and zstd costs about a millisecond per 4 MB here. Events stay uncompressed so that any client can
// read them.
import { promisify } from 'node:util';
import { constants, zstdCompress, zstdDecompress } from 'node:zlib';
import kafkajs from 'kafkajs';

// CompressionCodecs is not one of the names Node's ESM loader detects in kafkajs's CommonJS exports.
const { CompressionCodecs, CompressionTypes } = kafkajs;

const compress = promisify(zstdCompress);
const decompress = promisify(zstdDecompress);

/** What this process compressed so far (bytes before and after), for tests and benchmarks. */
export const zstdTotals = { batches: 0, bytesIn: 0, bytesOut: 0 };

const zstdCodec = {
  compress: async (encoder: { buffer: Buffer }): Promise<Buffer> => {
    // Level 1: as small as the default level on these records (a few KB to a few hundred KB per batch), faster.
    const out = await compress(encoder.buffer, { params: { [constants.ZSTD_c_compressionLevel]: 1 } });
    zstdTotals.batches++;
    zstdTotals.bytesIn += encoder.buffer.length;
    zstdTotals.bytesOut += out.length;
    return out;
  },
  decompress: (buffer: Buffer): Promise<Buffer> => decompress(buffer),
};

let registered = false;

export function registerZstdCodec(): void {
  if (registered) return;
  registered = true;
  (CompressionCodecs as Record<number, () => typeof zstdCodec>)[CompressionTypes.ZSTD] = () => zstdCodec;
}

registerZstdCodec();
