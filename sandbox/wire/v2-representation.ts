// The v2 wire shapes: Order (also the webhook body, plus `id`), Pair, Rate, and the currency and network records
// the document leaves unspecified (fields chosen here are documented in docs/sandbox.md). Amounts are decimal
// strings with 8 fractional digits; timestamps ISO 8601 UTC; empty optional strings stay empty strings.
import { addressPatternOf } from '../addresses/address-formats.ts';
import type { CurrencyConfig, SandboxConfig } from '../config.ts';
import { formatDecimal } from '../domain/decimal.ts';
import type { Order } from '../domain/order-store.ts';
import type { Quote } from '../domain/quote-book.ts';
import type { PairRecord } from '../domain/world.ts';

export const V2_DIGITS = 8;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function amountV2(value: bigint): string {
  return formatDecimal(value, V2_DIGITS);
}

export function toV2Order(order: Order): Record<string, unknown> {
  return {
    unique_reference: order.uniqueReference,
    created_on: iso(order.createdAt),
    side: order.side,
    status: order.status,
    deposit_amount: amountV2(order.depositAmount),
    withdraw_amount: amountV2(order.withdrawAmount),
    deposit_currency: order.pair.from.code,
    withdraw_currency: order.pair.to.code,
    deposit_address: order.depositAddress,
    deposit_address_extra_id: order.depositAddressExtraId,
    withdraw_address: order.withdrawAddress,
    withdraw_address_extra_id: order.withdrawAddressExtraId,
    refund_address: order.refundAddress,
    refund_address_extra_id: order.refundAddressExtraId,
    payment_window_minutes: order.paymentWindowMinutes,
    fixed_rate_deadline: iso(order.fixedRateDeadline),
    rate: amountV2(order.rate),
    deposit_transaction: order.depositTransaction,
    withdraw_transaction: order.withdrawTransaction,
    refund_transaction: order.refundTransaction,
  };
}

export function toV2Pair(pair: PairRecord): Record<string, unknown> {
  return { name: pair.name, to: pair.to.code, from: pair.from.code, disabled: pair.disabled };
}

export interface RateExtras {
  includeEta: boolean;
}

export function toV2Rate(quote: Quote, extras: RateExtras): Record<string, unknown> {
  const pair = quote.pair;
  const body: Record<string, unknown> = {
    pair: pair.name,
    from: pair.from.code,
    to: pair.to.code,
    withdrawal_fee: amountV2(pair.withdrawalFee),
    rate: amountV2(quote.rate),
    rate_id: quote.rateId,
    max_withdraw_amount: amountV2(pair.maxWithdraw),
    min_withdraw_amount: amountV2(pair.minWithdraw),
    max_deposit_amount: amountV2(pair.maxDeposit),
    min_deposit_amount: amountV2(pair.minDeposit),
    expiration_time_unix: String(Math.floor(quote.expiresAt / 1000)),
  };
  if (quote.depositAmount !== undefined && quote.withdrawAmount !== undefined) {
    body['deposit_amount'] = amountV2(quote.depositAmount);
    body['withdraw_amount'] = amountV2(quote.withdrawAmount);
  }
  if (extras.includeEta) body['eta_seconds'] = pair.etaSeconds;
  return body;
}

/**
 * Assumed shape (the document does not show it). `network` and `contract_address` are the currency's own (as the
 * public v2 client addresses currencies: `{contract_address, network}`); `networks` lists every network the
 * currency can be sent or received on, each with its contract address ("" for the network's native currency).
 * The sandbox keeps one network per code, so the list has one entry.
 */
export function toV2Currency(currency: CurrencyConfig): Record<string, unknown> {
  return {
    code: currency.code,
    name: currency.name,
    network: currency.network,
    contract_address: currency.contractAddress ?? '',
    networks: [{ name: currency.network, contract_address: currency.contractAddress ?? '' }],
    is_crypto: !currency.isFiat,
    is_fiat: currency.isFiat,
    decimals: currency.decimals,
    has_extra_id: currency.hasExtraId,
    min_confirmations: currency.minConfirmations,
  };
}

/**
 * Assumed shape (the document does not show it). The address format is the network's (its native currency's):
 * `address_format` names the family (`evm`, `bitcoin`, `litecoin`, `dogecoin`, `tron`, `iban`, or `regex` for a
 * bare pattern) and `address_regex` gives its shape without checksum.
 */
export function toV2Network(
  network: SandboxConfig['networks'][number],
  config: SandboxConfig,
): Record<string, unknown> {
  const onNetwork = config.currencies.filter((c) => c.network === network.name);
  const native = onNetwork.find((c) => c.code === network.nativeCurrency) ?? onNetwork[0];
  const format = native?.addressFormat;
  return {
    name: network.name,
    display_name: network.displayName,
    native_currency: network.nativeCurrency,
    is_evm: network.isEvm,
    address_format: format === undefined ? null : typeof format === 'object' ? 'regex' : format,
    address_regex: format === undefined ? null : addressPatternOf(format),
    has_extra_id: native?.hasExtraId ?? false,
    currencies: onNetwork.map((c) => c.code),
  };
}
