// The legacy v1 surface: orders (page-number pagination with count/next/previous), /info/bulk/ and /get_price/
// rates, pairs and currencies in v1 shapes, pre-screening answering {detail}, and a minimal OAuth2 password grant
// for the user-scoped /users/me and /user/me/orders. Orders live in the same store as v2, so an order created in
// one version is visible in the other. Errors use v1 bodies: {detail} or DRF field maps at the top level.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Caller } from './caller.ts';
import type { SandboxContext } from '../domain/context.ts';
import { displayDecimal, formatDecimal, parseDecimal } from '../domain/decimal.ts';
import {
  bodyObject,
  bodySubject,
  headerValue,
  HttpError,
  route,
  type Reply,
  type Route,
  type SandboxRequest,
} from './http-kit.ts';
import { messages } from '../wire/messages.ts';
import { createOrder } from '../domain/order-creation.ts';
import { preScreeningV1 } from './pre-screening.ts';
import { decimalField, integerField, parseFields, stringField } from '../wire/request-fields.ts';
import { toV1Currency, toV1Order, toV1Pair, toV1Rate } from '../wire/v1-representation.ts';
import { findOrder, referralCodeField } from './v2-order-routes.ts';
import { depositFor, withdrawFor } from '../domain/world.ts';

const v1FieldNames: Record<string, string> = {
  deposit_amount: 'amount_quote',
  withdraw_amount: 'amount_base',
};

/** v2 `{detail, errors}` -> v1 body: field errors at the top level (v1 names), else `{detail}`. */
export function toV1ErrorReply(error: HttpError): Reply {
  const body = error.reply.body as { detail?: string; errors?: Record<string, string[]> } | undefined;
  if (body?.errors) {
    const flattened: Record<string, string[]> = {};
    for (const [field, list] of Object.entries(body.errors)) flattened[v1FieldNames[field] ?? field] = list;
    return { ...error.reply, body: flattened };
  }
  return error.reply;
}

function v1Error(status: number, detail: string): HttpError {
  return new HttpError({ status, body: { detail } });
}

const createV1OrderSchema = z.object({
  pair_name: stringField({ required: true }),
  amount_base: decimalField(),
  amount_quote: decimalField(),
  withdraw_address: stringField({ maxLength: 255 }),
  refund_address: stringField({ maxLength: 255 }),
  order_type: integerField(),
  referral_code: referralCodeField(),
});

export interface V1State {
  /** OAuth2 bearer tokens -> username. */
  tokens: Map<string, string>;
}

function bearerUser(request: SandboxRequest, state: V1State): string | undefined {
  const authorization = headerValue(request.headers, 'authorization');
  const token = authorization ? /^Bearer\s+(\S+)$/.exec(authorization)?.[1] : undefined;
  if (!token) return undefined;
  const user = state.tokens.get(token);
  if (!user) throw v1Error(401, 'Invalid token.');
  return user;
}

function requireUser(request: SandboxRequest, state: V1State): string {
  return (
    bearerUser(request, state) ??
    (() => {
      throw v1Error(401, messages.credentialsNotProvided);
    })()
  );
}

function pageOf(
  ctx: SandboxContext,
  request: SandboxRequest,
  filter: (o: ReturnType<SandboxContext['orders']['all']>[number]) => boolean,
): Reply {
  const pageText = request.query.get('page') ?? '1';
  const page = /^\d+$/.test(pageText) ? Number(pageText) : NaN;
  ctx.orders.sweep(ctx.clock.now());
  const all = ctx.orders.newestFirst(filter);
  const size = ctx.config.orders.v1PageSize;
  const pages = Math.max(1, Math.ceil(all.length / size));
  if (!Number.isInteger(page) || page < 1 || page > pages) throw v1Error(404, 'Invalid page.');
  const link = (n: number): string => {
    const url = new URL(request.url);
    url.searchParams.set('page', String(n));
    return url.toString();
  };
  return {
    status: 200,
    body: {
      count: all.length,
      next: page < pages ? link(page + 1) : null,
      previous: page > 1 ? link(page - 1) : null,
      results: all.slice((page - 1) * size, page * size).map(toV1Order),
    },
  };
}

async function postV1Order(ctx: SandboxContext, request: SandboxRequest, state: V1State): Promise<Reply> {
  const user = bearerUser(request, state);
  const caller: Caller | undefined = request.caller;
  const fields = parseFields(createV1OrderSchema, bodyObject(request));
  const pair = ctx.world.pair(fields.pair_name ?? '');
  if (!pair)
    throw new HttpError({
      status: 400,
      body: { pair_name: [`Object with name=${fields.pair_name} does not exist.`] },
    });
  const referralCode = fields.referral_code ?? request.query.get('ref') ?? undefined;
  const referral = referralCode ? ctx.world.referralCode(referralCode) : caller?.tokenReferral;
  if (referralCode && (!referral || (caller?.apiKey && referral.partner.id !== caller.apiKey.partner.id))) {
    throw v1Error(401, messages.referralNotOwned);
  }
  const outcome = await createOrder(ctx, {
    endpoint: 'v1 POST /orders/',
    mode: 'cefi',
    apiKey: caller?.apiKey?.key,
    partnerId: caller?.apiKey?.partner.id ?? referral?.partner.id,
    v1User: user,
    pair,
    side: fields.order_type === 0 ? 'SELL' : 'BUY',
    depositAmount: fields.amount_base === undefined ? fields.amount_quote : undefined,
    withdrawAmount: fields.amount_base,
    withdrawAddress: fields.withdraw_address,
    withdrawAddressExtraId: undefined,
    refundAddress: fields.refund_address,
    refundAddressExtraId: undefined,
    rateId: undefined,
    isLimitOrder: false,
    limitTtl: undefined,
    terms: { markupFraction: 0n, markupBps: undefined, referralRate: undefined },
    referral,
    subject: bodySubject(request),
  });
  return { status: 201, body: toV1Order(outcome.order) };
}

