// Which exchange orders could be a parked order's: decided purely from the order's intent and parked window (its
// state record) and the exchange orders listed (GET /orders/, CeFi only). Every candidate of the same pair is shown
// with the evidence for and against it; the pick is the one that passes every check (the earliest, when several do,
// as the worker's own lookup picks). Which amounts are "the same" is one rule, `amountMatches`, to swap when the
// exchange's rounding is known (docs/decisions/fleet-operations.md).
import type { ExchangeOrderView } from '../../machines/domain.ts';
import { sameAddress } from '../exchange/address-match.ts';
import type { OrderSummary } from '../fleet/order-summary.ts';

/** The clock skew allowed between the exchange and us on both ends of the window (as the worker's lookup allows). */
export const windowSkewMs = 120_000;

const scale = 18;

/** A plain non-negative decimal as an integer of `scale` fractional digits, or undefined. */
function scaled(value: string): bigint | undefined {
  const match = /^\+?(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!match || (match[1] ?? '') + (match[2] ?? '') === '') return undefined;
  const fraction = (match[2] ?? '').slice(0, scale).padEnd(scale, '0');
  return BigInt(match[1] || '0') * 10n ** BigInt(scale) + BigInt(fraction || '0');
}

/**
 * Whether the amount the exchange stores is the amount the order asked for: equal within one unit of the 8th
 * decimal place, so that an amount the exchange rounded or cut to 8 places (its example shape) still matches, and
 * nothing further off does. Never through a JavaScript number.
 */
export function amountMatches(stored: string, requested: string): boolean {
  const a = scaled(stored);
  const b = scaled(requested);
  if (a === undefined || b === undefined) return stored.trim() === requested.trim();
  const difference = a > b ? a - b : b - a;
  return difference <= 10n ** BigInt(scale - 8);
}

export interface Evidence {
  check: string;
  ok: boolean;
  detail: string;
}

export interface Candidate {
  uniqueReference: string;
  createdOn: string;
  status: string;
  depositAmount: string;
  withdrawAmount: string;
  /** Every check passed. */
  matches: boolean;
  evidence: Evidence[];
}

export interface CandidateReport {
  orderId: string;
  candidates: Candidate[];
  pick: Candidate | null;
  /** Why nothing was picked, or what to watch (several matched). */
  note: string;
}

/**
 * The candidates among `listed` for a parked order, best first. `ownerOf` names the order that already records a
 * reference (another order's exchange order is never this one's).
 */
export function rankCandidates(
  order: OrderSummary,
  listed: readonly ExchangeOrderView[],
  ownerOf: (uniqueReference: string) => string | undefined,
): CandidateReport {
  const intent = order.intent;
  const from = Date.parse(order.parked?.window_from ?? '') - windowSkewMs;
  const to = Date.parse(order.parked?.window_to ?? '') + windowSkewMs;
  const samePair = listed.filter(
    (x) =>
      x.depositCurrency.toUpperCase() === (intent.deposit_currency ?? '').toUpperCase() &&
      x.withdrawCurrency.toUpperCase() === (intent.withdraw_currency ?? '').toUpperCase(),
  );
  const candidates = samePair.map((x): Candidate => {
    const evidence: Evidence[] = [
      {
        check: 'pair',
        ok: true,
        detail: `${x.depositCurrency} -> ${x.withdrawCurrency}`,
      },
    ];
    if (intent.deposit_amount !== null)
      evidence.push({
        check: 'amount',
        ok: amountMatches(x.depositAmount, intent.deposit_amount),
        detail: `deposit_amount ${x.depositAmount} on the exchange, ${intent.deposit_amount} asked`,
      });
    else if (intent.withdraw_amount !== null)
      evidence.push({
        check: 'amount',
        ok: amountMatches(x.withdrawAmount, intent.withdraw_amount),
        detail: `withdraw_amount ${x.withdrawAmount} on the exchange, ${intent.withdraw_amount} asked`,
      });
    evidence.push({
      check: 'address',
      ok: intent.withdraw_address !== null && sameAddress(x.withdrawAddress, intent.withdraw_address),
      detail: `withdraw_address ${x.withdrawAddress}`,
    });
    if (intent.withdraw_address_extra_id !== null)
      evidence.push({
        check: 'extra id',
        ok: x.withdrawAddressExtraId === intent.withdraw_address_extra_id,
        detail: `withdraw_address_extra_id "${x.withdrawAddressExtraId}"`,
      });
    if (intent.refund_address !== null)
      evidence.push({
        check: 'refund address',
        ok: sameAddress(x.refundAddress, intent.refund_address),
        detail: `refund_address ${x.refundAddress}`,
      });
    const created = Date.parse(x.createdOn);
    evidence.push({
      check: 'window',
      ok: Number.isFinite(from) && Number.isFinite(to) && created >= from && created <= to,
      detail: `created ${x.createdOn}; intent window ${order.parked?.window_from ?? '?'} .. ${order.parked?.window_to ?? '?'} (± ${windowSkewMs / 1000} s)`,
    });
    const owner = ownerOf(x.uniqueReference);
    evidence.push({
      check: 'unclaimed',
      ok: owner === undefined || owner === order.order_id,
      detail: owner === undefined ? 'no order records it' : `recorded by order ${owner}`,
    });
    return {
      uniqueReference: x.uniqueReference,
      createdOn: x.createdOn,
      status: x.status,
      depositAmount: x.depositAmount,
      withdrawAmount: x.withdrawAmount,
      matches: evidence.every((e) => e.ok),
      evidence,
    };
  });
  const failed = (c: Candidate) => c.evidence.filter((e) => !e.ok).length;
  candidates.sort((a, b) => failed(a) - failed(b) || Date.parse(a.createdOn) - Date.parse(b.createdOn));
  const matching = candidates.filter((c) => c.matches);
  const pick = matching[0] ?? null;
  const note =
    matching.length > 1
      ? `${matching.length} exchange orders pass every check (sibling orders with one pair, address and amount?): the earliest is picked, as the worker's lookup would; check the others are another order's before adopting`
      : pick
        ? 'one exchange order passes every check'
        : samePair.length
          ? 'no exchange order of this pair passes every check: if none is this order, abandon it'
          : 'the exchange lists no order of this pair: if it holds none, abandon the order';
  return { orderId: order.order_id, candidates, pick, note };
}
