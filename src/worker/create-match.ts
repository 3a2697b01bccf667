// Whether an exchange order is the one a create asked for, as the exchange may have stored it (docs/decisions/
// create-lookup-matching.md). A match may be adopted; a near match (what only a normalisation, a precision below
// the one assumed, or a field we did not send could explain) is neither ours nor proof that ours is absent: the
// create stays in doubt. Amounts are compared on their digits, never through a number.
import type { ExchangeOrderView } from '../../machines/domain.ts';
import type { CreateOrderInput } from '../../machines/order-types.ts';
import { sameAddress } from '../exchange/address-match.ts';
import { fractionDigitsOf, storedAs, withinPartsPerMillion } from '../decimal.ts';

/**
 * The fewest fractional digits the exchange is assumed to keep: the interface document's examples show 8 ("example
 * shape: 8 fractional digits"). A stored amount written with more digits is taken at its own precision.
 */
export const minimumStoredFractionDigits = 8;

/** Amounts within this many parts per million of ours (1%) that are not ours as stored make a near match. */
export const nearAmountPpm = 10_000;

/** A field in which a candidate differs from the create, and how. */
export interface MatchDifference {
  readonly field:
    | 'deposit_amount'
    | 'withdraw_amount'
    | 'withdraw_address'
    | 'withdraw_address_extra_id'
    | 'refund_address'
    | 'refund_address_extra_id';
  readonly ours: string;
  readonly theirs: string;
}

export type CreateMatch =
  /** The exchange order this create would have made (its amount as stored at the exchange's precision). */
  | { readonly kind: 'match' }
  /** Differs only where normalisation or precision could explain it: maybe ours, maybe not. */
  | { readonly kind: 'near'; readonly differences: readonly MatchDifference[] }
  /** Another pair, another withdraw address, or an amount more than 1% off. */
  | { readonly kind: 'other' };

/** `stored` is `ours` as an exchange keeping max(its own digits, 8) fractional digits would have written it. */
export function amountAsStored(ours: string, stored: string): boolean {
  const precision = Math.max(fractionDigitsOf(stored) ?? 0, minimumStoredFractionDigits);
  return storedAs(ours, stored, precision);
}

const bounded = (value: string): string => (value.length > 80 ? `${value.slice(0, 80)}…` : value);

/** An optional field we sent (null or "" when not) against the exchange's (empty when none). */
function optionalDiffers(ours: string | null, theirs: string, same: (a: string, b: string) => boolean) {
  const sent = (ours ?? '').trim();
  const stored = theirs.trim();
  if (sent === '' && stored === '') return false;
  return !same(sent, stored);
}

export function matchCreate(order: ExchangeOrderView, create: CreateOrderInput): CreateMatch {
  if (
    order.depositCurrency.trim().toUpperCase() !== create.depositCurrency.trim().toUpperCase() ||
    order.withdrawCurrency.trim().toUpperCase() !== create.withdrawCurrency.trim().toUpperCase()
  )
    return { kind: 'other' };
  const differences: MatchDifference[] = [];
  const differ = (field: MatchDifference['field'], ours: string | null, theirs: string): void => {
    differences.push({ field, ours: bounded(ours ?? ''), theirs: bounded(theirs) });
  };

  if (!sameAddress(order.withdrawAddress, create.withdrawAddress)) {
    // Another address, unless only its case differs (a format where case matters, or one we do not know).
    if (order.withdrawAddress.trim().toLowerCase() !== create.withdrawAddress.trim().toLowerCase())
      return { kind: 'other' };
    differ('withdraw_address', create.withdrawAddress, order.withdrawAddress);
  }

  // The amount the create named: the deposit amount, else the withdraw amount.
  const [field, ours, theirs] =
    create.depositAmount !== null
      ? (['deposit_amount', create.depositAmount, order.depositAmount] as const)
      : (['withdraw_amount', create.withdrawAmount, order.withdrawAmount] as const);
  if (ours !== null && !amountAsStored(ours, theirs)) {
    if (!withinPartsPerMillion(ours, theirs, nearAmountPpm)) return { kind: 'other' };
    differ(field, ours, theirs);
  }

  // Extra ids are compared exactly (a memo's case may matter); an empty one equals one not sent.
  if (optionalDiffers(create.withdrawAddressExtraId, order.withdrawAddressExtraId, (a, b) => a === b))
    differ('withdraw_address_extra_id', create.withdrawAddressExtraId, order.withdrawAddressExtraId);
  if (optionalDiffers(create.refundAddress, order.refundAddress, sameAddress))
    differ('refund_address', create.refundAddress, order.refundAddress);
  if (optionalDiffers(create.refundAddressExtraId, order.refundAddressExtraId, (a, b) => a === b))
    differ('refund_address_extra_id', create.refundAddressExtraId, order.refundAddressExtraId);

  return differences.length === 0 ? { kind: 'match' } : { kind: 'near', differences };
}

/** "deposit_amount 0.1 vs 0.10200000; refund_address '' vs 'bc1q…'", for messages an operator reads. */
export function describeDifferences(differences: readonly MatchDifference[]): string {
  return differences.map((d) => `${d.field} "${d.ours}" vs "${d.theirs}"`).join('; ');
}

/**
 * What makes orders siblings, whose exchange orders a lookup could mistake for one another: one mode (one API key's
 * listing), one pair, one withdraw address (compared loosely: every spelling a match or a near match could have).
 */
export function siblingKeyOf(
  create: Pick<CreateOrderInput, 'mode' | 'depositCurrency' | 'withdrawCurrency' | 'withdrawAddress'>,
): string {
  return [
    create.mode,
    create.depositCurrency.trim().toUpperCase(),
    create.withdrawCurrency.trim().toUpperCase(),
    create.withdrawAddress.trim().toLowerCase(),
  ].join('|');
}
