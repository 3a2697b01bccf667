// The runtime's implementations of the order machine's actors, on the exchange client and Redis. Before every
// call with a side effect, an actor waits until the order's latest state (which names the intent) is durable in
// Kafka and checks that this replica still holds the order's lease; failures reach the machine as plain
// ExchangeFailure objects stamped with the runtime's clock.
import type { ExchangeFailure, ExchangeOrderView } from '../../machines/domain.ts';
import type { OrderActorFunctions, QuoteRequest } from '../../machines/order-types.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import { toExchangeFailure } from '../exchange/errors.ts';
import type { CreateOrderRequest } from '../exchange/schemas.ts';
import type { QuoteCooldown } from '../redis/quote-cooldown.ts';

export interface ExchangeActorDeps {
  client: ExchangeClient;
  cooldown: QuoteCooldown;
  /** Resolves when the order's state, with its intent, is durable; rejects when the order is no longer ours. */
  durable: (orderId: string) => Promise<void>;
  now: () => number;
  /** How far back to look for an order a lost POST may have created (clock skew allowance). */
  lookupSkewMs?: number;
  /** How many pages of GET /orders/ to search for it. */
  lookupPages?: number;
}

/** An ExchangeFailure (the machine's vocabulary) that is also an Error, stamped with the runtime's clock. */
class ActorFailure extends Error implements ExchangeFailure {
  readonly kind = 'exchange_failure';
  readonly action: ExchangeFailure['action'];
  readonly code: string;
  readonly httpStatus?: number;
  readonly retryAfterMs?: number;
  readonly at: number;

  constructor(failure: ExchangeFailure, at: number) {
    super(failure.message);
    this.name = 'ActorFailure';
    this.action = failure.action;
    this.code = failure.code;
    if (failure.httpStatus !== undefined) this.httpStatus = failure.httpStatus;
    if (failure.retryAfterMs !== undefined) this.retryAfterMs = failure.retryAfterMs;
    this.at = at;
  }
}

function stamped(error: unknown, at: number): ActorFailure {
  return error instanceof ActorFailure ? error : new ActorFailure(toExchangeFailure(error), at);
}

function sameDecimal(a: string | null | undefined, b: string | null | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return true;
  const norm = (v: string): string => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);
  return norm(a) === norm(b);
}

function quoteAmount(request: QuoteRequest): string {
  return request.depositAmount ?? request.withdrawAmount ?? '';
}

export interface ExchangeActors extends OrderActorFunctions {
  /** Exchange calls in progress (waiting for the request budget or for the exchange): the backpressure signal. */
  inflight(): number;
}

