// v2 orders: POST /orders/ (201, or 200 for idempotent DeFi reuse), GET /orders/ (CeFi orders of the caller's
// partner, newest first, cursor pagination with `pagination.next` / `pagination.previous` and `results`, numeric
// `status` filter), GET /orders/{unique_reference}/, and PATCH with referral_code and deposit_transaction.
import { z } from 'zod';
import { resolveReferral } from './auth.ts';
import type { SandboxContext } from '../domain/context.ts';
import {
  bodyObject,
  bodySubject,
  route,
  v2Error,
  validationError,
  type Reply,
  type Route,
  type SandboxRequest,
} from './http-kit.ts';
import { messages } from '../wire/messages.ts';
import { createOrder, resolvePair } from '../domain/order-creation.ts';
import {
  cancelableStatuses,
  statusByCode,
  statusCodes,
  type OrderStatus,
} from '../domain/order-lifecycle.ts';
import type { Order } from '../domain/order-store.ts';
import { resolvePricingTerms } from '../domain/pricing-terms.ts';
import {
  booleanField,
  choiceField,
  currencyField,
  decimalField,
  integerField,
  parseFields,
  stringField,
} from '../wire/request-fields.ts';
import { markupCapFor, requireCaller } from './v2-market-routes.ts';
import { toV2Order } from '../wire/v2-representation.ts';

export const REFERRAL_CODE_PATTERN = /^[A-Za-z0-9_-]+$/;
export const referralCodeField = () =>
  stringField({ maxLength: 20, pattern: REFERRAL_CODE_PATTERN, patternMessage: 'Enter a valid value.' });

const createOrderSchema = z.object({
  deposit_currency: currencyField({ required: true }),
  withdraw_currency: currencyField({ required: true }),
  withdraw_amount: decimalField(),
  deposit_amount: decimalField(),
  withdraw_address: stringField({ maxLength: 255 }),
  withdraw_address_extra_id: stringField({ maxLength: 255 }),
  refund_address: stringField({ maxLength: 255 }),
  refund_address_extra_id: stringField({ maxLength: 255 }),
  side: choiceField(['BUY', 'SELL'] as const),
  rate_id: stringField({ maxLength: 255 }),
  is_limit_order: booleanField(),
  limit_ttl: integerField(),
  markup: integerField(),
  referral_rate: decimalField(),
  referral_code: referralCodeField(),
});

const patchOrderSchema = z.object({
  referral_code: referralCodeField(),
  deposit_transaction: stringField({ maxLength: 255 }),
});

/** The order, with every time-driven move that fell due applied (payment window, schedule). */
export function findOrder(ctx: SandboxContext, reference: string): Order {
  const order = ctx.orders.get(reference);
  if (!order) throw v2Error(404, messages.notFound);
  ctx.orders.sweepOrder(order, ctx.clock.now());
  return order;
}

const ORDER_DETAIL_ENDPOINT = 'GET /orders/{unique_reference}/';

/**
 * The order GET /orders/{unique_reference}/ answers with: the requested one, or under the get_other_order fault
 * another one (the fault's `otherReference`, else the newest other order). The fault is drawn only when another
 * order exists, so an armed `times` counts real substitutions.
 */
function orderAnswered(ctx: SandboxContext, requested: Order): Order {
  const armed = ctx.faults
    .list()
    .some((f) => f.spec.target === 'endpoint' && f.spec.kind === 'get_other_order');
  if (!armed) return requested;
  const others = ctx.orders.newestFirst((o) => o !== requested);
  if (others.length === 0) return requested;
  const fault = ctx.faults.take(ORDER_DETAIL_ENDPOINT, 'get_other_order');
  if (!fault) return requested;
  const other =
    fault.otherReference === undefined
      ? others[0]
      : others.find((o) => o.uniqueReference === fault.otherReference);
  if (!other) return requested;
  ctx.orders.sweepOrder(other, ctx.clock.now());
  return other;
}

async function postOrder(ctx: SandboxContext, request: SandboxRequest): Promise<Reply> {
  const caller = requireCaller(request);
  const apiKey = caller.apiKey;
  if (!apiKey) throw v2Error(401, messages.credentialsNotProvided);
  const fields = parseFields(createOrderSchema, bodyObject(request));
  const referral = resolveReferral(caller, ctx.world, [
    fields.referral_code,
    request.query.get('ref') ?? undefined,
  ]);
  const terms = resolvePricingTerms({
    markup: fields.markup,
    referralRate: fields.referral_rate,
    referral,
    capBps: markupCapFor(ctx, caller),
  });
  if (!fields.deposit_currency || !fields.withdraw_currency) throw v2Error(400, messages.required);
  const pair = resolvePair(ctx, fields.deposit_currency, fields.withdraw_currency);
  const outcome = await createOrder(ctx, {
    endpoint: 'POST /orders/',
    mode: apiKey.mode,
    apiKey: apiKey.key,
    partnerId: apiKey.partner.id,
    v1User: undefined,
    pair,
    side: fields.side ?? 'BUY',
    depositAmount: fields.deposit_amount,
    withdrawAmount: fields.withdraw_amount,
    withdrawAddress: fields.withdraw_address,
    withdrawAddressExtraId: fields.withdraw_address_extra_id,
    refundAddress: fields.refund_address,
    refundAddressExtraId: fields.refund_address_extra_id,
    rateId: fields.rate_id,
    isLimitOrder: fields.is_limit_order ?? false,
    limitTtl: fields.limit_ttl,
    terms,
    referral,
    subject: bodySubject(request),
  });
  return { status: outcome.created ? 201 : 200, body: toV2Order(outcome.order) };
}

