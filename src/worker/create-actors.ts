// The create path's actors: POST /orders/, the lookup of a create in doubt (GET /orders/), and an operator's
// adoption. One exchange order is published by at most one order: a reference is ours only once our claim on it
// holds (a claim that says "another order's", or that cannot be confirmed, never leads to order.created: the create
// stays in doubt), a lookup takes no candidate while another order's POST of the same siblings is out (it may be
// about to claim what it just made), and "not created" is concluded only from a complete scan in which nothing
// even nearly matched (docs/decisions/create-in-doubt.md, create-lookup-matching.md).
import type { CreateEvidence, ExchangeFailure, ExchangeOrderView } from '../../machines/domain.ts';
import { createCodes } from '../../machines/domain.ts';
import type { CreateOrderInput, OrderActorFunctions } from '../../machines/order-types.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import { ExchangeError, toExchangeFailure } from '../exchange/errors.ts';
import type { RequestPriority, RequestShare } from '../exchange/request-budget.ts';
import type { CreateOrderRequest } from '../exchange/schemas.ts';
import type { CreatesInFlight } from '../redis/creates-in-flight.ts';
import type { ReferenceClaims } from '../redis/reference-claims.ts';
import { describeDifferences, matchCreate, siblingKeyOf, type MatchDifference } from './create-match.ts';

/** What made a create end otherwise than its POST's answer suggested, for a metric and a log line. */
export type CreateDoubtKind =
  'claimed_elsewhere' | 'reused_foreign' | 'claim_unconfirmed' | 'near_match' | 'lookup_unreachable';

export interface CreateDoubt {
  readonly kind: CreateDoubtKind;
  readonly orderId: string;
  readonly uniqueReference?: string;
  readonly message: string;
}

export interface CreateActorDeps {
  readonly client: ExchangeClient;
  readonly claims: ReferenceClaims;
  readonly inFlight: CreatesInFlight;
  readonly now: () => number;
  /** How far before the create in doubt to look for the order it may have created (clock skew allowance). */
  readonly lookupSkewMs: number;
  /** Pages of GET /orders/ a lookup reads at most; a window beyond them can never be read (lookup_unreachable). */
  readonly maxLookupPages: number;
  /** How long a POST's mark stays up at most: the POST's timeout and the claim after it. */
  readonly createMarkMs: number;
  readonly onCreateDoubt?: (doubt: CreateDoubt) => void;
}

/** What the create path takes from the fenced actors it is part of (exchange-actors.ts). */
export interface CreateActorContext {
  /** Waits for durability, then runs the call as the order's, failures stamped; `beforeSend` checks the lease. */
  readonly guarded: <T>(
    orderId: string,
    call: (beforeSend: () => void) => Promise<T>,
    opts?: { mayHaveTakenEffect?: boolean },
  ) => Promise<T>;
  /** An ExchangeFailure (an Error too) stamped with the clock, carrying the create's evidence when given. */
  readonly failure: (
    action: ExchangeFailure['action'],
    code: string,
    message: string,
    evidence?: CreateEvidence,
  ) => Error & ExchangeFailure;
  /** Claims a reference for an order (the state topic's owner first, then Redis); false: another order's. */
  readonly claim: (uniqueReference: string, orderId: string) => Promise<boolean>;
  /** The order whose durable record names the reference: null, one of another replica's partitions. */
  readonly ownerOfReference: (uniqueReference: string) => string | null | undefined;
}

/** Only CeFi orders are listed (GET /orders/), so only their lookups can mistake a sibling's order for theirs. */
const lookedUp = (mode: string): boolean => mode !== 'defi';

/** A little past the last sibling's mark: by then it claimed what it made, or its mark ran out. */
const deferMarginMs = 1_000;

/** True when a page of GET /orders/ is newest first (then a page entirely before the window ends the scan). */
function newestFirst(orders: readonly ExchangeOrderView[]): boolean {
  for (let i = 1; i < orders.length; i++) {
    if (Date.parse(orders[i - 1]?.createdOn ?? '') < Date.parse(orders[i]?.createdOn ?? '')) return false;
  }
  return true;
}

