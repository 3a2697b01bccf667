// v2 market data: /currency/, /network/, /pair/ (with /pair/random/ and its 417), and /rate/ with its filters,
// the deposit_amount preview, include_eta, contract-address selectors, markup / referral_rate terms and actionable
// DeFi quotes (cooldown for identical requests, same-chain / cross-chain throttles, production delay, faults).
import type { SandboxContext } from '../domain/context.ts';
import type { Caller } from './caller.ts';
import { formatDecimal, parseDecimal } from '../domain/decimal.ts';
import {
  queryBoolean,
  route,
  v2Error,
  validationError,
  type FieldErrorMap,
  type Reply,
  type Route,
  type SandboxRequest,
} from './http-kit.ts';
import { messages } from '../wire/messages.ts';
import { fixedRateThrottled, resolveCurrency } from '../domain/order-creation.ts';
import { resolvePricingTerms } from '../domain/pricing-terms.ts';
import { toV2Currency, toV2Network, toV2Pair, toV2Rate } from '../wire/v2-representation.ts';
import type { PairRecord } from '../domain/world.ts';

export function requireCaller(request: SandboxRequest): Caller {
  if (!request.caller) throw v2Error(401, messages.credentialsNotProvided);
  return request.caller;
}

export function markupCapFor(ctx: SandboxContext, caller: Caller): number {
  const partner = caller.apiKey?.partner ?? caller.tokenReferral?.partner;
  return Math.min(ctx.config.limits.markupCapBps, partner?.markupCapBps ?? Number.POSITIVE_INFINITY);
}

function notFound(): never {
  throw v2Error(404, messages.notFound);
}

function randomPair(ctx: SandboxContext, endpoint: string): Reply {
  const attempts = ctx.config.randomPairAttempts;
  const all = ctx.world.pairs();
  if (!ctx.faults.take(endpoint, 'random_pair_exhausted')) {
    for (let attempt = 0; attempt < attempts && all.length > 0; attempt++) {
      const candidate = all[ctx.random.int(all.length)];
      if (candidate && !candidate.disabled) return { status: 200, body: toV2Pair(candidate) };
    }
  }
  // 417 body is not shown in the document: a `detail` like every other v2 error.
  return {
    status: 417,
    body: { detail: `Could not find an enabled random pair after ${attempts} attempts.` },
  };
}

interface RateQuery {
  markup: number | undefined;
  referralRate: bigint | undefined;
  depositAmount: bigint | undefined;
  fiatOnly: boolean;
  cryptoOnly: boolean;
  includeEta: boolean;
  actionable: boolean;
}

function parseRateQuery(query: URLSearchParams): RateQuery {
  const errors: FieldErrorMap = {};
  const bool = (name: string): boolean => {
    const value = queryBoolean(query, name);
    if (value === 'invalid') errors[name] = [messages.invalidBoolean];
    return value === true;
  };
  const markupText = query.get('markup');
  let markup: number | undefined;
  if (markupText !== null && markupText !== '') {
    if (/^-?\d+$/.test(markupText.trim())) markup = Number(markupText);
    else errors['markup'] = [messages.invalidInteger];
  }
  const decimalParam = (name: string): bigint | undefined => {
    const text = query.get(name);
    if (text === null || text === '') return undefined;
    const value = parseDecimal(text);
    if (value === undefined) errors[name] = [messages.invalidNumber];
    return value;
  };
  const parsed: RateQuery = {
    markup,
    referralRate: decimalParam('referral_rate'),
    depositAmount: decimalParam('deposit_amount'),
    fiatOnly: bool('fiat_only'),
    cryptoOnly: bool('crypto_only'),
    includeEta: bool('include_eta'),
    actionable: bool('actionable_quote'),
  };
  if (parsed.depositAmount !== undefined && parsed.depositAmount <= 0n) {
    errors['deposit_amount'] = [messages.minValue('0')];
  }
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return parsed;
}

/** Pairs selected by `pairs`, the contract-address selectors and the fiat/crypto filters (disabled pairs excluded). */
function selectPairs(ctx: SandboxContext, query: URLSearchParams, parsed: RateQuery): PairRecord[] {
  let pairs = ctx.world.pairs().filter((p) => !p.disabled);
  const names = query.get('pairs');
  if (names !== null && names.trim() !== '') {
    const wanted = new Set(
      names
        .split(',')
        .map((n) => n.trim().toUpperCase())
        .filter((n) => n !== ''),
    );
    pairs = pairs.filter((p) => wanted.has(p.name.toUpperCase()));
  }
  for (const side of ['from', 'to'] as const) {
    const network = query.get(`${side}_network`);
    const contract = query.get(`${side}_contract_address`);
    if (network === null && contract === null) continue;
    const currency = network
      ? resolveCurrency(ctx, { network, contractAddress: contract === '' ? null : contract })
      : undefined;
    pairs = currency ? pairs.filter((p) => p[side].code === currency.code) : [];
  }
  if (parsed.fiatOnly) pairs = pairs.filter((p) => p.isFiat);
  if (parsed.cryptoOnly) pairs = pairs.filter((p) => !p.isFiat);
  return pairs;
}

