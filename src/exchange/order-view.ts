// Wire v2 order -> ExchangeOrderView, the one order model the machine sees (v1 orders reach it through
// v1-mapping.ts first). Invariant: amounts and the rate are copied as the exchange wrote them, never re-formatted.
import type { ExchangeOrderView } from '../../machines/domain.ts';
import type { CurrencyRef, WireOrder } from './schemas.ts';

/** A currency reference as one code: the code itself, or `network` / `network:contract_address` for tokens. */
export function currencyRefCode(ref: CurrencyRef): string {
  if (typeof ref === 'string') return ref;
  if (ref.code !== undefined && ref.code !== '') return ref.code;
  const network = ref.network ?? '';
  return ref.contract_address === undefined || ref.contract_address === null || ref.contract_address === ''
    ? network
    : `${network}:${ref.contract_address}`;
}

export function toOrderView(order: WireOrder): ExchangeOrderView {
  return {
    uniqueReference: order.unique_reference,
    status: order.status,
    createdOn: order.created_on,
    side: order.side,
    depositAmount: order.deposit_amount,
    withdrawAmount: order.withdraw_amount,
    depositCurrency: currencyRefCode(order.deposit_currency),
    withdrawCurrency: currencyRefCode(order.withdraw_currency),
    depositAddress: order.deposit_address,
    depositAddressExtraId: order.deposit_address_extra_id,
    withdrawAddress: order.withdraw_address,
    withdrawAddressExtraId: order.withdraw_address_extra_id,
    refundAddress: order.refund_address,
    refundAddressExtraId: order.refund_address_extra_id,
    paymentWindowMinutes: order.payment_window_minutes ?? null,
    fixedRateDeadline: order.fixed_rate_deadline ?? null,
    rate: order.rate ?? '',
    depositTransaction: order.deposit_transaction,
    withdrawTransaction: order.withdraw_transaction,
    refundTransaction: order.refund_transaction,
  };
}
