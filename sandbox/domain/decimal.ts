// Fixed-point decimals for amounts and rates: BigInt scaled by 10^18, so money never passes through floats.
// Parsing accepts what a DRF DecimalField accepts from JSON (digit strings with an optional sign and fraction,
// or plain JSON numbers); formatting truncates toward zero to the requested fractional digits.

export const SCALE = 10n ** 18n;
const PATTERN = /^([+-]?)(\d+)(?:\.(\d*))?$|^([+-]?)\.(\d+)$/;

export function parseDecimal(input: unknown): bigint | undefined {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return undefined;
    // String() gives the shortest round-trip form (0.1 -> "0.1"); only exponent forms need expanding.
    const shortest = String(input);
    text = /e/i.test(shortest) ? input.toFixed(18) : shortest;
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    return undefined;
  }
  const match = PATTERN.exec(text);
  if (!match) return undefined;
  const sign = match[1] ?? match[4] ?? '';
  const whole = match[2] ?? '0';
  const fraction = (match[3] ?? match[5] ?? '').slice(0, 18).padEnd(18, '0');
  const value = BigInt(whole) * SCALE + BigInt(fraction === '' ? '0' : fraction);
  return sign === '-' ? -value : value;
}

/** Parses a trusted literal (config values); throws on malformed input. */
export function decimal(text: string): bigint {
  const value = parseDecimal(text);
  if (value === undefined) throw new Error(`not a decimal: ${text}`);
  return value;
}

export function formatDecimal(value: bigint, fractionDigits: number): string {
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const whole = abs / SCALE;
  const fraction = (abs % SCALE).toString().padStart(18, '0').slice(0, fractionDigits);
  const body = fractionDigits > 0 ? `${whole}.${fraction}` : whole.toString();
  return negative && abs !== 0n ? `-${body}` : body;
}

export function multiply(a: bigint, b: bigint): bigint {
  return (a * b) / SCALE;
}

export function divide(a: bigint, b: bigint): bigint {
  return b === 0n ? 0n : (a * SCALE) / b;
}

/** How an exchange that keeps fewer fractional digits than it is sent stores an amount. */
export const roundingModes = ['half_even', 'half_up', 'truncate'] as const;
export type RoundingMode = (typeof roundingModes)[number];

/**
 * The value kept to `fractionDigits` fractional digits. `half_even` is what a Django model DecimalField does on save
 * (Python's default decimal context, ROUND_HALF_EVEN); `half_up` rounds a tie away from zero (a PostgreSQL numeric
 * column given more digits than its scale); `truncate` drops the extra digits (toward zero).
 */
export function roundDecimal(value: bigint, fractionDigits: number, mode: RoundingMode): bigint {
  if (fractionDigits >= 18) return value;
  const unit = 10n ** BigInt(18 - Math.max(0, fractionDigits));
  const negative = value < 0n;
  const abs = negative ? -value : value;
  let kept = abs / unit;
  const rest = abs % unit;
  if (mode !== 'truncate' && rest * 2n > unit) kept += 1n;
  else if (mode === 'half_up' && rest * 2n === unit) kept += 1n;
  else if (mode === 'half_even' && rest * 2n === unit && kept % 2n === 1n) kept += 1n;
  const rounded = kept * unit;
  return negative ? -rounded : rounded;
}

/** Decimal fraction for basis points: 25 bps -> 0.0025. */
export function fromBasisPoints(bps: number): bigint {
  return (BigInt(bps) * SCALE) / 10_000n;
}

/** Compact text for messages: trailing zeros dropped ("0.01", "5"). */
export function displayDecimal(value: bigint): string {
  const text = formatDecimal(value, 18);
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}
