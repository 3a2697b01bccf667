// The runtime's implementations of the order machine's actors, on the exchange client and Redis. They are built
// from the client, the cooldown, the claims and a clock; the order host hands them its barrier (through the machine
// binding it owns). Before every call with a side effect, an actor waits until the order's latest state (which
// names the intent) is durable in Kafka; the machine's status GET, a read, waits for no write. Every request checks
// that this replica still holds the order's lease as it leaves; failures reach the machine as plain ExchangeFailure
// objects stamped with the runtime's clock. The create path (POST, the lookup of a create in doubt, adoption) lives
// in create-actors.ts, on the same fencing.
import { sameTransactionHash, type CreateEvidence, type ExchangeFailure } from '../../machines/domain.ts';
import type {
  FetchOrderInput,
  FetchOrderOutput,
  OrderActorFunctions,
  QuoteRequest,
} from '../../machines/order-types.ts';
import { checkAddressPairing } from '../exchange/address-pairing.ts';
import type { CurrencyCatalog } from '../exchange/currency-catalog.ts';
import { createOrderTimeoutMs, type ExchangeClient } from '../exchange/client.ts';
import { toExchangeFailure } from '../exchange/errors.ts';
import { randomUUID } from 'node:crypto';
import type { CreatesInFlight } from '../redis/creates-in-flight.ts';
import type { CooldownDecision, QuoteCooldown } from '../redis/quote-cooldown.ts';
import type { ReferenceClaims } from '../redis/reference-claims.ts';
import { createActors, type CreateActorDeps, type CreateDoubt } from './create-actors.ts';
import { statusReadsAtCapacity, type OrderBarrier } from './machine-binding.ts';

export type { OrderBarrier };

export interface ExchangeActorDeps {
  client: ExchangeClient;
  cooldown: QuoteCooldown;
  /** Who owns which exchange order across the fleet (taken before an order adopts or records a reference). */
  claims: ReferenceClaims;
  /** The CeFi POSTs out right now, per siblings: a lookup takes nothing another order's POST may be making. */
  inFlight: CreatesInFlight;
  /** Told of each create that did not end as its POST's answer suggested (a metric and a log line). */
  onCreateDoubt?: (doubt: CreateDoubt) => void;
  now: () => number;
  /** The exchange's currency and network records (cached); absent = the pairing check is skipped. */
  catalog?: Pick<CurrencyCatalog, 'snapshot'>;
  /** Told what the pairing check could not verify (no network to compare with, an unknown format). */
  onUnchecked?: (orderId: string, unchecked: readonly string[]) => void;
  /** How far before the create in doubt to look for the order it may have created (clock skew allowance). */
  lookupSkewMs?: number;
  /**
   * A safety cap on pages of GET /orders/; reaching it before the window means the lookup can never finish
   * (lookup_unreachable: the order stays parked, not re-checked), never "not found".
   */
  maxLookupPages?: number;
  /** How long a POST's mark for sibling lookups stays up at most (default: twice the create timeout). */
  createMarkMs?: number;
  /**
   * Status reads of orders (GET /orders/{ref}/: polls, hints' GETs, polls made at rest) that may be out at once,
   * waiting for the request budget or the exchange (default: no cap; src/composition/exchange.ts: what the budget
   * admits in 30 s). One more fails at once as throttled (`status_reads_at_capacity`): the machine takes it as its
   * poll's failure and polls again after at least the poll interval (at rest, bounded, for a resting order). Reads
   * only: nothing that moves money, no quote, no lookup of a create in doubt is ever refused here.
   */
  maxStatusReads?: number;
  /** Told of each status read refused by maxStatusReads. */
  onStatusReadRefused?: () => void;
}

/**
 * How long a granted quote slot is held, beyond the cooldown itself, while its request waits to leave (durability,
 * budget). Short: the slot is claimed again as the request leaves, so a hold that ran out only means another try.
 */
const slotHoldMs = 10_000;
/** How long the slot is held from the moment an actionable request leaves (its timeout is 15 s or more). */
const actionableSendHoldMs = 60_000;

/** An ExchangeFailure (the machine's vocabulary) that is also an Error, stamped with the runtime's clock. */
class ActorFailure extends Error implements ExchangeFailure {
  readonly kind = 'exchange_failure';
  readonly action: ExchangeFailure['action'];
  readonly code: string;
  readonly httpStatus?: number;
  readonly retryAfterMs?: number;
  readonly evidence?: CreateEvidence;
  readonly at: number;