function getPrice(ctx: SandboxContext, request: SandboxRequest): Reply {
  const pair = ctx.world.pair(request.params['pair'] ?? '');
  if (!pair) throw v1Error(404, messages.notFound);
  const baseText = request.query.get('amount_base');
  const quoteText = request.query.get('amount_quote');
  const parse = (name: string, text: string | null): bigint | undefined => {
    if (text === null || text === '') return undefined;
    const value = parseDecimal(text);
    if (value === undefined || value < 0n)
      throw new HttpError({ status: 400, body: { [name]: [messages.invalidNumber] } });
    return value;
  };
  const base = parse('amount_base', baseText);
  const quote = parse('amount_quote', quoteText) ?? (base === undefined ? pair.minDeposit : undefined);
  const amountQuote = quote ?? depositFor(base ?? 0n, pair.rate, pair.withdrawalFee);
  const amountBase = base ?? withdrawFor(amountQuote, pair.rate, pair.withdrawalFee);
  return {
    status: 200,
    body: {
      pair: { base: pair.to.code, quote: pair.from.code },
      amount_base: Number(formatDecimal(amountBase, 8)),
      amount_quote: Number(formatDecimal(amountQuote, 8)),
      timestamp: ctx.clock.now() / 1000,
      price: Number(formatDecimal(pair.rate, 8)),
      max_amount_base: Number(displayDecimal(pair.maxWithdraw)),
      min_amount_base: Number(displayDecimal(pair.minWithdraw)),
      max_amount_quote: Number(displayDecimal(pair.maxDeposit)),
      min_amount_quote: Number(displayDecimal(pair.minDeposit)),
    },
  };
}

function oauthToken(ctx: SandboxContext, request: SandboxRequest, state: V1State): Reply {
  const body = bodyObject(request);
  if (body['grant_type'] !== 'password') {
    return { status: 400, body: { error: 'unsupported_grant_type' } };
  }
  const user = ctx.config.v1Users.find(
    (u) => u.username === body['username'] && u.password === body['password'],
  );
  if (!user)
    return { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid credentials given.' } };
  const token = randomBytes(20).toString('hex');
  state.tokens.set(token, user.username);
  return {
    status: 200,
    body: {
      access_token: token,
      token_type: 'Bearer',
      expires_in: 36_000,
      scope: 'read write',
      refresh_token: randomBytes(20).toString('hex'),
    },
  };
}

export function v1Routes(ctx: SandboxContext, state: V1State): Route[] {
  return [
    route('GET', '/orders/', (request) => {
      const user = bearerUser(request, state);
      const partnerId = request.caller?.apiKey?.partner.id;
      return pageOf(ctx, request, (o) =>
        user ? o.v1User === user : partnerId ? o.partnerId === partnerId : true,
      );
    }),
    route('POST', '/orders/', (request) => postV1Order(ctx, request, state)),
    route('GET', '/orders/{unique_reference}/', (request) => {
      try {
        return { status: 200, body: toV1Order(findOrder(ctx, request.params['unique_reference'] ?? '')) };
      } catch (error) {
        if (error instanceof HttpError) throw v1Error(404, messages.notFound);
        throw error;
      }
    }),
    route('GET', '/info/bulk/', (request) => {
      const now = ctx.clock.now();
      const mode = request.caller?.apiKey?.mode ?? 'cefi';
      const rates = ctx.world
        .pairs()
        .filter((p) => !p.disabled)
        .map((pair) =>
          toV1Rate(
            ctx.quotes.issue({
              pair,
              mode,
              actionable: false,
              markupFraction: 0n,
              markupBps: undefined,
              referralRate: undefined,
              depositAmount: undefined,
              partnerId: request.caller?.apiKey?.partner.id,
              now,
              ttlMs: ctx.config.quotes.ttlSeconds * 1000,
            }),
          ),
        );
      return { status: 200, body: rates };
    }),
    route('GET', '/get_price/{pair}/', (request) => getPrice(ctx, request)),
    route('POST', '/oauth2/token/', (request) => oauthToken(ctx, request, state)),
    route('GET', '/users/me/', (request) => {
      const username = requireUser(request, state);
      const user = ctx.config.v1Users.find((u) => u.username === username);
      return { status: 200, body: { username, email: user?.email ?? '' } };
    }),
    route('GET', '/user/me/orders/', (request) => {
      const username = requireUser(request, state);
      return pageOf(ctx, request, (o) => o.v1User === username);
    }),
    route('GET', '/pair/', () => ({ status: 200, body: ctx.world.pairs().map(toV1Pair) })),
    route('GET', '/pair/{name}/', (request) => {
      const pair = ctx.world.pair(request.params['name'] ?? '');
      if (!pair) throw v1Error(404, messages.notFound);
      return { status: 200, body: toV1Pair(pair) };
    }),
    route('GET', '/currency/', () => ({ status: 200, body: ctx.world.currencies().map(toV1Currency) })),
    route('GET', '/currency/{code}/', (request) => {
      const currency = ctx.world.currency(request.params['code'] ?? '');
      if (!currency) throw v1Error(404, messages.notFound);
      return { status: 200, body: toV1Currency(currency) };
    }),
    route('POST', '/pre_screening/', (request) => preScreeningV1(ctx, request)),
  ];
}