export function createExchangeActors(deps: ExchangeActorDeps): ExchangeActors {
  const { client, now } = deps;
  let inflight = 0;
  const skew = deps.lookupSkewMs ?? 120_000;
  const pages = deps.lookupPages ?? 5;

  // Counted from the moment the machine invokes the call (synchronously, as the transition is taken), so the
  // consumer sees the pressure before it takes the next command.
  const guarded = async <T>(orderId: string, call: () => Promise<T>): Promise<T> => {
    inflight++;
    try {
      try {
        await deps.durable(orderId);
      } catch (error) {
        // Not ours any more (lease lost, shutting down): no call is made; the machine sees a retryable failure
        // but its actor is being stopped anyway.
        throw new ActorFailure(
          {
            kind: 'exchange_failure',
            action: 'backoff',
            code: 'not_owner',
            message: (error as Error).message,
          },
          now(),
        );
      }
      return await call();
    } catch (error) {
      throw stamped(error, now());
    } finally {
      inflight--;
    }
  };

  return {
    inflight: () => inflight,
    acquireQuoteSlot: async (input) => {
      // The ~15 s cooldown concerns identical *actionable* quote requests; other quotes need no slot.
      if (!input.actionable) return { granted: true, at: now() };
      const decision = await deps.cooldown.tryAcquire(
        input.mode,
        input.pair,
        quoteAmount(input),
        input.cooldownMs,
      );
      return decision.granted
        ? { granted: true, at: now() }
        : { granted: false, retryAt: decision.retryAt, at: now() };
    },

    requestQuote: (input, signal) =>
      guarded(input.orderId, async () => {
        const rates = await client.getRates(
          input.mode,
          {
            pairs: input.pair,
            ...(input.depositAmount ? { deposit_amount: input.depositAmount } : {}),
            ...(input.actionable ? { actionable_quote: true } : {}),
            ...(input.markup !== null ? { markup: input.markup } : {}),
          },
          { priority: 'normal', signal },
        );
        const rate = rates.find((r) => r.pair === input.pair) ?? rates[0];
        if (!rate)
          throw new ActorFailure(
            {
              kind: 'exchange_failure',
              action: 'backoff',
              code: 'no_quote',
              message: `GET /rate/ returned no rate for ${input.pair}`,
            },
            now(),
          );
        return {
          rateId: rate.rate_id,
          rate: rate.rate,
          expiresAt: Number(rate.expiration_time_unix) * 1000,
          ...(rate.deposit_amount
            ? { depositAmount: rate.deposit_amount }
            : input.depositAmount
              ? { depositAmount: input.depositAmount }
              : {}),
          ...(rate.withdraw_amount ? { withdrawAmount: rate.withdraw_amount } : {}),
          minDepositAmount: rate.min_deposit_amount,
          maxDepositAmount: rate.max_deposit_amount,
          minWithdrawAmount: rate.min_withdraw_amount,
          maxWithdrawAmount: rate.max_withdraw_amount,
          at: now(),
        };
      }),

    preScreen: (input, signal) =>
      guarded(input.orderId, async () => {
        const result = await client.preScreen(
          input.mode,
          {
            ip: input.ip,
            pair: input.pair,
            ...(input.depositAmount ? { deposit_amount: input.depositAmount } : {}),
            ...(input.withdrawAmount && !input.depositAmount
              ? { withdraw_amount: input.withdrawAmount }
              : {}),
          },
          { priority: 'normal', signal },
        );
        return {
          status: result.status === 'failed' ? 'failed' : 'success',
          message: result.message ?? '',
          at: now(),
        };
      }),

    createOrder: (input) =>
      guarded(input.orderId, async () => {
        const body: CreateOrderRequest = {
          deposit_currency: input.depositCurrency,
          withdraw_currency: input.withdrawCurrency,
          withdraw_address: input.withdrawAddress,
          ...(input.depositAmount ? { deposit_amount: input.depositAmount } : {}),
          ...(input.withdrawAmount && !input.depositAmount ? { withdraw_amount: input.withdrawAmount } : {}),
          ...(input.withdrawAddressExtraId
            ? { withdraw_address_extra_id: input.withdrawAddressExtraId }
            : {}),
          ...(input.refundAddress ? { refund_address: input.refundAddress } : {}),
          ...(input.refundAddressExtraId ? { refund_address_extra_id: input.refundAddressExtraId } : {}),
          ...(input.referralCode ? { referral_code: input.referralCode } : {}),
          ...(input.markup !== null ? { markup: input.markup } : {}),
          ...(input.side ? { side: input.side } : {}),
          ...(input.rateId && !input.isLimitOrder ? { rate_id: input.rateId } : {}),
          ...(input.isLimitOrder ? { is_limit_order: true } : {}),
          ...(input.isLimitOrder && input.limitTtlSeconds !== null
            ? { limit_ttl: input.limitTtlSeconds }
            : {}),
        };
        const result = await client.createOrder(input.mode, body, {
          priority: 'high',
          ...(input.userTimezone ? { userTimezone: input.userTimezone } : {}),
        });
        return { order: result.order, reused: result.reused, at: now() };
      }),

    findExistingOrder: ({ create, since }, signal) =>
      guarded(create.orderId, async () => {
        // GET /orders/ lists CeFi orders only; a DeFi create is verified by repeating it with the same rate_id.
        const matches = (order: ExchangeOrderView): boolean =>
          order.depositCurrency.toUpperCase() === create.depositCurrency.toUpperCase() &&
          order.withdrawCurrency.toUpperCase() === create.withdrawCurrency.toUpperCase() &&
          order.withdrawAddress === create.withdrawAddress &&
          (create.depositAmount === null || sameDecimal(order.depositAmount, create.depositAmount)) &&
          (create.withdrawAmount === null ||
            create.depositAmount !== null ||
            sameDecimal(order.withdrawAmount, create.withdrawAmount)) &&
          Date.parse(order.createdOn) >= since - skew;
        let cursor: string | undefined;
        for (let page = 0; page < pages; page++) {
          const result = await client.listOrders(create.mode, cursor ? { cursor } : {}, {
            priority: 'high',
            signal,
          });
          const found = result.results.find(matches);
          if (found) return { order: found, at: now() };
          const oldest = result.results.at(-1);
          if (!result.next || (oldest && Date.parse(oldest.createdOn) < since - skew)) break;
          cursor = result.next;
        }
        return { order: null, at: now() };
      }),

    submitDeposit: (input, signal) =>
      guarded(input.orderId, async () => {
        const result = await client.submitDepositTransaction(
          input.mode,
          { uniqueReference: input.uniqueReference, depositTransaction: input.txHash },
          { priority: 'high', signal },
        );
        return { alreadyRecorded: result.alreadyRecorded, at: now() };
      }),

    fetchOrder: (input, signal) =>
      guarded(input.orderId, async () => ({
        order: await client.getOrder(
          input.mode,
          { uniqueReference: input.uniqueReference },
          { priority: 'low', signal },
        ),
        at: now(),
      })),
  };
}