  constructor(failure: ExchangeFailure, at: number) {
    super(failure.message);
    this.name = 'ActorFailure';
    this.action = failure.action;
    this.code = failure.code;
    if (failure.httpStatus !== undefined) this.httpStatus = failure.httpStatus;
    if (failure.retryAfterMs !== undefined) this.retryAfterMs = failure.retryAfterMs;
    if (failure.evidence !== undefined) this.evidence = failure.evidence;
    this.at = at;
  }
}

function stamped(error: unknown, at: number, mayHaveTakenEffect: boolean): ActorFailure {
  return error instanceof ActorFailure
    ? error
    : new ActorFailure(toExchangeFailure(error, { mayHaveTakenEffect }), at);
}

function quoteAmount(request: QuoteRequest): string {
  return request.depositAmount ?? request.withdrawAmount ?? '';
}

export interface ExchangeActors {
  /** The machine's actors, fenced by the order host's barrier. */
  actors: (barrier: OrderBarrier) => OrderActorFunctions;
  /** Exchange calls in progress (waiting for the request budget or for the exchange): the backpressure signal. */
  inflight: () => number;
  /**
   * Resolves once no call of this order is in progress, or after `timeoutMs`. A lease is released only after
   * this, so a request already sent (a POST in flight) ends before another replica may act for the order.
   */
  settled: (orderId: string, timeoutMs: number) => Promise<void>;
  /** True while a call of this order is in progress (such an order is never passivated). */
  busy: (orderId: string) => boolean;
  /**
   * The routine poll of an order resting without an actor, made by the order host (a GET moves nothing: no lease,
   * no durability wait): the machine's fetchOrder, with the same priority, clock and failures. `mayAsk` runs as the
   * request leaves and throws when the order no longer rests; it is counted like any call of the order.
   */
  pollResting: (input: FetchOrderInput, mayAsk: () => void, signal: AbortSignal) => Promise<FetchOrderOutput>;
}

