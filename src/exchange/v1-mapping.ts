// The legacy side: v1 order representations (REST and v1 webhook payloads) converted into the v2 vocabulary
// (the document's renames table; docs/exchange-api.md, "Versioning"), so the rest of the worker sees one order
// model. Invariants: amounts are copied as written (v1's 18 fractional digits stay); nothing here guesses a value
// v1 does not carry (the rate stays "").
import { exchangeStatusCodes } from '../../machines/domain.ts';
import { WorkerError } from '../errors.ts';
import {
  v1OrderPageSchema,
  v1OrderSchema,
  type WireOrder,
  type WireV1Order,
  type WireV1OrderPage,
} from './schemas.ts';
import type { z } from 'zod';

/** v1 `order_type` codes (hossamelneily/nexchange orders/models/base.py: BUY = 1, SELL = 0). */
export const v1OrderTypes = { SELL: 0, BUY: 1 } as const;

/** v1 transaction `type`: `W` payout (documented); `D` deposit and `R` refund (nexchange's transaction types). */
type V1TransactionType = 'D' | 'W' | 'R';

function lastTxId(order: WireV1Order, type: V1TransactionType): string {
  let found = '';
  for (const tx of order.transactions) {
    if (tx.type?.toUpperCase() === type && typeof tx.tx_id === 'string' && tx.tx_id !== '') found = tx.tx_id;
  }
  return found;
}

function invalid(what: string, error: z.ZodError): WorkerError {
  const issue = error.issues[0];
  const field = issue === undefined || issue.path.length === 0 ? '(body)' : issue.path.map(String).join('.');
  return new WorkerError('invalid_v1_payload', `${what}: field "${field}": ${issue?.message ?? 'invalid'}`);
}

/**
 * One v1 order in v2 terms, by the document's renames table, which is unconditional: amount_quote/pair.quote are
 * what the user deposits, amount_base/pair.base what they receive, whatever the side. (nexchange's own model swaps
 * the two for SELL; the document is the source of truth here, and SELL only exists for fiat orders.)
 */
export function v1OrderToV2(order: WireV1Order): WireOrder {
  const side =
    order.order_type === v1OrderTypes.SELL
      ? 'SELL'
      : order.order_type === v1OrderTypes.BUY
        ? 'BUY'
        : undefined;
  if (side === undefined)
    throw new WorkerError(
      'invalid_v1_payload',
      `v1 order: field "order_type": unknown value ${order.order_type}`,
    );
  const [code, name] = order.status_name[0] ?? [undefined, undefined];
  const knownName = Object.entries(exchangeStatusCodes).find(([, value]) => value === code)?.[0];
  return {
    unique_reference: order.unique_reference,
    created_on: order.created_on,
    side,
    // status_name[0][1] is the v2 status; the code is the fallback when a name is missing
    status: name ?? knownName ?? String(code),
    deposit_amount: order.amount_quote,
    withdraw_amount: order.amount_base,
    deposit_currency: order.pair.quote.code,
    withdraw_currency: order.pair.base.code,
    deposit_address: order.deposit_address?.address ?? '',
    deposit_address_extra_id: order.deposit_extra_id ?? '',
    withdraw_address: order.withdraw_address?.address ?? '',
    withdraw_address_extra_id: order.withdraw_extra_id ?? '',
    refund_address: order.refund_address?.address ?? '',
    refund_address_extra_id: order.refund_extra_id ?? '',
    payment_window_minutes: order.payment_window ?? null,
    fixed_rate_deadline: order.payment_deadline ?? null,
    // v1 has no rate field; deriving one from the amounts would need a quoting convention v1 does not state
    rate: '',
    deposit_transaction: lastTxId(order, 'D'),
    withdraw_transaction: lastTxId(order, 'W'),
    refund_transaction: lastTxId(order, 'R'),
  };
}

/** Parses a v1 order body (REST detail or v1 webhook) and converts it; errors name the field. */
export function parseV1Order(body: unknown): WireOrder {
  const parsed = v1OrderSchema.safeParse(body);
  if (!parsed.success) throw invalid('v1 order', parsed.error);
  return v1OrderToV2(parsed.data);
}

/** The v1 list envelope in v2 terms (page-number links are kept as the cursors of the v2 shape). */
export function v1OrderPageToV2(page: WireV1OrderPage): {
  results: WireOrder[];
  next: string | null;
  previous: string | null;
} {
  return { results: page.results.map(v1OrderToV2), next: page.next, previous: page.previous };
}

export function parseV1OrderPage(body: unknown): {
  results: WireOrder[];
  next: string | null;
  previous: string | null;
} {
  const parsed = v1OrderPageSchema.safeParse(body);
  if (!parsed.success) throw invalid('v1 order list', parsed.error);
  return v1OrderPageToV2(parsed.data);
}
