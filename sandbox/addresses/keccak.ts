// Keccak-256 (the pre-standard padding Ethereum uses, not NIST SHA3-256), needed for EIP-55 address checksums.
// Node's crypto offers only 'sha3-256', whose padding differs, so the permutation keccak-f[1600] lives here.
// Lanes are 64-bit BigInts; inputs are short (addresses), so clarity beats speed.

const MASK = (1n << 64n) - 1n;

const ROUND_CONSTANTS: readonly bigint[] = [
  0x0000000000000001n,
  0x0000000000008082n,
  0x800000000000808an,
  0x8000000080008000n,
  0x000000000000808bn,
  0x0000000080000001n,
  0x8000000080008081n,
  0x8000000000008009n,
  0x000000000000008an,
  0x0000000000000088n,
  0x0000000080008009n,
  0x000000008000000an,
  0x000000008000808bn,
  0x800000000000008bn,
  0x8000000000008089n,
  0x8000000000008003n,
  0x8000000000008002n,
  0x8000000000000080n,
  0x000000000000800an,
  0x800000008000000an,
  0x8000000080008081n,
  0x8000000000008080n,
  0x0000000080000001n,
  0x8000000080008008n,
];

/** Rotation offsets r[x][y]. */
const ROTATIONS: readonly (readonly number[])[] = [
  [0, 36, 3, 41, 18],
  [1, 44, 10, 45, 2],
  [62, 6, 43, 15, 61],
  [28, 55, 25, 21, 56],
  [27, 20, 39, 8, 14],
];

function rotateLeft(value: bigint, shift: number): bigint {
  if (shift === 0) return value;
  const n = BigInt(shift);
  return ((value << n) | (value >> (64n - n))) & MASK;
}

function lane(state: bigint[], x: number, y: number): bigint {
  return state[(x % 5) + 5 * (y % 5)] ?? 0n;
}

function keccakF1600(state: bigint[]): void {
  for (const roundConstant of ROUND_CONSTANTS) {
    const columns: bigint[] = [];
    for (let x = 0; x < 5; x++) {
      columns.push(
        lane(state, x, 0) ^ lane(state, x, 1) ^ lane(state, x, 2) ^ lane(state, x, 3) ^ lane(state, x, 4),
      );
    }
    for (let x = 0; x < 5; x++) {
      const d = (columns[(x + 4) % 5] ?? 0n) ^ rotateLeft(columns[(x + 1) % 5] ?? 0n, 1);
      for (let y = 0; y < 5; y++) state[x + 5 * y] = lane(state, x, y) ^ d;
    }
    const moved: bigint[] = new Array<bigint>(25).fill(0n);
    for (let x = 0; x < 5; x++) {
      for (let y = 0; y < 5; y++) {
        moved[y + 5 * ((2 * x + 3 * y) % 5)] = rotateLeft(lane(state, x, y), ROTATIONS[x]?.[y] ?? 0);
      }
    }
    for (let x = 0; x < 5; x++) {
      for (let y = 0; y < 5; y++) {
        state[x + 5 * y] = lane(moved, x, y) ^ (~lane(moved, x + 1, y) & MASK & lane(moved, x + 2, y));
      }
    }
    state[0] = lane(state, 0, 0) ^ roundConstant;
  }
}

/** Keccak-256 digest of the bytes (Ethereum's hash). */
export function keccak256(input: Uint8Array | string): Uint8Array {
  const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : input;
  const rateBytes = 136;
  const paddedLength = (Math.floor(bytes.length / rateBytes) + 1) * rateBytes;
  const padded = new Uint8Array(paddedLength);
  padded.set(bytes);
  padded[bytes.length] = (padded[bytes.length] ?? 0) ^ 0x01;
  padded[paddedLength - 1] = (padded[paddedLength - 1] ?? 0) ^ 0x80;

  const state: bigint[] = new Array<bigint>(25).fill(0n);
  for (let offset = 0; offset < paddedLength; offset += rateBytes) {
    for (let i = 0; i < rateBytes / 8; i++) {
      let word = 0n;
      for (let b = 7; b >= 0; b--) word = (word << 8n) | BigInt(padded[offset + i * 8 + b] ?? 0);
      state[i] = (state[i] ?? 0n) ^ word;
    }
    keccakF1600(state);
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 4; i++) {
    let word = state[i] ?? 0n;
    for (let b = 0; b < 8; b++) {
      out[i * 8 + b] = Number(word & 0xffn);
      word >>= 8n;
    }
  }
  return out;
}

export function keccak256Hex(input: Uint8Array | string): string {
  return Buffer.from(keccak256(input)).toString('hex');
}