export function createExchangeActors(deps: ExchangeActorDeps): ExchangeActors {
  const { client, now } = deps;
  let inflight = 0;
  const calls = new Map<string, Set<Promise<unknown>>>();
  /** The cooldown slot each order holds between acquireQuoteSlot and its request (token, window). */
  const quoteSlots = new Map<string, { token: string; cooldownMs: number }>();
  const createDeps: CreateActorDeps = {
    client,
    claims: deps.claims,
    inFlight: deps.inFlight,
    now,
    lookupSkewMs: deps.lookupSkewMs ?? 120_000,
    maxLookupPages: deps.maxLookupPages ?? 1_000,
    createMarkMs: deps.createMarkMs ?? 2 * createOrderTimeoutMs,
    ...(deps.onCreateDoubt ? { onCreateDoubt: deps.onCreateDoubt } : {}),
  };
  const maxStatusReads = deps.maxStatusReads ?? Number.POSITIVE_INFINITY;
  let statusReads = 0;

  /**
   * A status read (GET /orders/{ref}/), counted while out; refused at once beyond maxStatusReads. Under an overload
   * of reads (an outage's retries, a burst of hints or deadlines) each one waited in the request budget's queue in
   * memory, with its promise chain, span and abort controller, however long that queue had grown.
   */
  const statusRead = <T>(call: () => Promise<T>): Promise<T> => {
    if (statusReads >= maxStatusReads) {
      deps.onStatusReadRefused?.();
      return Promise.reject(
        failure(
          'throttled',
          statusReadsAtCapacity,
          `${statusReads} status reads are already waiting for the request budget or the exchange; this one is left to the order's next poll`,
        ),
      );
    }
    statusReads++;
    return call().finally(() => {
      statusReads--;
    });
  };

  const failure = (
    action: ExchangeFailure['action'],
    code: string,
    message: string,
    evidence?: CreateEvidence,
  ): ActorFailure =>
    new ActorFailure(
      { kind: 'exchange_failure', action, code, message, ...(evidence ? { evidence } : {}) },
      now(),
    );

  const settled = async (orderId: string, timeoutMs: number): Promise<void> => {
    const pending = calls.get(orderId);
    if (!pending || pending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...pending]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  };

  /**
   * Runs a call of the order, counted from the moment it is asked for (synchronously, as the machine takes the
   * transition that invokes it, so the consumer sees the pressure before it takes the next command) until it ends;
   * what it throws reaches the machine as an ExchangeFailure stamped with the clock.
   */
  const tracked = <T>(orderId: string, call: () => Promise<T>, mayHaveTakenEffect: boolean): Promise<T> => {
    inflight++;
    const run = call().catch((error: unknown) => {
      throw stamped(error, now(), mayHaveTakenEffect);
    });
    let set = calls.get(orderId);
    if (!set) calls.set(orderId, (set = new Set()));
    const entry = run.finally(() => {
      inflight--;
      set.delete(entry);
      if (set.size === 0 && calls.get(orderId) === set) calls.delete(orderId);
    });
    entry.catch(() => {});
    set.add(entry);
    return run;
  };

  return {
    actors: (barrier) => fencedActors(barrier),
    inflight: () => inflight,
    settled,
    busy: (orderId) => (calls.get(orderId)?.size ?? 0) > 0,
    pollResting: (input, mayAsk, signal) =>
      tracked(
        input.orderId,
        () =>
          statusRead(async () => ({
            order: await client.getOrder(
              input.mode,
              { uniqueReference: input.uniqueReference },
              { priority: 'low', signal, beforeSend: mayAsk, fence: mayAsk },
            ),
            at: now(),
          })),
        false,
      ),
  };

  function fencedActors(barrier: OrderBarrier): OrderActorFunctions {
    /** Throws unless this replica still holds the order's lease: run as each request of the order leaves. */
    const leaseCheck = (orderId: string) => (): void => {
      if (!barrier.mayAct(orderId))
        throw failure('backoff', 'not_owner', `order ${orderId} is no longer driven by this replica`);
    };

    // Counted from the moment the machine invokes the call (synchronously, as the transition is taken), so the
    // consumer sees the pressure before it takes the next command.
    const guarded = <T>(
      orderId: string,
      call: (beforeSend: () => void) => Promise<T>,
      opts: { mayHaveTakenEffect?: boolean } = {},
    ): Promise<T> => {
      // Fencing: the lease is checked again after every wait (durability, budget), as the request leaves.
      const beforeSend = leaseCheck(orderId);
      return tracked(
        orderId,
        async () => {
          try {
            await barrier.durable(orderId);
          } catch (error) {
            // Not ours any more, or its intent could not be written: no call is made.
            throw failure('backoff', 'not_owner', (error as Error).message);
          }
          return await call(beforeSend);
        },
        opts.mayHaveTakenEffect === true,
      );
    };

    /**
     * A read of the order's exchange state (the machine's status GET): it moves nothing, so it waits for none of the
     * order's writes (a hint's GET leaves at once, not after the commit of the order's last change); the lease is
     * still checked as the request leaves. Its answer is written after everything before it (the journal keeps
     * an order's writes in order).
     */
    const read = <T>(orderId: string, call: (beforeSend: () => void) => Promise<T>): Promise<T> =>
      tracked(orderId, () => call(leaseCheck(orderId)), false);

    /** Claims a reference for an order; false when another order owns it (durably or by claim). */
    const claim = async (uniqueReference: string, orderId: string): Promise<boolean> => {
      // null: an order of a partition this replica does not own records it (always another order than this one).
      const owner = barrier.ownerOfReference(uniqueReference);
      if (owner !== undefined && owner !== orderId) return false;
      return deps.claims.claim(uniqueReference, orderId);
    };

    return {
      // Local (the catalog is shared and read-only): it neither reaches the exchange for this order nor needs the
      // order's record durable first, so a new order's first record can be written past it (createOrder).
      checkAddress: (input, signal) =>
        tracked(
          input.orderId,
          async () => {
            if (!deps.catalog) return { ok: true, at: now() };
            const snapshot = await deps.catalog.snapshot({ signal });
            const result = checkAddressPairing(
              {
                deposit_currency: input.depositCurrency,
                withdraw_currency: input.withdrawCurrency,
                withdraw_address: input.withdrawAddress,
                ...(input.withdrawNetwork !== null ? { withdraw_network: input.withdrawNetwork } : {}),
                ...(input.refundAddress !== null ? { refund_address: input.refundAddress } : {}),
                ...(input.refundNetwork !== null ? { refund_network: input.refundNetwork } : {}),
              },
              snapshot,
            );
            if (!result.ok) return { ok: false, code: result.reason, message: result.message, at: now() };
            if (result.unchecked.length > 0) deps.onUnchecked?.(input.orderId, result.unchecked);
            return { ok: true, at: now() };
          },
          false,
        ),
      acquireQuoteSlot: async (input) => {
        // The ~15 s cooldown concerns identical *actionable* quote requests; other quotes need no slot. The slot is
        // held (not yet counted) until the request leaves; see requestQuote.
        if (!input.actionable) return { granted: true, at: now() };
        const token = `${input.orderId}:${randomUUID()}`;
        const decision = await deps.cooldown.tryAcquire(
          input.mode,
          input.pair,
          quoteAmount(input),
          input.cooldownMs + slotHoldMs,
          now(),
          token,
        );
        // A slot still held by a request about to leave (or in flight) is re-armed to the bare cooldown once that
        // request completes: look again within one cooldown rather than waiting out the whole hold.
        if (!decision.granted)
          return { granted: false, retryAt: Math.min(decision.retryAt, now() + input.cooldownMs), at: now() };
        quoteSlots.set(input.orderId, { token, cooldownMs: input.cooldownMs });
        return { granted: true, at: now() };
      },

      requestQuote: (input, signal) =>
        guarded(input.orderId, async (leaseCheck) => {
          const slot = input.actionable ? quoteSlots.get(input.orderId) : undefined;
          if (input.actionable) quoteSlots.delete(input.orderId);
          let sent = false;
          // The cooldown is counted between requests as the exchange sees them: the slot is re-armed as the request
          // leaves (after every wait) and once more when it has completed, whatever the answer.
          const rearm = async (windowMs: number): Promise<CooldownDecision | undefined> =>
            input.actionable && slot
              ? deps.cooldown.tryAcquire(
                  input.mode,
                  input.pair,
                  quoteAmount(input),
                  windowMs,
                  now(),
                  slot.token,
                )
              : undefined;
          const beforeSend = async (): Promise<void> => {
            leaseCheck();
            if (!input.actionable) return;
            if (!slot)
              throw failure(
                'throttled',
                'quote_cooldown',
                'no cooldown slot is held for this actionable quote',
              );
            const decision = await rearm(slot.cooldownMs + actionableSendHoldMs);
            if (decision && !decision.granted) {
              const failed = failure(
                'throttled',
                'quote_cooldown',
                'an identical actionable quote request holds the cooldown',
              );
              throw Object.assign(failed, { retryAfterMs: Math.max(0, decision.retryAt - now()) });
            }
            sent = true;
          };
          try {
            const rates = await client.getRates(
              input.mode,
              {
                pairs: input.pair,
                ...(input.depositAmount ? { deposit_amount: input.depositAmount } : {}),
                ...(input.actionable ? { actionable_quote: true } : {}),
                ...(input.markup !== null ? { markup: input.markup } : {}),
              },
              { priority: 'normal', signal, beforeSend, fence: leaseCheck },
            );
            const rate = rates.find((r) => r.pair === input.pair) ?? rates[0];
            if (!rate) throw failure('backoff', 'no_quote', `GET /rate/ returned no rate for ${input.pair}`);
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
          } finally {
            if (sent && slot) await rearm(slot.cooldownMs).catch(() => undefined);
          }
        }),

      preScreen: (input, signal) =>
        guarded(input.orderId, async (beforeSend) => {
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
            { priority: 'normal', signal, beforeSend, fence: beforeSend },
          );
          return {
            status: result.status === 'failed' ? 'failed' : 'success',
            message: result.message ?? '',
            at: now(),
          };
        }),

      ...createActors(createDeps, { guarded, failure, claim, ownerOfReference: barrier.ownerOfReference }),

      submitDeposit: (input, signal) =>
        guarded(input.orderId, async (beforeSend) => {
          const result = await client.submitDepositTransaction(
            input.mode,
            { uniqueReference: input.uniqueReference, depositTransaction: input.txHash },
            { priority: 'high', signal, beforeSend, fence: beforeSend },
          );
          if (result.alreadyRecorded) {
            // "already exists" is also the answer when the hash is recorded on ANOTHER order: success only if ours.
            const order = await client.getOrder(
              input.mode,
              { uniqueReference: input.uniqueReference },
              { priority: 'high', signal, beforeSend, fence: beforeSend },
            );
            if (!sameTransactionHash(order.depositTransaction, input.txHash))
              throw failure(
                'fatal',
                'deposit_hash_on_another_order',
                `the exchange already knows deposit transaction ${input.txHash.slice(0, 80)}, but not on this order (it carries "${order.depositTransaction.slice(0, 80)}")`,
              );
          }
          return { alreadyRecorded: result.alreadyRecorded, at: now() };
        }),

      fetchOrder: (input, signal) =>
        read(input.orderId, (beforeSend) =>
          statusRead(async () => ({
            order: await client.getOrder(
              input.mode,
              { uniqueReference: input.uniqueReference },
              { priority: 'low', signal, beforeSend, fence: beforeSend },
            ),
            at: now(),
          })),
        ),
    };
  }
}
