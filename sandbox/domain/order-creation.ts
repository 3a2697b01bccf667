// Order creation shared by v2 POST /orders/ and v1 POST /orders/: every documented validation in the documented
// order (limit-order rules, SELL for fiat only, cross-chain deposit_amount, per-currency address formats, quote
// binding by mode, amount bounds as /rate/ reports them), DeFi fixed-rate quote production with its throttles and
// delay, and idempotent reuse of a DeFi order created from the same rate_id (200 instead of 201). The faults that
// change what is stored act here: round_amounts, normalise_address_case, reuse_other_order, expired_on_repeat.
import { randomInt } from 'node:crypto';
import { isValidAddress, mintAddress, normaliseAddressCase } from '../addresses/address-formats.ts';
import type { TradingMode } from '../config.ts';
import type { SandboxContext } from './context.ts';
import { displayDecimal, roundDecimal } from './decimal.ts';
import type { HttpError } from '../http/http-kit.ts';
import { v2Error, validationError, type FieldErrorMap } from '../http/http-kit.ts';
import { messages } from '../wire/messages.ts';
import type { Order, Side } from './order-store.ts';
import type { PricingTerms } from './pricing-terms.ts';
import { rateAfterMarkup, type Quote } from './quote-book.ts';
import type { CurrencySelector } from '../wire/request-fields.ts';
import { depositFor, withdrawFor, type PairRecord, type ReferralCodeRecord } from './world.ts';
import type { CurrencyConfig } from '../config.ts';

export interface OrderRequest {
  /** Route name for fault lookup, e.g. "POST /orders/" or "v1 POST /orders/". */
  endpoint: string;
  mode: TradingMode;
  apiKey: string | undefined;
  partnerId: string | undefined;
  v1User: string | undefined;
  pair: PairRecord;
  side: Side;
  depositAmount: bigint | undefined;
  withdrawAmount: bigint | undefined;
  withdrawAddress: string | undefined;
  withdrawAddressExtraId: string | undefined;
  refundAddress: string | undefined;
  refundAddressExtraId: string | undefined;
  rateId: string | undefined;
  isLimitOrder: boolean;
  limitTtl: number | undefined;
  terms: PricingTerms;
  referral: ReferralCodeRecord | undefined;
  /** The request's JSON body as received, for faults aimed at one request (`whenBody`). */
  subject: Readonly<Record<string, unknown>> | undefined;
}

export interface OrderOutcome {
  order: Order;
  /** false when an existing DeFi order was reused idempotently. */
  created: boolean;
}

const MIN_LIMIT_TTL = 600;

export function resolveCurrency(ctx: SandboxContext, selector: CurrencySelector): CurrencyConfig | undefined {
  if (selector.code !== undefined) {
    const currency = ctx.world.currency(selector.code);
    return currency &&
      (selector.network === undefined || currency.network.toUpperCase() === selector.network.toUpperCase())
      ? currency
      : undefined;
  }
  if (selector.network === undefined) return undefined;
  const address = (selector.contractAddress ?? '').toLowerCase();
  return ctx.world
    .currencies()
    .find(
      (c) =>
        c.network.toUpperCase() === selector.network?.toUpperCase() &&
        (c.contractAddress ?? '').toLowerCase() === address,
    );
}

function describeSelector(selector: CurrencySelector): string {
  return selector.code ?? `${selector.contractAddress ?? ''}@${selector.network ?? ''}`;
}

/** Finds the pair for two currency selectors, with the exchange's 400s for unknown currencies and pairs. */
export function resolvePair(
  ctx: SandboxContext,
  deposit: CurrencySelector,
  withdraw: CurrencySelector,
): PairRecord {
  const errors: FieldErrorMap = {};
  const from = resolveCurrency(ctx, deposit);
  const to = resolveCurrency(ctx, withdraw);
  if (!from) errors['deposit_currency'] = [`Object with code=${describeSelector(deposit)} does not exist.`];
  if (!to) errors['withdraw_currency'] = [`Object with code=${describeSelector(withdraw)} does not exist.`];
  if (!from || !to) throw validationError(errors);
  const pair = ctx.world.pairFor(from.code, to.code);
  if (!pair) throw validationError({ non_field_errors: [`Pair ${to.code}${from.code} does not exist.`] });
  return pair;
}

