// The pure address and chain pairing check: network against the currency's records, address format and checksum
// against the network, for the withdraw address and the refund address.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addressPairingReasons,
  checkAddressPairing,
  type AddressPairingRequest,
} from '../../../src/exchange/address-pairing.ts';
import { buildCatalogSnapshot } from '../../../src/exchange/currency-catalog.ts';
import { toChecksumAddress } from '../../../sandbox/addresses/address-formats.ts';

const EVM = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
/** The same address with the case of one letter flipped: its EIP-55 checksum no longer holds. */
const EVM_BAD_CHECKSUM = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
const BTC_BECH32 = 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4';
const BTC_TAPROOT = 'bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297';
const BTC_LEGACY = '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2';
const TRX = 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL';
const XRP = 'rDsbeomae4FXwgQTJp9Rs64Qg9vDiTCdBv';

/** Records in the shapes the client accepts: USDT on three networks (object and string entries mixed). */
const catalog = buildCatalogSnapshot(
  [
    { code: 'BTC', network: 'BTC', contract_address: '' },
    { code: 'ETH', network: 'ETH' },
    {
      code: 'USDT',
      network: 'ETH',
      contract_address: '0xdAC17F958D2ee523a2206206994597C13D831ec7',
      networks: [
        { name: 'ETH', contract_address: '0xdAC17F958D2ee523a2206206994597C13D831ec7' },
        { network: 'TRX', contract_address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' },
        'BSC',
      ],
    },
    { code: 'LTC', networks: ['LTC'] },
    { code: 'DOGE', network: 'DOGE' },
    { code: 'XRP', network: 'XRP' },
    { code: 'FOO', network: 'FOOCHAIN' },
    { code: 'BAR', network: 'BARCHAIN' },
    { code: 'EUR' },
    { code: 'GHOST', network: 'NOWHERE' },
  ],
  [
    { name: 'BTC', address_format: 'bitcoin' },
    { name: 'ETH', is_evm: true, address_format: 'evm', address_regex: '^0x[0-9a-fA-F]{40}$' },
    { name: 'BSC', is_evm: true },
    { name: 'TRX' },
    { name: 'LTC' },
    { code: 'DOGE' },
    { name: 'XRP', address_format: 'regex', address_regex: '^r[1-9A-HJ-NP-Za-km-z]{24,34}$' },
    { name: 'FOOCHAIN', address_regex: '^foo-[0-9]{4}$' },
    { name: 'BARCHAIN' },
    { name: 'SEPA', address_format: 'iban' },
  ],
  0,
);

function request(extra: Partial<AddressPairingRequest> = {}): AddressPairingRequest {
  return { deposit_currency: 'BTC', withdraw_currency: 'ETH', withdraw_address: EVM, ...extra };
}

function refusal(extra: Partial<AddressPairingRequest>): { reason: string; message: string } {
  const result = checkAddressPairing(request(extra), catalog);
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result)}`);
  return result;
}

describe('checkAddressPairing: the withdraw network', () => {
  it('accepts a checksummed or an all-lowercase EVM address on the stated network the currency is on', () => {
    for (const address of [EVM, EVM.toLowerCase()]) {
      expect(
        checkAddressPairing(request({ withdraw_address: address, withdraw_network: 'ETH' }), catalog),
      ).toEqual({ ok: true, withdrawNetwork: 'ETH', refundNetwork: null, unchecked: [] });
    }
  });

  it('takes the currency network when none is stated and the currency is on only one', () => {
    const result = checkAddressPairing(request(), catalog);
    expect(result).toMatchObject({ ok: true, withdrawNetwork: 'ETH' });
  });

  it('refuses a network the currency is not on, although the address format is valid there', () => {
    // The exchange cannot tell: an EVM address is valid for ETH whichever EVM chain it was meant for.
    const result = refusal({ withdraw_network: 'BSC' });
    expect(result.reason).toBe('withdraw_network_mismatch');
    expect(result.message).toBe('ETH is not on network BSC (withdraw_network); the exchange has it on ETH');
  });

  it('refuses a network the exchange does not list', () => {
    const result = refusal({ withdraw_network: 'Solana' });
    expect(result.reason).toBe('withdraw_network_unknown');
    expect(result.message).toContain('withdraw_network SOLANA is not a network the exchange lists');
  });

  it('requires the network when the currency is on several', () => {
    const result = refusal({ withdraw_currency: 'USDT' });
    expect(result.reason).toBe('withdraw_network_required');
    expect(result.message).toContain('USDT is on several networks (ETH, TRX, BSC)');
  });

  it('reads TRON as the TRX network the exchange lists (and would read TRX as TRON), as EdgeApp clients name it', () => {
    for (const name of ['TRON', 'tron'])
      expect(
        checkAddressPairing(
          request({ withdraw_currency: 'USDT', withdraw_network: name, withdraw_address: TRX }),
          catalog,
        ),
      ).toMatchObject({ ok: true, withdrawNetwork: 'TRX' });
    // An alias never makes another chain's address pass: a Tron address checked as Tron, an EVM one refused there.
    expect(refusal({ withdraw_currency: 'USDT', withdraw_network: 'TRON' }).reason).toBe(
      'withdraw_address_invalid',
    );
  });

  it('checks the address against the stated network of a multi-network currency', () => {
    expect(
      checkAddressPairing(
        request({ withdraw_currency: 'usdt', withdraw_network: 'trx', withdraw_address: TRX }),
        catalog,
      ),
    ).toMatchObject({
      ok: true,
      withdrawNetwork: 'TRX',
    });
    expect(
      checkAddressPairing(request({ withdraw_currency: 'USDT', withdraw_network: 'BSC' }), catalog),
    ).toMatchObject({
      ok: true,
      withdrawNetwork: 'BSC',
    });
    const evmOnTron = refusal({ withdraw_currency: 'USDT', withdraw_network: 'TRX' });
    expect(evmOnTron.reason).toBe('withdraw_address_invalid');
    expect(evmOnTron.message).toContain('is not valid on network TRX: expected a Tron address');
    expect(
      refusal({ withdraw_currency: 'USDT', withdraw_network: 'BSC', withdraw_address: TRX }).reason,
    ).toBe('withdraw_address_invalid');
  });

  it('refuses an unknown currency', () => {
    const result = refusal({ withdraw_currency: 'NOPE' });
    expect(result).toEqual({
      ok: false,
      reason: 'withdraw_currency_unknown',
      message: "withdraw_currency NOPE is not in the exchange's currency list",
    });
  });

  it('refuses a stated network when the currency record names none, and passes unchecked when none is stated', () => {
    expect(refusal({ withdraw_currency: 'EUR', withdraw_network: 'SEPA' }).reason).toBe(
      'withdraw_network_mismatch',
    );
    const result = checkAddressPairing(
      request({ withdraw_currency: 'EUR', withdraw_address: 'DE89370400440532013000' }),
      catalog,
    );
    expect(result).toMatchObject({ ok: true, withdrawNetwork: null });
    expect(result.ok && result.unchecked).toEqual([
      'withdraw: EUR lists no network; the withdraw address format was not checked',
    ]);
  });
});

describe('checkAddressPairing: address formats and checksums', () => {
  it('refuses a mixed-case EVM address whose EIP-55 checksum is wrong', () => {
    const result = refusal({ withdraw_address: EVM_BAD_CHECKSUM, withdraw_network: 'ETH' });
    expect(result.reason).toBe('withdraw_address_invalid');
    expect(result.message).toBe(
      `withdraw_address ${EVM_BAD_CHECKSUM} is not valid on network ETH: expected an EVM address: 0x and 40 hex digits, mixed case only with a valid EIP-55 checksum`,
    );
  });

  it('accepts every EIP-55 address and refuses it with the case of one letter flipped (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.nat(), (bytes, pick) => {
        const address = toChecksumAddress(Buffer.from(bytes).toString('hex'));
        const ok = checkAddressPairing(request({ withdraw_address: address }), catalog);
        expect(ok.ok).toBe(true);
        const letters = [...address.slice(2)].flatMap((c, i) => (/[a-fA-F]/.test(c) ? [i + 2] : []));
        const body = address.slice(2);
        // an address without letters, or all of one case after the flip, carries no checksum to break
        const at = letters[pick % Math.max(letters.length, 1)];
        if (at === undefined) return;
        const c = address[at]!;
        const flipped =
          address.slice(0, at) +
          (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) +
          address.slice(at + 1);
        const flippedBody = flipped.slice(2);
        if (
          flippedBody === flippedBody.toLowerCase() ||
          flippedBody === flippedBody.toUpperCase() ||
          body === flippedBody
        )
          return;
        expect(checkAddressPairing(request({ withdraw_address: flipped }), catalog)).toMatchObject({
          ok: false,
          reason: 'withdraw_address_invalid',
        });
      }),
      { numRuns: 200 },
    );
  });

  it('accepts Bitcoin bech32, bech32m and base58check addresses; refuses testnet and bad checksums', () => {
    for (const address of [BTC_BECH32, BTC_TAPROOT, BTC_LEGACY, '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy']) {
      expect(
        checkAddressPairing(request({ withdraw_currency: 'BTC', withdraw_address: address }), catalog).ok,
        address,
      ).toBe(true);
    }
    for (const address of [
      'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', // testnet
      'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5', // bech32 checksum
      '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3', // base58check checksum
      EVM,
    ]) {
      expect(refusal({ withdraw_currency: 'BTC', withdraw_address: address }).reason, address).toBe(
        'withdraw_address_invalid',
      );
    }
  });

  it('knows Litecoin, Dogecoin and XRP by network name, and applies a published address_regex too', () => {
    expect(
      checkAddressPairing(
        request({ withdraw_currency: 'LTC', withdraw_address: 'LVg2kJoFNg45Nbpy53h7Fe1wKyeXVRhMH9' }),
        catalog,
      ).ok,
    ).toBe(true);
    expect(refusal({ withdraw_currency: 'LTC', withdraw_address: BTC_LEGACY }).reason).toBe(
      'withdraw_address_invalid',
    );
    expect(
      checkAddressPairing(
        request({ withdraw_currency: 'DOGE', withdraw_address: 'DBXu2kgc3xtvCUWFcxFE3r9hEYgmuaaCyD' }),
        catalog,
      ).ok,
    ).toBe(true);
    expect(
      checkAddressPairing(request({ withdraw_currency: 'XRP', withdraw_address: XRP }), catalog).ok,
    ).toBe(true);
    // right shape for the regex, wrong checksum for the XRP validator
    expect(
      refusal({ withdraw_currency: 'XRP', withdraw_address: 'rDsbeomae4FXwgQTJp9Rs64Qg9vDiTCdBw' }).reason,
    ).toBe('withdraw_address_invalid');
  });

  it('checks only the pattern where no validator is known, and notes what it could not check', () => {
    expect(
      checkAddressPairing(request({ withdraw_currency: 'FOO', withdraw_address: 'foo-1234' }), catalog),
    ).toEqual({
      ok: true,
      withdrawNetwork: 'FOOCHAIN',
      refundNetwork: null,
      unchecked: [],
    });
    const bad = refusal({ withdraw_currency: 'FOO', withdraw_address: 'foo-12' });
    expect(bad).toMatchObject({ reason: 'withdraw_address_invalid' });
    expect(bad.message).toBe(
      'withdraw_address foo-12 does not match the address pattern of network FOOCHAIN',
    );
    expect(
      checkAddressPairing(request({ withdraw_currency: 'BAR', withdraw_address: 'anything' }), catalog),
    ).toEqual({
      ok: true,
      withdrawNetwork: 'BARCHAIN',
      refundNetwork: null,
      unchecked: ['withdraw: no address format is known for network BARCHAIN'],
    });
    expect(
      checkAddressPairing(request({ withdraw_currency: 'GHOST', withdraw_address: 'x' }), catalog),
    ).toMatchObject({
      ok: true,
      unchecked: ['withdraw: network NOWHERE has no network record; its address format was not checked'],
    });
  });

  it('knows no family by a name that is only a property of every object ("constructor", "__proto__")', () => {
    const odd = buildCatalogSnapshot(
      [{ code: 'ODD', networks: ['CONSTRUCTOR', '__PROTO__'] }],
      [{ name: 'CONSTRUCTOR' }, { name: '__PROTO__', address_format: 'toString' }],
      0,
    );
    for (const network of ['CONSTRUCTOR', '__PROTO__']) {
      const pairing = { withdraw_currency: 'ODD', withdraw_network: network, withdraw_address: 'addr-1' };
      expect(checkAddressPairing(request(pairing), odd)).toEqual({
        ok: true,
        withdrawNetwork: network,
        refundNetwork: null,
        unchecked: [`withdraw: no address format is known for network ${network}`],
      });
    }
  });
});

describe('checkAddressPairing: the refund address', () => {
  it('checks the refund address against the deposit currency (a refund returns what was sent)', () => {
    expect(
      checkAddressPairing(request({ refund_address: BTC_BECH32, refund_network: 'BTC' }), catalog),
    ).toEqual({ ok: true, withdrawNetwork: 'ETH', refundNetwork: 'BTC', unchecked: [] });
    const wrongFamily = refusal({ refund_address: EVM });
    expect(wrongFamily.reason).toBe('refund_address_invalid');
    expect(wrongFamily.message).toContain(`refund_address ${EVM} is not valid on network BTC`);
    expect(refusal({ refund_address: BTC_BECH32, refund_network: 'ETH' }).reason).toBe(
      'refund_network_mismatch',
    );
    expect(refusal({ deposit_currency: 'USDT', refund_address: EVM }).reason).toBe('refund_network_required');
    expect(refusal({ deposit_currency: 'NOPE', refund_address: EVM }).message).toBe(
      "deposit_currency NOPE is not in the exchange's currency list",
    );
  });

  it('reports the withdraw side first when both are wrong', () => {
    expect(refusal({ withdraw_network: 'BSC', refund_address: EVM }).reason).toBe(
      'withdraw_network_mismatch',
    );
  });

  it('names every reason it can return', () => {
    expect(addressPairingReasons).toEqual([
      'withdraw_currency_unknown',
      'withdraw_network_unknown',
      'withdraw_network_mismatch',
      'withdraw_network_required',
      'withdraw_address_invalid',
      'refund_currency_unknown',
      'refund_network_unknown',
      'refund_network_mismatch',
      'refund_network_required',
      'refund_address_invalid',
    ]);
  });
});
