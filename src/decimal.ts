// Amounts are decimal strings end to end (the exchange writes them so, and a JavaScript number would round them).
// Whether two strings spell one amount ("1.50" and "1.5") is decided here, once, on the digits, never through a
// number. Only plain non-negative decimals are amounts: the exchange's document has no signs or exponents in them.

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
