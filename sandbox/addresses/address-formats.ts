// Per-currency address formats: validation (regex plus the real checksum of each family) and minting of
// plausible deposit addresses. Chains sharing a format are deliberately not distinguished (as documented):
// any EIP-55-valid address passes for every EVM currency.
import { randomBytes } from 'node:crypto';
import { base58CheckDecode, base58CheckEncode } from './base58.ts';
import { decodeSegwitAddress, encodeSegwitAddress } from './bech32.ts';
import { keccak256Hex } from './keccak.ts';

export const addressFormatNames = ['evm', 'bitcoin', 'litecoin', 'dogecoin', 'tron', 'iban'] as const;
export type AddressFormatName = (typeof addressFormatNames)[number];
/** A named family, or a bare regular expression for currencies without a checksum family. */
export type AddressFormat = AddressFormatName | { pattern: string };

/** EIP-55 mixed-case checksum of a 20-byte hex address (with or without 0x). */
export function toChecksumAddress(address: string): string {
  const hex = address.replace(/^0x/i, '').toLowerCase();
  const hash = keccak256Hex(hex);
  let out = '0x';
  for (let i = 0; i < hex.length; i++) {
    const char = hex[i] ?? '';
    out += /[a-f]/.test(char) && parseInt(hash[i] ?? '0', 16) >= 8 ? char.toUpperCase() : char;
  }
  return out;
}

/** All-lowercase and all-uppercase addresses carry no checksum and pass; mixed case must match EIP-55. */
export function isValidEvmAddress(address: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false;
  const body = address.slice(2);
  if (body === body.toLowerCase() || body === body.toUpperCase()) return true;
  return toChecksumAddress(address) === address;
}

function isBase58Address(address: string, versions: readonly number[]): boolean {
  const payload = base58CheckDecode(address);
  return payload !== undefined && payload.length === 21 && versions.includes(payload[0] ?? -1);
}

/** ISO 13616 IBAN: country, two check digits, BBAN; valid when the mod-97 remainder is 1. */
export function isValidIban(value: string): boolean {
  const iban = value.replace(/ /g, '');
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(iban)) return false;
  return ibanRemainder(iban.slice(4) + iban.slice(0, 4)) === 1;
}

function ibanRemainder(rearranged: string): number {
  let remainder = 0;
  for (const char of rearranged) {
    const digits = /[A-Z]/.test(char) ? String(char.charCodeAt(0) - 55) : char;
    for (const digit of digits) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder;
}

export function isValidAddress(format: AddressFormat, address: string): boolean {
  if (typeof format === 'object') return new RegExp(format.pattern).test(address);
  switch (format) {
    case 'evm':
      return isValidEvmAddress(address);
    case 'bitcoin':
      return isBase58Address(address, [0x00, 0x05]) || decodeSegwitAddress('bc', address) !== undefined;
    case 'litecoin':
      return (
        isBase58Address(address, [0x30, 0x32, 0x05]) || decodeSegwitAddress('ltc', address) !== undefined
      );
    case 'dogecoin':
      return isBase58Address(address, [0x1e, 0x16]);
    case 'tron':
      return isBase58Address(address, [0x41]);
    case 'iban':
      return isValidIban(address);
  }
}

function mintIban(): string {
  const bban = `${randomBytes(4).readUInt32BE(0).toString().padStart(8, '0').slice(0, 8)}${randomBytes(5)
    .readUIntBE(0, 5)
    .toString()
    .padStart(10, '0')
    .slice(0, 10)}`;
  const check = 98 - ibanRemainder(`${bban}DE00`);
  return `DE${String(check).padStart(2, '0')}${bban}`;
}

/** Base58 alphabet (no 0, O, I, l) and the bech32 data charset (no 1, b, i, o), for the coarse patterns below. */
const B58 = '[1-9A-HJ-NP-Za-km-z]';
const BECH32 = '[02-9ac-hj-np-z]';

/**
 * A regular expression of the format's shape (no checksum), as the network record publishes it: a client that
 * knows no better can at least check the shape. Checksums are the client's own job (EIP-55, base58check, bech32).
 */
export function addressPatternOf(format: AddressFormat): string {
  if (typeof format === 'object') return format.pattern;
  switch (format) {
    case 'evm':
      return '^0x[0-9a-fA-F]{40}$';
    case 'bitcoin':
      return `^(bc1${BECH32}{11,87}|[13]${B58}{25,34})$`;
    case 'litecoin':
      return `^(ltc1${BECH32}{11,87}|[LM3]${B58}{25,34})$`;
    case 'dogecoin':
      return `^[DA9]${B58}{25,34}$`;
    case 'tron':
      return `^T${B58}{33}$`;
    case 'iban':
      return '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$';
  }
}

/** How an exchange that normalises addresses rewrites them: lower or upper case (a 0x prefix stays), or EIP-55. */
export const addressCases = ['lower', 'upper', 'checksum'] as const;
export type AddressCase = (typeof addressCases)[number];

/** The address as a normalising exchange would store it; `checksum` leaves non-EVM addresses as they are. */
export function normaliseAddressCase(address: string, addressCase: AddressCase): string {
  const evm = /^0x[0-9a-fA-F]{40}$/.test(address);
  switch (addressCase) {
    case 'lower':
      return address.toLowerCase();
    case 'upper':
      return evm ? `0x${address.slice(2).toUpperCase()}` : address.toUpperCase();
    case 'checksum':
      return evm ? toChecksumAddress(address) : address;
  }
}

/** A fresh address of the format (random key material; never funded, the sandbox only displays it). */
export function mintAddress(format: AddressFormat): string {
  if (typeof format === 'object') return `sandbox-${randomBytes(8).toString('hex')}`;
  const hash = randomBytes(20);
  switch (format) {
    case 'evm':
      return toChecksumAddress(hash.toString('hex'));
    case 'bitcoin':
      return encodeSegwitAddress('bc', 0, hash);
    case 'litecoin':
      return encodeSegwitAddress('ltc', 0, hash);
    case 'dogecoin':
      return base58CheckEncode(Uint8Array.from([0x1e, ...hash]));
    case 'tron':
      return base58CheckEncode(Uint8Array.from([0x41, ...hash]));
    case 'iban':
      return mintIban();
  }
}

/** A transaction hash in the style of the format's chain (0x-prefixed for EVM, bare hex elsewhere). */
export function mintTransactionHash(format: AddressFormat): string {
  const hex = randomBytes(32).toString('hex');
  return format === 'evm' ? `0x${hex}` : hex;
}