function checkStructure(request: OrderRequest): void {
  const errors: FieldErrorMap = {};
  const add = (field: string, message: string): void => {
    (errors[field] ??= []).push(message);
  };
  const { pair } = request;
  if (request.side === 'SELL' && !pair.isFiat) add('side', 'SELL is only available for fiat orders.');
  if (request.isLimitOrder) {
    if (request.mode === 'defi') add('is_limit_order', 'Limit orders are available for CeFi flows only.');
    if (request.rateId !== undefined) add('rate_id', messages.rateIdWithLimitOrder);
  }
  if (request.limitTtl !== undefined && request.limitTtl < MIN_LIMIT_TTL)
    add('limit_ttl', messages.limitTtlTooShort);
  if (request.mode === 'defi' && pair.chainKind === 'cross-chain' && request.depositAmount === undefined) {
    add('deposit_amount', messages.crossChainDepositAmountRequired);
  }
  if (request.withdrawAddress === undefined) add('withdraw_address', messages.required);
  else if (!isValidAddress(pair.to.addressFormat, request.withdrawAddress)) {
    add('withdraw_address', messages.invalidAddress(request.withdrawAddress));
  }
  if (
    request.refundAddress !== undefined &&
    !isValidAddress(pair.from.addressFormat, request.refundAddress)
  ) {
    add('refund_address', messages.invalidAddress(request.refundAddress));
  }
  if (Object.keys(errors).length > 0) throw validationError(errors);
}

/** The documented rate_id failures, worded per mode (CeFi folds them into "Pair <name> is temporarily unavailable."). */
function bindQuote(ctx: SandboxContext, request: OrderRequest, rateId: string): Quote {
  const now = ctx.clock.now();
  const isDefi = request.mode === 'defi';
  const cefiUnavailable = (): HttpError =>
    v2Error(400, messages.pairTemporarilyUnavailable(request.pair.name), {
      rate_id: [messages.pairTemporarilyUnavailable(request.pair.name)],
    });
  const defiError = (message: string): HttpError => v2Error(400, message, { rate_id: [message] });

  const quote = ctx.quotes.get(rateId);
  if (!quote || quote.pair.name !== request.pair.name) {
    throw isDefi ? defiError(messages.rateIdInvalidOrExpired(rateId)) : cefiUnavailable();
  }
  if (!isDefi && quote.mode === 'defi') throw defiError(messages.defiRateIdForCefiOrder);
  // CeFi and CeFi fixed-rate keys do not share quotes; the exchange folds that into the pair message.
  if (!isDefi && quote.mode !== request.mode) throw cefiUnavailable();
  if (isDefi && quote.mode !== 'defi') throw defiError(messages.rateIdNonActionable);
  if (quote.expiresAt <= now || ctx.faults.take(request.endpoint, 'expired_rate_id', request.subject)) {
    throw isDefi ? defiError(messages.quoteExpired) : cefiUnavailable();
  }
  if (
    isDefi &&
    (!quote.actionable || ctx.faults.take(request.endpoint, 'non_actionable_rate_id', request.subject))
  ) {
    throw defiError(messages.rateIdNonActionable);
  }
  const partner = request.partnerId ? ctx.world.partner(request.partnerId) : undefined;
  const cap = Math.min(ctx.config.limits.markupCapBps, partner?.markupCapBps ?? Number.POSITIVE_INFINITY);
  const promised =
    quote.markupBps ??
    (quote.referralRate === undefined ? 0 : Number((quote.referralRate * 10_000n) / 10n ** 18n));
  const requested =
    request.terms.markupBps ??
    (request.terms.referralRate === undefined
      ? undefined
      : Number((request.terms.referralRate * 10_000n) / 10n ** 18n));
  if (
    promised > cap ||
    (requested !== undefined && requested !== promised) ||
    ctx.faults.take(request.endpoint, 'promised_rate_mismatch', request.subject)
  ) {
    throw v2Error(400, messages.promisedReferralRateMismatch, {
      rate_id: [messages.promisedReferralRateMismatch],
    });
  }
  return quote;
}

/** Producing a DeFi fixed-rate quote at order time: throttled, fallible (faults), and slow (configured delay). */
async function produceDefiQuote(ctx: SandboxContext, request: OrderRequest): Promise<Quote> {
  const pair = request.pair;
  const now = ctx.clock.now();
  const verdict = ctx.throttles.fixedRate(pair.chainKind, request.apiKey ?? request.partnerId ?? '', now);
  if (!verdict.allowed) throw fixedRateThrottled(ctx, pair.chainKind, verdict.retryAfterSeconds, false);
  if (ctx.faults.take(request.endpoint, 'quote_fetch_failure', request.subject)) {
    const message =
      pair.chainKind === 'cross-chain'
        ? messages.crossChainQuoteFailed
        : messages.sameChainActionableQuoteFailed;
    throw v2Error(400, message, { non_field_errors: [message] });
  }
  await ctx.sleep(ctx.config.quotes.actionableDelayMs);
  return ctx.quotes.issue({
    pair,
    mode: 'defi',
    actionable: true,
    markupFraction: request.terms.markupFraction,
    markupBps: request.terms.markupBps,
    referralRate: request.terms.referralRate,
    depositAmount: request.depositAmount,
    partnerId: request.partnerId,
    now: ctx.clock.now(),
    ttlMs: ctx.config.quotes.ttlSeconds * 1000,
  });
}