function requestOf(input: CreateOrderInput): CreateOrderRequest {
  return {
    deposit_currency: input.depositCurrency,
    withdraw_currency: input.withdrawCurrency,
    withdraw_address: input.withdrawAddress,
    ...(input.depositAmount ? { deposit_amount: input.depositAmount } : {}),
    ...(input.withdrawAmount && !input.depositAmount ? { withdraw_amount: input.withdrawAmount } : {}),
    ...(input.withdrawAddressExtraId ? { withdraw_address_extra_id: input.withdrawAddressExtraId } : {}),
    ...(input.refundAddress ? { refund_address: input.refundAddress } : {}),
    ...(input.refundAddressExtraId ? { refund_address_extra_id: input.refundAddressExtraId } : {}),
    ...(input.referralCode ? { referral_code: input.referralCode } : {}),
    ...(input.markup !== null ? { markup: input.markup } : {}),
    ...(input.side ? { side: input.side } : {}),
    ...(input.rateId && !input.isLimitOrder ? { rate_id: input.rateId } : {}),
    ...(input.isLimitOrder ? { is_limit_order: true } : {}),
    ...(input.isLimitOrder && input.limitTtlSeconds !== null ? { limit_ttl: input.limitTtlSeconds } : {}),
  };
}

const isNotFound = (error: unknown): boolean => error instanceof ExchangeError && error.httpStatus === 404;

