// The legacy v1 wire shapes: Order with status_name [[code, name]], 18-digit amount_base / amount_quote, nested
// pair and address objects and a transactions list; Pair with base / quote and fees; the /info/bulk/ rate.
// v1 order_type: BUY = 1, SELL = 0 (nexchange's Order.BUY / Order.SELL).
import type { CurrencyConfig } from '../config.ts';
import { formatDecimal } from '../domain/decimal.ts';
import { statusCodes } from '../domain/order-lifecycle.ts';
import type { Order } from '../domain/order-store.ts';
import type { Quote } from '../domain/quote-book.ts';
import { iso } from './v2-representation.ts';
import type { PairRecord } from '../domain/world.ts';

export const V1_DIGITS = 18;
const FEE = '0.00500000';

function amountV1(value: bigint): string {
  return formatDecimal(value, V1_DIGITS);
}

function currencyRef(currency: CurrencyConfig): { code: string; name: string } {
  return { code: currency.code, name: currency.name };
}

export function toV1Pair(pair: PairRecord): Record<string, unknown> {
  return {
    name: pair.name,
    base: currencyRef(pair.to),
    quote: currencyRef(pair.from),
    fee_ask: FEE,
    fee_bid: FEE,
    disabled: pair.disabled,
    test_mode: false,
    orderbook_enabled: false,
    reverse_orderbook_enabled: false,
  };
}

function address(
  type: 'W' | 'D' | 'R',
  value: string,
  currency: CurrencyConfig,
): Record<string, unknown> | null {
  if (value === '') return null;
  return { type, name: '', address: value, currency_code: currency.code };
}

function transactions(order: Order): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const confirmedStatuses = ['PAID', 'PRE-RELEASE', 'RELEASED', 'COMPLETED', 'REFUNDED'];
  const at = (status: string): number =>
    order.history.find((h) => h.status === status)?.at ?? order.modifiedAt;
  if (order.depositTransaction !== '') {
    const confirmed = confirmedStatuses.includes(order.status);
    out.push({
      created_on: iso(order.depositTransactionAt ?? order.createdAt),
      modified_on: iso(order.modifiedAt),
      type: 'D',
      address_to: 1,
      tx_id: order.depositTransaction,
      confirmations: confirmed ? order.pair.from.minConfirmations : 0,
      amount: formatDecimal(order.depositAmount, 8),
      is_verified: confirmed,
      is_completed: confirmed,
      time: iso(order.depositTransactionAt ?? order.createdAt),
      currency: order.pair.from.code,
    });
  }
  if (order.withdrawTransaction !== '') {
    const done = order.status === 'COMPLETED';
    out.push({
      created_on: iso(at('RELEASED')),
      modified_on: iso(order.modifiedAt),
      type: 'W',
      address_to: 2,
      tx_id: order.withdrawTransaction,
      confirmations: done ? order.pair.to.minConfirmations : 0,
      amount: formatDecimal(order.withdrawAmount, 8),
      is_verified: done,
      is_completed: done,
      time: iso(at('RELEASED')),
      currency: order.pair.to.code,
    });
  }
  if (order.refundTransaction !== '') {
    out.push({
      created_on: iso(at('REFUNDED')),
      modified_on: iso(order.modifiedAt),
      type: 'R',
      address_to: 3,
      tx_id: order.refundTransaction,
      confirmations: 0,
      amount: formatDecimal(order.depositAmount, 8),
      is_verified: true,
      is_completed: true,
      time: iso(at('REFUNDED')),
      currency: order.pair.from.code,
    });
  }
  return out;
}

export function toV1Order(order: Order): Record<string, unknown> {
  return {
    order_type: order.side === 'BUY' ? 1 : 0,
    amount_base: amountV1(order.withdrawAmount),
    amount_quote: amountV1(order.depositAmount),
    is_default_rule: false,
    from_default_rule: false,
    unique_reference: order.uniqueReference,
    pair: {
      name: order.pair.name,
      base: currencyRef(order.pair.to),
      quote: currencyRef(order.pair.from),
      fee_ask: FEE,
      fee_bid: FEE,
    },
    withdraw_address: address('W', order.withdrawAddress, order.pair.to),
    deposit_address: address('D', order.depositAddress, order.pair.from),
    refund_address: address('R', order.refundAddress, order.pair.from),
    user_marked_as_paid: order.depositTransaction !== '',
    created_on: iso(order.createdAt),
    payment_window: order.paymentWindowMinutes,
    payment_deadline: iso(order.createdAt + order.paymentWindowMinutes * 60_000),
    kyc_deadline: null,
    status_name: [[statusCodes[order.status], order.status]],
    transactions: transactions(order),
    referral_code: order.referralCode
      ? [
          {
            code: order.referralCode.code,
            created_on: iso(order.referralCode.at),
            modified_on: iso(order.referralCode.at),
          },
        ]
      : [],
    withdrawal_fee: Number(formatDecimal(order.pair.withdrawalFee, 8)),
    withdrawal_fee_quote: Number(
      formatDecimal(
        order.pair.rate === 0n ? 0n : (order.pair.withdrawalFee * 10n ** 18n) / order.pair.rate,
        8,
      ),
    ),
    user_provided_amount: order.userProvided === 'withdraw' ? 1 : 0,
  };
}

export function toV1Currency(currency: CurrencyConfig): Record<string, unknown> {
  return {
    code: currency.code,
    name: currency.name,
    is_crypto: !currency.isFiat,
    min_confirmations: currency.minConfirmations,
    decimals: currency.decimals,
    has_payment_id: currency.hasExtraId,
  };
}

export function toV1Rate(quote: Quote): Record<string, unknown> {
  const pair = quote.pair;
  return {
    pair: pair.name,
    base: pair.to.code,
    quote: pair.from.code,
    rate: formatDecimal(quote.rate, 8),
    rate_id: quote.rateId,
    withdrawal_fee: formatDecimal(pair.withdrawalFee, 8),
    max_amount: formatDecimal(pair.maxDeposit, 8),
    min_amount: formatDecimal(pair.minDeposit, 8),
    max_receive_amount: formatDecimal(pair.maxWithdraw, 8),
    min_receive_amount: formatDecimal(pair.minWithdraw, 8),
    allowed_historic_price_variance: '0.01',
    allowed_historic_price_age: 300,
    expiration_time_unix: String(Math.floor(quote.expiresAt / 1000)),
  };
}
