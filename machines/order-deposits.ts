// What an order's end says of the deposits its client submitted. An accepted order.submit_deposit means the user
// broadcast money: when the order ends (completed, refunded, canceled, failed) before the exchange recorded that
// transaction on it - its PATCH not made or not answered, failing and to be retried, or refused for good - the end
// event says so (unrecorded_deposit), and a cancellation then never blames the user (payment_window_lapsed).
// Pure: derived from the order's context and the exchange order as last seen.

import { sameTransactionHash, type ExchangeOrderView } from './domain.ts';
import { isoOf } from './order-event-builders.ts';
import type { UnrecordedDeposit } from './order-events.ts';
import type { OrderContext } from './order-types.ts';

type DepositContext = Pick<
  OrderContext,
  'deposit' | 'depositRecorded' | 'depositRetryAt' | 'depositRejected'
>;

/**
 * The deposit the client submitted that the exchange has not recorded on this order, if any: the one accepted and
 * not yet recorded, else the last one refused (when no deposit was recorded since). `order` is the exchange order as
 * last seen (the end's confirming GET): a hash it carries is recorded, however it got there.
 */
export function unrecordedDepositOf(
  context: DepositContext,
  order: Pick<ExchangeOrderView, 'depositTransaction'> | null,
): UnrecordedDeposit | null {
  const known = (txHash: string): boolean =>
    order !== null &&
    order.depositTransaction !== '' &&
    sameTransactionHash(order.depositTransaction, txHash);
  const { deposit } = context;
  if (deposit !== null) {
    if (known(deposit.txHash)) return null;
    const failure = context.depositRetryAt !== null ? (deposit.failure ?? null) : null;
    return {
      tx_hash: deposit.txHash,
      state: failure === null ? 'unconfirmed' : 'retrying',
      accepted_at: isoOf(deposit.acceptedAt),
      ...(failure === null ? {} : { code: failure.code, message: failure.message }),
    };
  }
  const rejected = context.depositRejected ?? null;
  if (rejected === null || context.depositRecorded !== null || known(rejected.txHash)) return null;
  return {
    tx_hash: rejected.txHash,
    state: 'rejected',
    accepted_at: isoOf(rejected.acceptedAt),
    code: rejected.code,
    message: rejected.message,
  };
}

/** The end event's field: `{ unrecorded_deposit }` when there is one, nothing otherwise. */
export function unrecordedDepositField(
  context: DepositContext,
  order: Pick<ExchangeOrderView, 'depositTransaction'> | null,
): { unrecorded_deposit: UnrecordedDeposit } | Record<string, never> {
  const deposit = unrecordedDepositOf(context, order);
  return deposit === null ? {} : { unrecorded_deposit: deposit };
}
