// Amounts are decimal strings end to end (the exchange writes them so, and a JavaScript number would round them).
// Whether two strings spell one amount ("1.50" and "1.5") is decided here, once, on the digits, never through a
// number; so is whether one amount is another as a store keeping fewer fractional digits wrote it (storedAs), and
// how far apart two are (withinPartsPerMillion). Only plain non-negative decimals are amounts: the exchange's document
// has no signs or exponents in them.

/** An optional "+", digits, an optional "." and digits; at least one digit in all (checked below). */
const plainDecimal = /^\+?(\d*)(?:\.(\d*))?$/;

/**
 * The one spelling of a plain non-negative decimal: "1.50", "01.5", "+1.5" and "1.5" are "1.5"; "0.0" is "0";
 * surrounding whitespace is ignored. Undefined for anything else ("", ".", "-1", "1e-8", "1,5").
 */
export function normalizeDecimal(value: string): string | undefined {
  const match = plainDecimal.exec(value.trim());
  const whole = match?.[1] ?? '';
  const fraction = match?.[2] ?? '';
  if (!match || whole.length + fraction.length === 0) return undefined;
  const integer = whole.replace(/^0+/, '') || '0';
  const decimals = fraction.replace(/0+$/, '');
  return decimals ? `${integer}.${decimals}` : integer;
}

/** True when both strings spell the same amount; a string that is not a plain decimal equals only itself. */
export function sameDecimal(a: string, b: string): boolean {
  if (a === b) return true;
  const normalized = normalizeDecimal(a);
  return normalized !== undefined && normalized === normalizeDecimal(b);
}

/** A plain decimal as whole units of its own last digit: "1.50" is 150 units at scale 2. */
interface ScaledDecimal {
  readonly units: bigint;
  readonly scale: number;
}

function scaledOf(value: string): ScaledDecimal | undefined {
  const match = plainDecimal.exec(value.trim());
  const whole = match?.[1] ?? '';
  const fraction = match?.[2] ?? '';
  if (!match || whole.length + fraction.length === 0) return undefined;
  return { units: BigInt(`${whole}${fraction}` || '0'), scale: fraction.length };
}

/** Both amounts as units of one scale (the finer of the two). */
function atCommonScale(a: ScaledDecimal, b: ScaledDecimal): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [a.units * 10n ** BigInt(scale - a.scale), b.units * 10n ** BigInt(scale - b.scale), scale];
}

/** How many fractional digits a plain decimal is written with ("1.50000000": 8, trailing zeros count); else undefined. */
export function fractionDigitsOf(value: string): number | undefined {
  return scaledOf(value)?.scale;
}

/**
 * True when `stored` is `ours` as a store keeping `precision` fractional digits could have written it: the same
 * amount, or - when ours has more digits than that - ours cut to `precision` digits or that plus one unit in its
 * last place (truncation gives the first; rounding half-up, half-even or up gives one of the two). Never through a
 * number. False for anything that is not a plain decimal.
 */
export function storedAs(ours: string, stored: string, precision: number): boolean {
  const a = scaledOf(ours);
  const b = scaledOf(stored);
  if (a === undefined || b === undefined) return false;
  const [left, right] = atCommonScale(a, b);
  if (left === right) return true;
  if (a.scale <= precision) return false;
  const cut = a.units / 10n ** BigInt(a.scale - precision);
  const reference = { units: b.units, scale: b.scale };
  for (const candidate of [cut, cut + 1n]) {
    const [c, s] = atCommonScale({ units: candidate, scale: precision }, reference);
    if (c === s) return true;
  }
  return false;
}

/** True when `other` differs from `ours` by at most `ours` × ppm / 1 000 000 (on the digits); false for non-amounts. */
export function withinPartsPerMillion(ours: string, other: string, ppm: number): boolean {
  const a = scaledOf(ours);
  const b = scaledOf(other);
  if (a === undefined || b === undefined) return false;
  const [left, right] = atCommonScale(a, b);
  const difference = left > right ? left - right : right - left;
  return difference * 1_000_000n <= left * BigInt(ppm);
}
