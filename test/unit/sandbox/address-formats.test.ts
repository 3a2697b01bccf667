import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  isValidAddress,
  isValidIban,
  mintAddress,
  toChecksumAddress,
} from '../../../sandbox/addresses/address-formats.ts';
import { base58CheckDecode } from '../../../sandbox/addresses/base58.ts';
import { decodeSegwitAddress } from '../../../sandbox/addresses/bech32.ts';
import { keccak256Hex } from '../../../sandbox/addresses/keccak.ts';

describe('keccak-256', () => {
  it('hashes the empty input to the known Ethereum vector', () => {
    expect(keccak256Hex('')).toBe('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  });
  it('differs from NIST SHA3-256 (different padding)', () => {
    expect(keccak256Hex('abc')).toBe('4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
    expect(keccak256Hex('abc')).not.toBe(createHash('sha3-256').update('abc').digest('hex'));
  });
  it('absorbs inputs longer than one 136-byte block', () => {
    expect(keccak256Hex('a'.repeat(200))).toHaveLength(64);
    expect(keccak256Hex('a'.repeat(200))).not.toBe(keccak256Hex('a'.repeat(199)));
  });
});

describe('EIP-55 checksums', () => {
  const examples = [
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
  ];
  it.each(examples)('reproduces the EIP example %s', (address) => {
    expect(toChecksumAddress(address.toLowerCase())).toBe(address);
    expect(isValidAddress('evm', address)).toBe(true);
  });
  it('refuses a mixed-case address whose checksum does not match', () => {
    expect(isValidAddress('evm', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD')).toBe(false);
  });
  it('accepts unchecksummed all-lowercase addresses and refuses wrong lengths', () => {
    expect(isValidAddress('evm', examples[0]!.toLowerCase())).toBe(true);
    expect(isValidAddress('evm', '0x1234')).toBe(false);
  });
});

describe('base58check and bech32', () => {
  it('validates legacy Bitcoin addresses by checksum', () => {
    expect(isValidAddress('bitcoin', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')).toBe(true);
    expect(isValidAddress('bitcoin', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy')).toBe(true);
    expect(isValidAddress('bitcoin', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3')).toBe(false);
    expect(base58CheckDecode('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')?.[0]).toBe(0);
  });
  it('validates BIP-173 and BIP-350 segwit vectors', () => {
    expect(decodeSegwitAddress('bc', 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4')).toBeDefined();
    expect(
      decodeSegwitAddress('bc', 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0')?.version,
    ).toBe(1);
    expect(decodeSegwitAddress('bc', 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5')).toBeUndefined();
    expect(decodeSegwitAddress('bc', 'bc1QW508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4')).toBeUndefined();
  });
  it('validates Tron addresses (base58check, version 0x41)', () => {
    expect(isValidAddress('tron', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t')).toBe(true);
    expect(isValidAddress('tron', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u')).toBe(false);
  });
  it('validates IBANs by mod-97', () => {
    expect(isValidIban('DE89370400440532013000')).toBe(true);
    expect(isValidIban('GB82WEST12345698765432')).toBe(true);
    expect(isValidIban('DE89370400440532013001')).toBe(false);
  });
  it.each(['evm', 'bitcoin', 'litecoin', 'dogecoin', 'tron', 'iban'] as const)(
    'mints %s addresses its own validator accepts',
    (format) => {
      expect(isValidAddress(format, mintAddress(format))).toBe(true);
    },
  );
});
