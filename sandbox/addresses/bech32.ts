// Bech32 (BIP-173) and Bech32m (BIP-350) segwit addresses: v0 programs use Bech32, v1+ use Bech32m.
// Decoding validates checksum, case, human-readable part, witness version and program length.

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATORS = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
const BECH32_CONST = 1;
const BECH32M_CONST = 0x2bc830a3;

function polymod(values: readonly number[]): number {
  let chk = 1;
  for (const value of values) {
    const top = chk >>> 25;
    chk = (((chk & 0x1ffffff) << 5) ^ value) >>> 0;
    GENERATORS.forEach((generator, i) => {
      if ((top >>> i) & 1) chk = (chk ^ generator) >>> 0;
    });
  }
  return chk;
}

function expandHrp(hrp: string): number[] {
  const chars = [...hrp].map((c) => c.charCodeAt(0));
  return [...chars.map((c) => c >> 5), 0, ...chars.map((c) => c & 31)];
}

function convertBits(data: readonly number[], from: number, to: number, pad: boolean): number[] | undefined {
  let acc = 0;
  let bits = 0;
  const out: number[] = [];
  const maxValue = (1 << to) - 1;
  for (const value of data) {
    if (value < 0 || value >> from !== 0) return undefined;
    acc = (acc << from) | value;
    bits += from;
    while (bits >= to) {
      bits -= to;
      out.push((acc >> bits) & maxValue);
    }
  }
  if (pad) {
    if (bits > 0) out.push((acc << (to - bits)) & maxValue);
  } else if (bits >= from || ((acc << (to - bits)) & maxValue) !== 0) {
    return undefined;
  }
  return out;
}

interface SegwitAddress {
  version: number;
  program: Uint8Array;
}

/** Decodes a segwit address for the given human-readable part (e.g. "bc", "ltc"); undefined when invalid. */
export function decodeSegwitAddress(hrp: string, address: string): SegwitAddress | undefined {
  if (address.length > 90) return undefined;
  if (address !== address.toLowerCase() && address !== address.toUpperCase()) return undefined;
  const lower = address.toLowerCase();
  const separator = lower.lastIndexOf('1');
  if (separator < 1 || separator + 7 > lower.length) return undefined;
  if (lower.slice(0, separator) !== hrp) return undefined;
  const data: number[] = [];
  for (const char of lower.slice(separator + 1)) {
    const value = CHARSET.indexOf(char);
    if (value < 0) return undefined;
    data.push(value);
  }
  const check = polymod([...expandHrp(hrp), ...data]);
  const encoding = check === BECH32_CONST ? 'bech32' : check === BECH32M_CONST ? 'bech32m' : undefined;
  if (!encoding) return undefined;
  const version = data[0];
  if (version === undefined || version > 16) return undefined;
  const program = convertBits(data.slice(1, -6), 5, 8, false);
  if (!program || program.length < 2 || program.length > 40) return undefined;
  if (version === 0 && (encoding !== 'bech32' || (program.length !== 20 && program.length !== 32)))
    return undefined;
  if (version !== 0 && encoding !== 'bech32m') return undefined;
  return { version, program: Uint8Array.from(program) };
}

export function encodeSegwitAddress(hrp: string, version: number, program: Uint8Array): string {
  const data = [version, ...(convertBits([...program], 8, 5, true) ?? [])];
  const constant = version === 0 ? BECH32_CONST : BECH32M_CONST;
  const mod = polymod([...expandHrp(hrp), ...data, 0, 0, 0, 0, 0, 0]) ^ constant;
  const checksum = [0, 1, 2, 3, 4, 5].map((i) => (mod >>> (5 * (5 - i))) & 31);
  return `${hrp}1${[...data, ...checksum].map((v) => CHARSET[v]).join('')}`;
}