export function fixedRateThrottled(
  ctx: SandboxContext,
  kind: 'same-chain' | 'cross-chain',
  seconds: number,
  cooldown: boolean,
): HttpError {
  const message = cooldown
    ? kind === 'same-chain'
      ? messages.sameChainCooldown(seconds)
      : messages.crossChainCooldown(seconds)
    : kind === 'same-chain'
      ? messages.sameChainThrottled(seconds)
      : messages.crossChainThrottled(seconds);
  const headers = ctx.config.limits.fixedRateThrottleRetryAfter
    ? { 'Retry-After': String(seconds) }
    : undefined;
  return v2Error(429, message, undefined, headers);
}

function checkBounds(
  pair: PairRecord,
  provided: 'deposit' | 'withdraw',
  deposit: bigint,
  withdraw: bigint,
): void {
  if (provided === 'deposit') {
    if (deposit < pair.minDeposit)
      throw validationError({ deposit_amount: [messages.minValue(displayDecimal(pair.minDeposit))] });
    if (deposit > pair.maxDeposit)
      throw validationError({ deposit_amount: [messages.maxValue(displayDecimal(pair.maxDeposit))] });
  } else {
    if (withdraw < pair.minWithdraw)
      throw validationError({ withdraw_amount: [messages.minValue(displayDecimal(pair.minWithdraw))] });
    if (withdraw > pair.maxWithdraw)
      throw validationError({ withdraw_amount: [messages.maxValue(displayDecimal(pair.maxWithdraw))] });
  }
}

/**
 * reuse_other_order: the exchange takes a first POST for a repeat of an order it already has and answers with that
 * order (200, as an idempotent reuse) without creating one: the order named by the fault's `otherReference`, else
 * the newest order of the same partner and mode with the same content (pair, amount given, withdraw address and
 * extra id, refund address). Drawn only when there is such an order, so an armed `times` counts real substitutions.
 */
function reusedOrder(
  ctx: SandboxContext,
  request: OrderRequest,
  amounts: { provided: 'deposit' | 'withdraw'; deposit: bigint; withdraw: bigint },
): Order | undefined {
  if (!ctx.faults.armed('reuse_other_order')) return undefined;
  const same = (a: string, b: string | undefined): boolean => a.toLowerCase() === (b ?? '').toLowerCase();
  const sameContent = (o: Order): boolean =>
    o.partnerId === (request.partnerId ?? request.referral?.partner.id) &&
    o.mode === request.mode &&
    o.pair.name === request.pair.name &&
    (amounts.provided === 'deposit'
      ? o.depositAmount === amounts.deposit
      : o.withdrawAmount === amounts.withdraw) &&
    same(o.withdrawAddress, request.withdrawAddress) &&
    o.withdrawAddressExtraId === (request.withdrawAddressExtraId ?? '') &&
    same(o.refundAddress, request.refundAddress);
  const newestSame = ctx.orders.olderThan(Number.POSITIVE_INFINITY, sameContent, 1)[0];
  const named = ctx.faults
    .list()
    .some(
      (f) =>
        f.spec.target === 'endpoint' &&
        f.spec.kind === 'reuse_other_order' &&
        f.spec.otherReference !== undefined &&
        ctx.orders.get(f.spec.otherReference) !== undefined,
    );
  if (newestSame === undefined && !named) return undefined;
  const fault = ctx.faults.take(request.endpoint, 'reuse_other_order', request.subject);
  if (!fault) return undefined;
  const other = fault.otherReference === undefined ? newestSame : ctx.orders.get(fault.otherReference);
  if (other) ctx.orders.sweepOrder(other, ctx.clock.now());
  return other;
}