const RATE_ENDPOINT = 'GET /rate/';

async function getRates(ctx: SandboxContext, request: SandboxRequest): Promise<Reply> {
  const caller = requireCaller(request);
  const parsed = parseRateQuery(request.query);
  const terms = resolvePricingTerms({
    markup: parsed.markup,
    referralRate: parsed.referralRate,
    referral: caller.tokenReferral,
    capBps: markupCapFor(ctx, caller),
  });
  const pairs = selectPairs(ctx, request.query, parsed);
  if (pairs.length === 0) throw v2Error(404, 'No quotable pairs found.');
  const mode = caller.apiKey?.mode ?? 'cefi';
  let actionable = false;
  if (parsed.actionable) {
    if (mode !== 'defi')
      throw validationError({ actionable_quote: ['Actionable quotes require a DeFi API key.'] });
    const pair = pairs[0];
    if (pairs.length !== 1 || !pair)
      throw validationError({ pairs: ['Actionable quotes take exactly one pair.'] });
    if (parsed.depositAmount === undefined) throw validationError({ deposit_amount: [messages.required] });
    const key = caller.apiKey?.key ?? caller.ip;
    const now = ctx.clock.now();
    const cooldown = ctx.throttles.actionableCooldown(
      key,
      pair.name,
      formatDecimal(parsed.depositAmount, 18),
      now,
    );
    if (!cooldown.allowed) throw fixedRateThrottled(ctx, pair.chainKind, cooldown.retryAfterSeconds, true);
    const verdict = ctx.throttles.fixedRate(pair.chainKind, key, now);
    if (!verdict.allowed) throw fixedRateThrottled(ctx, pair.chainKind, verdict.retryAfterSeconds, false);
    if (ctx.faults.take(RATE_ENDPOINT, 'quote_provider_unavailable'))
      throw v2Error(400, messages.quoteProviderUnavailable);
    if (ctx.faults.take(RATE_ENDPOINT, 'quote_fetch_failure')) {
      throw v2Error(
        400,
        pair.chainKind === 'same-chain'
          ? messages.sameChainActionableQuoteFailed
          : messages.crossChainQuoteFailed,
      );
    }
    await ctx.sleep(ctx.config.quotes.actionableDelayMs);
    actionable = !ctx.faults.take(RATE_ENDPOINT, 'non_actionable_rate_id');
  }
  const expired = ctx.faults.take(RATE_ENDPOINT, 'expired_rate_id') !== undefined;
  const now = ctx.clock.now();
  const rates = pairs.map((pair) =>
    toV2Rate(
      ctx.quotes.issue({
        pair,
        mode,
        actionable,
        markupFraction: terms.markupFraction,
        markupBps: terms.markupBps,
        referralRate: terms.referralRate,
        depositAmount: parsed.depositAmount,
        partnerId: caller.apiKey?.partner.id ?? caller.tokenReferral?.partner.id,
        now,
        ttlMs: expired ? 0 : ctx.config.quotes.ttlSeconds * 1000,
      }),
      { includeEta: parsed.includeEta },
    ),
  );
  return { status: 200, body: rates };
}

export function v2MarketRoutes(ctx: SandboxContext): Route[] {
  return [
    route('GET', '/currency/', () => ({ status: 200, body: ctx.world.currencies().map(toV2Currency) })),
    route('GET', '/currency/{code}/', (request) => {
      const currency = ctx.world.currency(request.params['code'] ?? '') ?? notFound();
      return { status: 200, body: toV2Currency(currency) };
    }),
    route('GET', '/network/', () => ({
      status: 200,
      body: ctx.config.networks.map((n) => toV2Network(n, ctx.config)),
    })),
    route('GET', '/network/{name}/', (request) => {
      const network = ctx.world.network(request.params['name'] ?? '') ?? notFound();
      return { status: 200, body: toV2Network(network, ctx.config) };
    }),
    route('GET', '/pair/', () => ({ status: 200, body: ctx.world.pairs().map(toV2Pair) })),
    route('GET', '/pair/random/', () => randomPair(ctx, 'GET /pair/random/')),
    route('GET', '/pair/{name}/', (request) => {
      const pair = ctx.world.pair(request.params['name'] ?? '') ?? notFound();
      return { status: 200, body: toV2Pair(pair) };
    }),
    route('GET', '/rate/', (request) => getRates(ctx, request)),
  ];
}
