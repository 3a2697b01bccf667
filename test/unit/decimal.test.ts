// The one decimal helper: equal amounts in different spellings are one amount, decided on the digits (never through
// a JavaScript number); anything but a plain non-negative decimal is no amount at all.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fractionDigitsOf,
  normalizeDecimal,
  sameDecimal,
  storedAs,
  withinPartsPerMillion,
} from '../../src/decimal.ts';
import { decimalString } from '../../src/exchange/schemas.ts';

/** An amount as units and a scale (units / 10^scale), written with exactly `scale` fractional digits. */
const amount = fc.record({ units: fc.bigInt({ min: 0n, max: 10n ** 30n }), scale: fc.nat(18) });
type Amount = { units: bigint; scale: number };

function written({ units, scale }: Amount): string {
  const digits = units.toString().padStart(scale + 1, '0');
  return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

function equalAmounts(a: Amount, b: Amount): boolean {
  return a.units * 10n ** BigInt(b.scale) === b.units * 10n ** BigInt(a.scale);
}

describe('normalizeDecimal', () => {
  it('maps equal decimal strings to one spelling', () => {
    expect(normalizeDecimal('1.50')).toBe('1.5');
    expect(normalizeDecimal('001.500')).toBe('1.5');
    expect(normalizeDecimal('+2.')).toBe('2');
    expect(normalizeDecimal('.5')).toBe('0.5');
    expect(normalizeDecimal('0.000')).toBe('0');
    expect(normalizeDecimal(' 10 ')).toBe('10');
    expect(normalizeDecimal('0.00000001')).toBe('0.00000001');
  });

  it('is no amount for signs, exponents, separators and strings without a digit', () => {
    for (const value of [
      '',
      ' ',
      '.',
      '+',
      '-1',
      '-0',
      '1e-8',
      '1E3',
      '1,5',
      '1.2.3',
      '0x10',
      'NaN',
      'Infinity',
    ])
      expect(normalizeDecimal(value), value).toBeUndefined();
  });

  it('writes every amount in the wire form, and its spelling is a fixed point (property)', () => {
    fc.assert(
      fc.property(amount, (a) => {
        const normalized = normalizeDecimal(written(a));
        expect(normalized).toBeDefined();
        expect(decimalString.safeParse(normalized).success).toBe(true);
        expect(normalizeDecimal(normalized ?? '')).toBe(normalized);
      }),
    );
  });
});

describe('sameDecimal', () => {
  it('treats trailing and leading zeros as the same amount', () => {
    expect(sameDecimal('1.50', '1.5')).toBe(true);
    expect(sameDecimal('0.0', '0')).toBe(true);
    expect(sameDecimal('100', '100.00000000')).toBe(true);
    expect(sameDecimal('0.10000000', '.1')).toBe(true);
    expect(sameDecimal('10', '1')).toBe(false);
    expect(sameDecimal('1.05', '1.5')).toBe(false);
  });

  it('never equates an exponent form or other non-amount with an amount; such a string equals only itself', () => {
    expect(sameDecimal('1e3', '1000')).toBe(false);
    expect(sameDecimal('1E-8', '0.00000001')).toBe(false);
    expect(sameDecimal('-1.50', '-1.5')).toBe(false);
    expect(sameDecimal('', '0')).toBe(false);
    expect(sameDecimal('n/a', 'n/a')).toBe(true);
  });

  it('says two written amounts are the same exactly when their values are equal (property)', () => {
    fc.assert(
      fc.property(amount, amount, (a, b) => {
        expect(sameDecimal(written(a), written(b))).toBe(equalAmounts(a, b));
      }),
    );
  });

  it('is not changed by zero padding or a leading "+" (property)', () => {
    fc.assert(
      fc.property(amount, fc.nat(5), fc.nat(5), fc.boolean(), (a, leading, trailing, plus) => {
        const plain = written(a);
        const padded = `${plus ? '+' : ''}${'0'.repeat(leading)}${plain}${plain.includes('.') ? '' : '.'}${'0'.repeat(trailing)}`;
        expect(sameDecimal(padded, plain)).toBe(true);
      }),
    );
  });
});

describe('storedAs: an amount as a store of fewer fractional digits wrote it', () => {
  it('takes an 18-digit amount cut or rounded to 8 digits as the same amount, and nothing further off', () => {
    const ours = '0.123456785000000001';
    expect(storedAs(ours, '0.12345678', 8)).toBe(true); // truncated
    expect(storedAs(ours, '0.12345679', 8)).toBe(true); // rounded half-up
    expect(storedAs(ours, '0.12345677', 8)).toBe(false);
    expect(storedAs(ours, '0.12345680', 8)).toBe(false);
    expect(storedAs('1.000000001', '1', 8)).toBe(true);
    expect(storedAs('1.000000001', '1.00000000', 8)).toBe(true);
  });

  it('allows no rounding to an amount that already fits the precision', () => {
    expect(storedAs('1.53', '1.5', 8)).toBe(false);
    expect(storedAs('1.5', '1.50000000', 8)).toBe(true);
    expect(storedAs('0.12345678', '0.12345679', 8)).toBe(false);
  });

  it('is never true for something that is not an amount', () => {
    expect(storedAs('1e-8', '0.00000001', 8)).toBe(false);
    expect(storedAs('0.1', '', 8)).toBe(false);
  });

  it('holds for every amount cut to the precision, and its neighbour above (property)', () => {
    fc.assert(
      fc.property(amount, fc.integer({ min: 0, max: 12 }), (a, precision) => {
        const ours = written(a);
        const dropped = Math.max(0, a.scale - precision);
        const cut = { units: a.units / 10n ** BigInt(dropped), scale: a.scale - dropped };
        expect(storedAs(ours, written(cut), precision)).toBe(true);
        if (a.scale > precision)
          expect(storedAs(ours, written({ units: cut.units + 1n, scale: cut.scale }), precision)).toBe(true);
        expect(storedAs(ours, written({ units: cut.units + 2n, scale: cut.scale }), precision)).toBe(false);
      }),
    );
  });
});

describe('fractionDigitsOf and withinPartsPerMillion', () => {
  it('counts the digits as written, and compares a relative distance on the digits', () => {
    expect(fractionDigitsOf('1.50000000')).toBe(8);
    expect(fractionDigitsOf('3')).toBe(0);
    expect(fractionDigitsOf('x')).toBeUndefined();
    expect(withinPartsPerMillion('100', '100.9', 10_000)).toBe(true);
    expect(withinPartsPerMillion('100', '101.0000000001', 10_000)).toBe(false);
    expect(withinPartsPerMillion('0.000000000000000001', '0.000000000000000001', 0)).toBe(true);
  });
});