export async function createOrder(ctx: SandboxContext, request: OrderRequest): Promise<OrderOutcome> {
  const { pair } = request;
  if (pair.disabled) throw v2Error(400, messages.pairTemporarilyUnavailable(pair.name));
  checkStructure(request);

  if (
    request.mode === 'defi' &&
    ctx.faults.take(request.endpoint, 'quote_provider_unavailable', request.subject)
  ) {
    throw v2Error(400, messages.quoteProviderUnavailable, {
      non_field_errors: [messages.quoteProviderUnavailable],
    });
  }

  let quote: Quote | undefined;
  if (request.rateId !== undefined) {
    const rateId = request.rateId;
    quote = bindQuote(ctx, request, rateId);
    if (request.mode === 'defi' && quote.orderReference !== undefined) {
      const existing = ctx.orders.get(quote.orderReference);
      const submitted =
        existing?.addressCase && request.withdrawAddress !== undefined
          ? normaliseAddressCase(request.withdrawAddress, existing.addressCase)
          : request.withdrawAddress;
      // expired_on_repeat: the exchange has lost track of the binding and refuses the repeat, order or not.
      if (
        existing &&
        existing.withdrawAddress === submitted &&
        !ctx.faults.take(request.endpoint, 'expired_on_repeat', request.subject)
      )
        return { order: existing, created: false };
      throw v2Error(400, messages.rateIdInvalidOrExpired(request.rateId), {
        rate_id: [messages.rateIdInvalidOrExpired(request.rateId)],
      });
    }
  } else if (request.mode === 'defi') {
    quote = await produceDefiQuote(ctx, request);
  }

  const rate = quote?.rate ?? rateAfterMarkup(pair, request.terms.markupFraction);
  // round_amounts: the exchange keeps fewer fractional digits than it was sent; the amount given is rounded first and
  // the other one worked out from it, then rounded too, as a store with that many decimal places would keep both.
  const rounding = ctx.faults.take(request.endpoint, 'round_amounts', request.subject);
  const kept = (value: bigint): bigint =>
    rounding ? roundDecimal(value, rounding.fractionDigits ?? 8, rounding.rounding ?? 'half_even') : value;
  let provided: 'deposit' | 'withdraw';
  let deposit: bigint;
  let withdraw: bigint;
  if (request.depositAmount !== undefined) {
    provided = 'deposit';
    deposit = kept(request.depositAmount);
    withdraw = kept(withdrawFor(deposit, rate, pair.withdrawalFee));
  } else if (request.withdrawAmount !== undefined) {
    provided = 'withdraw';
    withdraw = kept(request.withdrawAmount);
    deposit = kept(depositFor(withdraw, rate, pair.withdrawalFee));
  } else if (quote?.depositAmount !== undefined && quote.withdrawAmount !== undefined) {
    provided = 'deposit';
    deposit = kept(quote.depositAmount);
    withdraw = kept(quote.withdrawAmount);
  } else {
    const message = 'Provide deposit_amount or withdraw_amount.';
    throw validationError({ non_field_errors: [message] });
  }
  checkBounds(pair, provided, deposit, withdraw);

  const reused = reusedOrder(ctx, request, { provided, deposit, withdraw });
  if (reused) return { order: reused, created: false };

  const now = ctx.clock.now();
  const limitTtl = request.isLimitOrder
    ? (request.limitTtl ?? ctx.config.orders.defaultLimitTtlSeconds)
    : undefined;
  const paymentWindowMinutes =
    limitTtl !== undefined ? Math.ceil(limitTtl / 60) : ctx.config.orders.paymentWindowMinutes;
  const normalising = ctx.faults.take(request.endpoint, 'normalise_address_case', request.subject);
  const addressCase = normalising ? (normalising.addressCase ?? 'lower') : undefined;
  const stored = (address: string | undefined): string =>
    address === undefined ? '' : addressCase ? normaliseAddressCase(address, addressCase) : address;
  const order = ctx.orders.create({
    createdAt: now,
    mode: request.mode,
    partnerId: request.partnerId ?? request.referral?.partner.id,
    v1User: request.v1User,
    side: request.side,
    pair,
    depositAmount: deposit,
    withdrawAmount: withdraw,
    requested: { depositAmount: request.depositAmount, withdrawAmount: request.withdrawAmount },
    rate,
    depositAddress: mintAddress(pair.from.addressFormat),
    depositAddressExtraId: pair.from.hasExtraId ? String(randomInt(100_000_000, 999_999_999)) : '',
    withdrawAddress: stored(request.withdrawAddress),
    withdrawAddressExtraId: request.withdrawAddressExtraId ?? '',
    refundAddress: stored(request.refundAddress),
    refundAddressExtraId: request.refundAddressExtraId ?? '',
    paymentWindowMinutes,
    fixedRateDeadline: now + paymentWindowMinutes * 60_000,
    referralCode: request.referral ? { code: request.referral.code, at: now } : undefined,
    rateId: quote?.rateId,
    isLimitOrder: request.isLimitOrder,
    limitTtlSeconds: limitTtl,
    userProvided: provided,
    addressCase,
  });
  if (quote && request.mode === 'defi') quote.orderReference = order.uniqueReference;
  return { order, created: true };
}
