// What the exchange's interface document (summary: docs/exchange-api.md) says will fail is refused here, before a
// request (and a unit of the shared budget) is spent.
// Invariant: a refusal uses the same code as the classification row of the exchange's own error, so the machine
// sees one failure whether we or the exchange noticed it; shape errors name the endpoint and the field.
import type { z } from 'zod';
import type { TradingMode } from '../../machines/domain.ts';
import { ExchangeError, type EndpointName } from './errors.ts';
import type {
  CreateOrderRequest,
  CurrencyRef,
  PreScreeningRequest,
  RateQuery,
  UpdateOrderRequest,
} from './schemas.ts';

export const referralCodePattern = /^[A-Za-z0-9_-]+$/;
export const referralCodeMaxLength = 20;
export const minimumLimitTtlSeconds = 600;

/**
 * ISO 4217 codes the client treats as fiat when deciding whether a SELL is allowed ("SELL applies to fiat orders
 * only"). A pair with no fiat side is a crypto pair; the list can be replaced through the client options.
 */
export const defaultFiatCurrencies: ReadonlySet<string> = new Set([
  'USD',
  'EUR',
  'GBP',
  'CHF',
  'JPY',
  'CAD',
  'AUD',
  'NZD',
  'PLN',
  'CZK',
  'SEK',
  'NOK',
  'DKK',
  'HUF',
  'RON',
  'BGN',
  'TRY',
  'BRL',
  'MXN',
  'ARS',
  'ZAR',
  'INR',
  'IDR',
  'KRW',
  'SGD',
  'HKD',
  'AED',
  'ILS',
  'UAH',
  'RUB',
  'KZT',
  'NGN',
]);

function refuse(endpoint: EndpointName, code: string, message: string): never {
  throw new ExchangeError({ code, action: 'fatal', message: `refused before sending: ${message}`, endpoint });
}

/** Shape check with zod; the error names the endpoint and the offending field. */
export function checkShape<S extends z.ZodType>(
  endpoint: EndpointName,
  schema: S,
  value: unknown,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field =
    issue === undefined || issue.path.length === 0 ? '(request)' : issue.path.map(String).join('.');
  refuse(endpoint, 'invalid_request', `request field "${field}": ${issue?.message ?? 'invalid'}`);
}

export function checkReferralCode(endpoint: EndpointName, code: string | undefined): void {
  if (code === undefined) return;
  if (code.length > referralCodeMaxLength)
    refuse(
      endpoint,
      'referral_code_invalid',
      `referral_code is longer than ${referralCodeMaxLength} characters`,
    );
  if (!referralCodePattern.test(code))
    refuse(endpoint, 'referral_code_invalid', 'referral_code must match ^[A-Za-z0-9_-]+$');
}

function checkMarkupExclusive(
  endpoint: EndpointName,
  params: { markup?: unknown; referral_rate?: unknown },
): void {
  if (params.markup !== undefined && params.referral_rate !== undefined)
    refuse(endpoint, 'markup_and_referral_rate', 'provide either markup or referral_rate, not both');
}

function currencyCode(ref: CurrencyRef): string | undefined {
  return typeof ref === 'string' ? ref : ref.code;
}

export function checkCreateOrder(
  endpoint: EndpointName,
  mode: TradingMode,
  params: CreateOrderRequest,
  fiatCurrencies: ReadonlySet<string>,
): void {
  checkMarkupExclusive(endpoint, params);
  checkReferralCode(endpoint, params.referral_code);
  if (params.is_limit_order === true && params.rate_id !== undefined)
    refuse(endpoint, 'rate_id_on_limit_order', 'rate_id must not be sent on a limit order');
  if (params.limit_ttl !== undefined && params.limit_ttl < minimumLimitTtlSeconds)
    refuse(endpoint, 'limit_ttl_too_short', `limit_ttl must be at least ${minimumLimitTtlSeconds} seconds`);
  if (params.side === 'SELL') {
    const codes = [currencyCode(params.deposit_currency), currencyCode(params.withdraw_currency)];
    const hasFiat = codes.some((code) => code !== undefined && fiatCurrencies.has(code.toUpperCase()));
    if (mode === 'defi' || !hasFiat)
      refuse(endpoint, 'sell_on_crypto_pair', 'SELL applies to fiat orders only');
  }
}

export function checkRateQuery(endpoint: EndpointName, query: RateQuery): void {
  checkMarkupExclusive(endpoint, query);
}

export function checkUpdateOrder(endpoint: EndpointName, body: UpdateOrderRequest): void {
  checkReferralCode(endpoint, body.referral_code);
  if (body.referral_code === undefined && body.deposit_transaction === undefined)
    refuse(endpoint, 'invalid_request', 'nothing to update');
}

export function checkPreScreening(
  endpoint: EndpointName,
  body: PreScreeningRequest,
  hasReferralToken: boolean,
): void {
  if (!hasReferralToken)
    refuse(
      endpoint,
      'referral_token_required',
      'pre-screening needs a trusted referral token (x-referral-token)',
    );
  if ((body.deposit_amount === undefined) === (body.withdraw_amount === undefined))
    refuse(endpoint, 'pre_screening_amounts_exclusive', 'exactly one of deposit_amount or withdraw_amount');
}
