// Base58 and Base58Check (Bitcoin alphabet): decoding validates legacy Bitcoin-family and Tron addresses,
// encoding mints plausible deposit addresses. Check = first 4 bytes of double SHA-256 over the payload.
import { createHash } from 'node:crypto';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58Decode(text: string): Uint8Array | undefined {
  if (text.length === 0) return undefined;
  let value = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return undefined;
    value = value * 58n + BigInt(digit);
  }
  const body: number[] = [];
  while (value > 0n) {
    body.unshift(Number(value & 0xffn));
    value >>= 8n;
  }
  let leadingZeros = 0;
  while (text[leadingZeros] === '1') leadingZeros++;
  return Uint8Array.from([...new Array<number>(leadingZeros).fill(0), ...body]);
}

export function base58Encode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 58n)] + out;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    out = '1' + out;
  }
  return out;
}

function checksum(payload: Uint8Array): Uint8Array {
  const once = createHash('sha256').update(payload).digest();
  return createHash('sha256').update(once).digest().subarray(0, 4);
}

/** The payload (version byte(s) + data) when the checksum holds, else undefined. */
export function base58CheckDecode(text: string): Uint8Array | undefined {
  const bytes = base58Decode(text);
  if (!bytes || bytes.length < 5) return undefined;
  const payload = bytes.subarray(0, bytes.length - 4);
  const expected = checksum(payload);
  const actual = bytes.subarray(bytes.length - 4);
  return expected.every((byte, i) => byte === actual[i]) ? payload : undefined;
}

export function base58CheckEncode(payload: Uint8Array): string {
  return base58Encode(Uint8Array.from([...payload, ...checksum(payload)]));
}