interface Cursor {
  /** Sequence number of the boundary order. */
  s: number;
  /** n: older than s; p: newer than s. */
  d: 'n' | 'p';
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeCursor(text: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<Cursor>;
    if (typeof value.s === 'number' && (value.d === 'n' || value.d === 'p'))
      return { s: value.s, d: value.d };
  } catch {
    // fall through to the exchange's answer for a bad cursor
  }
  throw v2Error(404, 'Invalid cursor');
}

function parseStatusFilter(text: string | null): Set<OrderStatus> | undefined {
  if (text === null || text === '') return undefined;
  const statuses = new Set<OrderStatus>();
  for (const part of text.split(',')) {
    const trimmed = part.trim();
    const status = /^\d+$/.test(trimmed) ? statusByCode(Number(trimmed)) : undefined;
    if (!status) {
      throw validationError({
        status: [`Select a valid choice. ${trimmed} is not one of the available choices.`],
      });
    }
    statuses.add(status);
  }
  return statuses;
}

function listOrders(ctx: SandboxContext, request: SandboxRequest): Reply {
  const caller = requireCaller(request);
  const partnerId = caller.apiKey?.partner.id;
  const statuses = parseStatusFilter(request.query.get('status'));
  const cursorText = request.query.get('cursor');
  const cursor = cursorText ? decodeCursor(cursorText) : undefined;
  const pageSize = ctx.config.orders.v2PageSize;
  ctx.orders.sweep(ctx.clock.now());
  const matches = (o: Order): boolean =>
    o.partnerId === partnerId && o.mode !== 'defi' && (!statuses || statuses.has(o.status));
  // Newest first; a cursor names the seq a page ends at and the direction to go from there.
  let page: Order[];
  if (!cursor) page = ctx.orders.olderThan(Number.POSITIVE_INFINITY, matches, pageSize);
  else if (cursor.d === 'n') page = ctx.orders.olderThan(cursor.s, matches, pageSize);
  else page = ctx.orders.newerThan(cursor.s, matches, pageSize);
  const first = page[0];
  const last = page[page.length - 1];
  const link = (c: Cursor): string => {
    const url = new URL(request.url);
    url.searchParams.set('cursor', encodeCursor(c));
    return url.toString();
  };
  const hasOlder = last !== undefined && ctx.orders.olderThan(last.seq, matches, 1).length > 0;
  const hasNewer = first !== undefined && ctx.orders.newerThan(first.seq, matches, 1).length > 0;
  return {
    status: 200,
    body: {
      pagination: {
        next: hasOlder && last ? link({ s: last.seq, d: 'n' }) : null,
        previous: hasNewer && first ? link({ s: first.seq, d: 'p' }) : null,
      },
      results: page.map(toV2Order),
    },
  };
}

function patchOrder(ctx: SandboxContext, request: SandboxRequest): Reply {
  const caller = requireCaller(request);
  const order = findOrder(ctx, request.params['unique_reference'] ?? '');
  const fields = parseFields(patchOrderSchema, bodyObject(request));
  const now = ctx.clock.now();
  if (fields.referral_code !== undefined) {
    const referral = resolveReferral(caller, ctx.world, [fields.referral_code]);
    if (referral) order.referralCode = { code: referral.code, at: now };
  }
  if (fields.deposit_transaction !== undefined) {
    const hash = fields.deposit_transaction;
    if (ctx.orders.depositHashOwner(hash) !== undefined) {
      const message = messages.depositTransactionExists(hash);
      throw v2Error(400, message, { deposit_transaction: [message] });
    }
    if (!cancelableStatuses.includes(order.status)) {
      throw validationError({
        deposit_transaction: [
          `Order ${order.uniqueReference} is not awaiting a deposit (status ${order.status}).`,
        ],
      });
    }
    ctx.orders.recordDepositTransaction(order, hash, now);
  }
  return { status: 200, body: toV2Order(order) };
}

export function v2OrderRoutes(ctx: SandboxContext): Route[] {
  return [
    route('POST', '/orders/', (request) => postOrder(ctx, request)),
    route('GET', '/orders/', (request) => listOrders(ctx, request)),
    route('GET', '/orders/{unique_reference}/', (request) => ({
      status: 200,
      body: toV2Order(orderAnswered(ctx, findOrder(ctx, request.params['unique_reference'] ?? ''))),
    })),
    route('PATCH', '/orders/{unique_reference}/', (request) => patchOrder(ctx, request)),
  ];
}

export { statusCodes };