export function createActors(
  deps: CreateActorDeps,
  ctx: CreateActorContext,
): Pick<OrderActorFunctions, 'createOrder' | 'findExistingOrder' | 'adoptOrder'> {
  const { client, now } = deps;
  const { guarded, failure, claim } = ctx;
  const told = (doubt: CreateDoubt): void => deps.onCreateDoubt?.(doubt);

  return {
    createOrder: (input, signal) =>
      guarded(
        input.orderId,
        async (leaseCheck) => {
          const foreign = new Set(input.foreignReferences ?? []);
          // Up before the POST leaves (each attempt renews it), so that no sibling's lookup takes what it makes
          // before its claim below.
          const siblings = lookedUp(input.mode) ? siblingKeyOf(input) : null;
          const beforeSend = async (): Promise<void> => {
            leaseCheck();
            if (siblings === null) return;
            await deps.inFlight.open(siblings, input.orderId, deps.createMarkMs).catch((error: unknown) => {
              throw failure(
                'backoff',
                'create_mark_unavailable',
                `the POST was not sent: its mark for sibling lookups could not be set (${(error as Error).message})`,
              );
            });
          };
          const closeMark = (): void => {
            if (siblings !== null) void deps.inFlight.close(siblings, input.orderId).catch(() => {});
          };
          let result: { order: ExchangeOrderView; reused: boolean };
          try {
            result = await client.createOrder(input.mode, requestOf(input), {
              priority: 'high',
              signal,
              beforeSend,
              fence: leaseCheck,
              ...(input.userTimezone ? { userTimezone: input.userTimezone } : {}),
            });
          } catch (error) {
            // No answer will be claimed by this call: an order its POST may have made is this order's lookup's to
            // find, in fair competition (claims) with its siblings' lookups.
            closeMark();
            throw error;
          }
          const reference = result.order.uniqueReference;
          const unknown = (
            code: string,
            message: string,
            evidence: CreateEvidence,
            kind: CreateDoubtKind,
          ) => {
            told({ kind, orderId: input.orderId, uniqueReference: reference, message });
            return failure('unknown_outcome', code, message, evidence);
          };
          // A reuse answering a POST that repeats no doubt names an order some other POST made: another order's.
          if (foreign.has(reference) || (result.reused && input.repeatsDoubt !== true)) {
            closeMark();
            throw unknown(
              createCodes.reusedForeign,
              `POST /orders/ was answered (${result.reused ? '200 reused' : 'created'}) with ${reference}, an exchange order of another order: not this order's`,
              { uniqueReference: reference, claim: 'another_order', created: false },
              'reused_foreign',
            );
          }
          // The claim before anything else: it is what makes the reference this order's (and no sibling's).
          let ours: boolean;
          try {
            ours = await claim(reference, input.orderId);
          } catch (error) {
            // Not known to be ours: in doubt; the lookup claims it later.
            closeMark();
            throw unknown(
              createCodes.claimUnconfirmed,
              `created ${reference}, but its claim could not be taken (${(error as Error).message}); the lookup claims it later`,
              { uniqueReference: reference, claim: 'unconfirmed', created: true },
              'claim_unconfirmed',
            );
          }
          closeMark();
          if (!ours)
            throw unknown(
              createCodes.claimedElsewhere,
              `created ${reference}, but another order holds it (its lookup took it first); this order looks for another or parks`,
              { uniqueReference: reference, claim: 'another_order', created: true },
              'claimed_elsewhere',
            );
          // Confirmed with a GET before order.created hands its deposit address out (docs/decisions/
          // confirm-before-created.md). A GET that fails leaves the create in doubt, with its reference: the
          // lookup asks for it first, the DeFi repeat is answered with it.
          const confirmed = await client
            .getOrder(
              input.mode,
              { uniqueReference: reference },
              { priority: 'high', signal, beforeSend: leaseCheck, fence: leaseCheck },
            )
            .catch((error: unknown) => {
              const cause = toExchangeFailure(error);
              throw failure(
                'unknown_outcome',
                'create_unconfirmed',
                `created ${reference}, but its confirming GET failed (${cause.code}): ${cause.message}`,
                { uniqueReference: reference, claim: 'ours', created: true },
              );
            });
          return { order: confirmed, reused: result.reused, at: now() };
        },
        { mayHaveTakenEffect: true },
      ),

    findExistingOrder: ({ create, since, parked }, signal) =>
      guarded(create.orderId, async (beforeSend) => {
        // GET /orders/ lists CeFi orders only (a DeFi create in doubt is repeated with its rate_id instead). A
        // parked order's re-check is held to its share of the budget, behind every other call.
        const budget: { priority: RequestPriority; share?: RequestShare } =
          parked === true ? { priority: 'low', share: 'parked_lookup' } : { priority: 'high' };
        const options = { ...budget, signal, beforeSend, fence: beforeSend };
        const foreign = new Set(create.foreignReferences ?? []);
        const known = create.knownReference ?? null;
        // A POST of this doubt made `known`, and another order holds it.
        let heldElsewhere = known !== null && foreign.has(known);

        // The reference the order already knows first: the one its POST was answered with.
        if (known !== null && !heldElsewhere) {
          if (await claim(known, create.orderId)) {
            const order = await client
              .getOrder(create.mode, { uniqueReference: known }, options)
              .catch((error: unknown) => {
                if (isNotFound(error)) return null; // an answer about no order: the scan decides
                throw error;
              });
            if (order !== null && matchCreate(order, create).kind !== 'other') return { order, at: now() };
          } else {
            heldElsewhere = true;
            foreign.add(known);
          }
        }

        // "Not created" only from a complete scan of the window in which the order could have been made.
        const from = since - deps.lookupSkewMs;
        const candidates: Array<{ order: ExchangeOrderView; differences: readonly MatchDifference[] }> = [];
        let cursor: string | undefined;
        for (let page = 0; ; page++) {
          if (page >= deps.maxLookupPages) {
            // The listing only grows: a window past the cap today is past it for good.
            const message = `GET /orders/ still had pages after ${deps.maxLookupPages} without reaching the window (from ${new Date(from).toISOString()}): this lookup can never finish; the order waits for order.settle`;
            told({ kind: 'lookup_unreachable', orderId: create.orderId, message });
            throw failure('fatal', createCodes.lookupUnreachable, message);
          }
          const result = await client.listOrders(create.mode, cursor ? { cursor } : {}, options);
          for (const order of result.results) {
            if (Date.parse(order.createdOn) < from || foreign.has(order.uniqueReference)) continue;
            const match = matchCreate(order, create);
            if (match.kind !== 'other')
              candidates.push({ order, differences: match.kind === 'near' ? match.differences : [] });
          }
          const allBefore =
            result.results.length > 0 &&
            result.results.every((order) => Date.parse(order.createdOn) < from) &&
            newestFirst(result.results);
          if (!result.next || allBefore) break;
          cursor = result.next;
        }

        // Candidates whose durable record names another order are that order's; the rest may be ours.
        const open = candidates.filter(({ order }) => {
          const owner = ctx.ownerOfReference(order.uniqueReference);
          return owner === undefined || owner === create.orderId;
        });
        if (open.length > 0) {
          // Another order's POST of the same siblings is out: what we see may be what it is about to claim.
          const othersOut = await deps.inFlight.othersOut(siblingKeyOf(create), create.orderId);
          if (othersOut > 0) return { order: null, recheckAt: now() + othersOut + deferMarginMs, at: now() };
        }
        // Oldest first: the earliest match is the likeliest to be this create's first attempt.
        open.sort((a, b) => Date.parse(a.order.createdOn) - Date.parse(b.order.createdOn));
        for (const { order, differences } of open) {
          if (differences.length === 0 && (await claim(order.uniqueReference, create.orderId)))
            return { order, at: now() };
        }
        // A near match another order claimed is explained; one nobody claimed may be ours, stored otherwise.
        const unexplained: string[] = [];
        for (const { order, differences } of open) {
          if (differences.length === 0) continue;
          const owner = await deps.claims.owner(order.uniqueReference);
          if (owner === null || owner === create.orderId)
            unexplained.push(`${order.uniqueReference} (${describeDifferences(differences)})`);
        }
        if (unexplained.length > 0) {
          const message = `GET /orders/ holds exchange orders that nearly match and belong to no order: ${unexplained.slice(0, 5).join(', ')}${unexplained.length > 5 ? ` and ${unexplained.length - 5} more` : ''}; ours may be one of them, so it is not created again`;
          told({ kind: 'near_match', orderId: create.orderId, message });
          throw failure('fatal', createCodes.nearMatch, message);
        }
        if (heldElsewhere)
          throw failure(
            'fatal',
            createCodes.claimedElsewhere,
            `POST /orders/ made exchange order ${known ?? '?'}, which another order holds, and no other matching order is free: this order is not created again`,
          );
        return { order: null, at: now() };
      }),

    adoptOrder: ({ create, uniqueReference }, signal) =>
      guarded(create.orderId, async (beforeSend) => {
        const order = await client.getOrder(
          create.mode,
          { uniqueReference },
          { priority: 'high', signal, beforeSend, fence: beforeSend },
        );
        // An operator may adopt an order whose amount the exchange stored otherwise (they read it); never one
        // whose pair, addresses or extra ids differ: the money would go elsewhere.
        const match = matchCreate(order, create);
        const misdirected =
          match.kind === 'near'
            ? match.differences.filter((d) => d.field !== 'deposit_amount' && d.field !== 'withdraw_amount')
            : [];
        if (match.kind === 'other' || misdirected.length > 0)
          throw failure(
            'fatal',
            'adopt_mismatch',
            `exchange order ${uniqueReference} does not match this order (${match.kind === 'other' ? 'currencies, withdraw address or amount differ' : describeDifferences(misdirected)})`,
          );
        if (!(await claim(uniqueReference, create.orderId)))
          throw failure(
            'fatal',
            'reference_owned',
            `exchange order ${uniqueReference} belongs to another order`,
          );
        return { order, at: now() };
      }),
  };
}
