// Which stored orders may lose their actor while they wait, and until when (machines/order-passivation.ts): only an
// open order monitoring between polls, with its deposit region in a state its restore routes back to.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  confirmedByListing,
  confirmedByPoll,
  onlyConfirms,
  onlyStartsAPoll,
  onlyStartsAQuote,
  onlyWaitsForHints,
  passiveUntil,
  pollDeferrableUntil,
  pollDeferralMarginMs,
  pollDueAtRest,
  restingPlan,
  sameJson,
} from '../../../machines/order-passivation.ts';
import type { PersistedOrder } from '../../../machines/order-persistence.ts';
import { fetchOrderInputOf, pollIntervalOf } from '../../../machines/order-context.ts';
import {
  OrderHarness,
  T0,
  exchangeOrder,
  fails,
  failure,
  granted,
  ok,
  orderInput,
  quoteReply,
} from './order-harness.ts';
import type { Script } from './order-harness.ts';

async function openOrder(script: Script = {}, fixedRateDeadline: string | null = null) {
  return OrderHarness.start(orderInput({ mode: 'cefi' }), {
    createOrder: [ok({ order: exchangeOrder({ fixedRateDeadline }), reused: false })],
    ...script,
  });
}

/** restingPlan (the restore's one reading of a stored order) against the two questions asked apart. */
function expectPlanOf(persisted: PersistedOrder): void {
  const wakeAt = passiveUntil(persisted);
  expect(restingPlan(persisted)).toEqual(
    wakeAt === null ? null : { wakeAt, pollDeferrableUntil: pollDeferrableUntil(persisted) },
  );
}

describe('pollDeferrableUntil', () => {
  it('lets a resting order put its routine poll off to 60 s after its last confirmation, less a margin', async () => {
    const h = await openOrder();
    expect(passiveUntil(h.persisted())).toBe(T0 + 30_000);
    expect(pollDeferrableUntil(h.persisted())).toBe(T0 + 60_000 - pollDeferralMarginMs);
    expectPlanOf(h.persisted());
    // Confirmed again by its poll at 30 s: the bound moves with it.
    await h.advance(30_000);
    await h.answer('fetchOrder', ok({ order: exchangeOrder() }));
    expect(pollDeferrableUntil(h.persisted())).toBe(T0 + 90_000 - pollDeferralMarginMs);
  });

  it('never puts a poll off past another deadline, nor a wake that is not the poll', async () => {
    const deadline = T0 + 45_000;
    const fixedRateDeadline = new Date(deadline).toISOString();
    const h = await openOrder(
      { fetchOrder: [ok({ order: exchangeOrder({ fixedRateDeadline }) })] },
      fixedRateDeadline,
    );
    // The poll at 30 s comes first; it may wait until the payment deadline, not beyond.
    expect(pollDeferrableUntil(h.persisted())).toBe(deadline);
    await h.advance(30_000);
    // Next: the payment deadline (45 s) before the poll (60 s): nothing to put off.
    expect(passiveUntil(h.persisted())).toBe(deadline);
    expect(pollDeferrableUntil(h.persisted())).toBeNull();
    expectPlanOf(h.persisted());

    const retrying = await openOrder({ submitDeposit: [fails('throttled', { retryAfterMs: 8_000 })] });
    await retrying.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 });
    expect(pollDeferrableUntil(retrying.persisted())).toBeNull();
    expectPlanOf(retrying.persisted());
    const quoting = await OrderHarness.start(orderInput({ mode: 'cefi' }), {});
    expect(pollDeferrableUntil(quoting.persisted())).toBeNull();
    expectPlanOf(quoting.persisted());
  });
});

describe('confirmedByListing', () => {
  it("leaves a resting order's persisted form exactly as the machine's own LISTED confirmation does, and only then", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 25_000 }),
        fc.integer({ min: -10_000, max: 10_000 }),
        fc.constantFrom('INITIAL', 'PAID'),
        async (elapsed, pageAge, status) => {
          const h = await openOrder();
          await h.advance(elapsed);
          const before = h.persisted();
          const row = { status, at: T0 + elapsed - pageAge };
          const confirmed = confirmedByListing(before, row);
          await h.send({ type: 'LISTED', ...row });
          const after = h.persisted();
          const tookIt = status === 'INITIAL' && row.at >= T0;
          if (tookIt) {
            expect(confirmed).toEqual(after);
            expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
            expect(passiveUntil(confirmed!)).toBe(Math.max(T0 + 30_000, row.at + 60_000));
          } else {
            // Another status (a GET now) or a page older than the last confirmation (nothing): not a confirmation.
            expect(confirmed).toBeNull();
          }
          h.stop();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('is null for an order that is not only waiting', async () => {
    const quoting = await OrderHarness.start(orderInput({ mode: 'cefi' }), {});
    expect(confirmedByListing(quoting.persisted(), { status: 'INITIAL', at: T0 })).toBeNull();
  });
});

describe('pollDueAtRest and confirmedByPoll', () => {
  it("leave a resting order exactly as the machine's POLLED and its own poll do when the answer only confirms it, and are null for any news", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 20_000 }),
        fc.constantFrom('same', 'status', 'deposit transaction', 'amount', 'completed', 'stale'),
        fc.boolean(),
        async (late, variant, informed) => {
          const h = await openOrder();
          // A webhook naming the status already confirmed: webhooks keep the order informed (the longer interval).
          if (informed) await h.send({ type: 'WEBHOOK_HINT', status: 'INITIAL', at: T0 + 1_000 });
          const before = h.persisted();
          const pollAt = before.context.nextPollAt!;
          const at = pollAt + late;
          expect(pollDueAtRest(before, pollAt - 1)).toBeNull();
          expect(pollDueAtRest(before, at)).toEqual({
            request: { orderId: before.context.request.orderId, mode: 'cefi', uniqueReference: 'EXREF1' },
            // The exchange order's payment deadline, still to come.
            nextDeadline: before.context.paymentDeadline,
          });
          expect(before.context.paymentDeadline).toBeGreaterThan(at);
          const order = exchangeOrder(
            variant === 'status'
              ? { status: 'PAID' }
              : variant === 'deposit transaction'
                ? { depositTransaction: '0xdeposit-tx' }
                : variant === 'amount'
                  ? { depositAmount: '1.5' }
                  : variant === 'completed'
                    ? { status: 'COMPLETED' }
                    : {},
          );
          const answer = { order, at: variant === 'stale' ? before.context.confirmedAt! - 1 : at };
          const confirmed = confirmedByPoll(before, answer);
          // The machine restored from the same record, handed the answer as POLLED.
          const restored = await OrderHarness.restore(before, at);
          await restored.send({ type: 'POLLED', output: answer });
          if (variant === 'same') {
            expect(confirmed).toEqual(restored.persisted());
            expect(onlyConfirms(before, confirmed!)).toBe(true);
            expect(confirmed!.context.nextPollAt).toBe(at + pollIntervalOf(confirmed!.context));
            // And as its own poll leaves it, live, at the same time.
            await h.advance(at - h.clock.now());
            await h.answer('fetchOrder', ok({ order }));
            expect(confirmed).toEqual(h.persisted());
            expect(restored.types()).toEqual([]);
          } else {
            expect(confirmed).toBeNull();
            if (variant === 'stale')
              expect(restored.persisted()).toEqual({
                ...before,
                savedAt: restored.persisted().savedAt,
                context: { ...before.context, now: restored.persisted().context.now },
              });
            if (variant === 'status') expect(restored.types()).toEqual(['order.status_changed']);
            if (variant === 'completed') {
              expect(restored.state).toBe('completed');
              expect(restored.types()).toEqual(['order.status_changed', 'order.completed']);
            }
          }
          h.stop();
          restored.stop();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('are null when the routine poll is not all the order has to do', async () => {
    const hinted = await openOrder();
    await hinted.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 1_000 });
    const waiting = hinted.persisted();
    expect(pollDueAtRest(waiting, T0 + 30_000)).toBeNull();
    expect(confirmedByPoll(waiting, { order: exchangeOrder(), at: T0 + 30_000 })).toBeNull();

    // A payment deadline due with the poll (or before it): woken for it; one later is the next deadline.
    const deadline = T0 + 30_000;
    const fixedRateDeadline = new Date(deadline).toISOString();
    const paying = await openOrder({}, fixedRateDeadline);
    expect(pollDueAtRest(paying.persisted(), T0 + 30_000)).toBeNull();
    const later = await openOrder({}, new Date(T0 + 45_000).toISOString());
    expect(pollDueAtRest(later.persisted(), T0 + 30_000)?.nextDeadline).toBe(T0 + 45_000);

    const quoting = await OrderHarness.start(orderInput({ mode: 'cefi' }), {});
    expect(pollDueAtRest(quoting.persisted(), T0 + 60_000)).toBeNull();
  });

  it("include a failed poll's retry, at the machine's time, whose answer always goes to the machine", async () => {
    const failed = await openOrder({ fetchOrder: [fails('backoff')] });
    await failed.advance(30_000);
    const retrying = failed.persisted();
    expect(retrying.context.pollAttempt).toBe(1);
    const retryAt = retrying.context.nextPollAt!;
    expect(retryAt).toBeGreaterThanOrEqual(T0 + 60_000);
    expect(pollDueAtRest(retrying, retryAt - 1)).toBeNull();
    expect(pollDueAtRest(retrying, retryAt)?.request).toEqual(fetchOrderInputOf(retrying.context));
    // Even an answer that finds the order as last confirmed: the machine clears its failure (written).
    expect(confirmedByPoll(retrying, { order: exchangeOrder(), at: retryAt })).toBeNull();
    const restored = await OrderHarness.restore(retrying, retryAt);
    await restored.send({ type: 'POLLED', output: { order: exchangeOrder(), at: retryAt } });
    expect(restored.context).toMatchObject({ pollAttempt: 0, confirmedAt: retryAt });
    expect(restored.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it("POLL_FAILED leaves the order as its own poll's failure does", async () => {
    const own = await openOrder({ fetchOrder: [fails('backoff', { code: 'http_503' })] });
    const before = own.persisted();
    await own.advance(30_000);
    const restored = await OrderHarness.restore(before, T0 + 30_000);
    await restored.send({
      type: 'POLL_FAILED',
      error: { ...failure('backoff', { code: 'http_503' }), at: T0 + 30_000 },
    });
    const taken = restored.persisted();
    expect(taken.context.pollAttempt).toBe(1);
    expect(taken.context.nextPollAt).toBe(own.persisted().context.nextPollAt);
    expect(taken.context.lastFailure).toEqual(own.persisted().context.lastFailure);
    expect(restored.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });
});

describe('passiveUntil', () => {
  it('lets an open order awaiting its deposit rest until its next poll', async () => {
    const h = await openOrder();
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(passiveUntil(h.persisted())).toBe(T0 + 30_000);
  });

  it('wakes it for the payment deadline when that comes before the next poll, until it was checked', async () => {
    const deadline = T0 + 45_000;
    const fixedRateDeadline = new Date(deadline).toISOString();
    const h = await openOrder(
      { fetchOrder: [ok({ order: exchangeOrder({ fixedRateDeadline }) })] },
      fixedRateDeadline,
    );
    await h.advance(30_000);
    expect(h.calls.fetchOrder).toHaveLength(1);
    expect(passiveUntil(h.persisted())).toBe(deadline);
  });

  it('keeps the actor while a poll is in flight, and while a deposit is being submitted', async () => {
    const h = await openOrder();
    await h.advance(30_000);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(passiveUntil(h.persisted())).toBeNull();
    await h.answer('fetchOrder', ok({ order: exchangeOrder() }));
    expect(passiveUntil(h.persisted())).toBe(T0 + 60_000);
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 31_000 });
    expect(h.state).toBe('open.deposit.submitting.calling+open.exchange.monitoring');
    expect(passiveUntil(h.persisted())).toBeNull();
    await h.answer('submitDeposit', ok({ alreadyRecorded: false }));
    expect(h.state).toBe('open.deposit.submitted+open.exchange.monitoring');
    expect(passiveUntil(h.persisted())).toBe(T0 + 60_000);
  });

  it('wakes an order whose hints wait for their GET when it is due, and a restore keeps that wait', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 1_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    const resting = h.persisted();
    expect(passiveUntil(resting)).toBe(T0 + 4_000);
    // The wake is due before the routine poll: that poll is not put off past it.
    expect(pollDeferrableUntil(resting)).toBeNull();
    const restored = await OrderHarness.restore(resting, T0 + 2_000);
    expect(restored.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    await restored.advance(1_999);
    expect(restored.calls.fetchOrder).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.fetchOrder).toHaveLength(1);
  });

  it('wakes an order waiting to retry its deposit submission at the retry', async () => {
    const h = await openOrder({ submitDeposit: [fails('throttled', { retryAfterMs: 8_000 })] });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 });
    expect(h.state).toBe('open.deposit.submitting.waiting+open.exchange.monitoring');
    expect(passiveUntil(h.persisted())).toBe(T0 + 8_000);
  });

  it('keeps every state before the exchange order exists, and a finished order, live', async () => {
    const quoting = await OrderHarness.start(orderInput({ mode: 'cefi' }), {});
    expect(passiveUntil(quoting.persisted())).toBeNull();
    const done = await openOrder({ fetchOrder: [ok({ order: exchangeOrder({ status: 'COMPLETED' }) })] });
    await done.advance(30_000);
    expect(done.state).toBe('completed');
    expect(passiveUntil(done.persisted())).toBeNull();
  });

  it('refuses a stored context its restore would not route back to the same deposit state', async () => {
    const h = await openOrder();
    const persisted = h.persisted();
    const inconsistent = {
      ...persisted,
      context: { ...persisted.context, deposit: { txHash: '0x', acceptedAt: T0, startedAt: null } },
    };
    expect(passiveUntil(inconsistent)).toBeNull();
  });
});

describe('onlyWaitsForHints', () => {
  it('is true for hints that wait for their GET or need none, and false once anything else changed', async () => {
    const h = await openOrder();
    const written = h.persisted();
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 1_000 });
    await h.send({ type: 'WEBHOOK_HINT', status: 'PRE-RELEASE', at: T0 + 2_000 });
    await h.send({ type: 'WEBHOOK_HINT', status: 'INITIAL', at: T0 + 2_500 });
    expect(h.context.hintDueAt).toBe(T0 + 5_000);
    expect(onlyWaitsForHints(written, h.persisted())).toBe(true);
    // A deposit accepted meanwhile is an intent: written.
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 2_600 });
    expect(onlyWaitsForHints(written, h.persisted())).toBe(false);

    const g = await openOrder();
    const before = g.persisted();
    await g.advance(3_000);
    await g.send({ type: 'WEBHOOK_HINT', status: 'COMPLETED', at: T0 + 3_000 });
    // An end polls at once: that is a poll's start, not a hint waiting.
    expect(onlyWaitsForHints(before, g.persisted())).toBe(false);
    expect(onlyStartsAPoll(before, g.persisted())).toBe(true);
    await g.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    expect(onlyWaitsForHints(before, g.persisted())).toBe(false);
  });
});

describe('onlyConfirms', () => {
  it('is true for a GET or a listing that finds the order as written, whatever its timing, and false for any news', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 20_000 }),
        fc.constantFrom(
          'same',
          'status',
          'deposit transaction',
          'amount',
          'listing',
          'listing with another status',
        ),
        async (late, answer) => {
          const h = await openOrder();
          const written = h.persisted();
          await h.advance(30_000 + late);
          if (answer.startsWith('listing')) {
            await h.answer('fetchOrder', ok({ order: exchangeOrder() }));
            await h.send({
              type: 'LISTED',
              status: answer === 'listing' ? 'INITIAL' : 'PAID',
              at: T0 + 30_000 + late + 5_000,
            });
          } else
            await h.answer(
              'fetchOrder',
              ok({
                order: exchangeOrder(
                  answer === 'status'
                    ? { status: 'PAID' }
                    : answer === 'deposit transaction'
                      ? { depositTransaction: '0xdeposit-tx' }
                      : answer === 'amount'
                        ? { depositAmount: '1.5' }
                        : {},
                ),
              }),
            );
          const next = h.persisted();
          const news = answer !== 'same' && answer !== 'listing';
          expect(onlyConfirms(written, next)).toBe(!news);
          if (!news) {
            // What moved: when the order was confirmed and its next poll, so it rests until then.
            expect(next.context.confirmedAt).toBeGreaterThan(written.context.confirmedAt!);
            expect(passiveUntil(next)).toBeGreaterThan(T0 + 30_000 + late);
          }
          h.stop();
        },
      ),
      { numRuns: 30 },
    );
  });

  it('is false while a hint waits for its GET, after a failed poll (its retry is kept), and when the deposit moved', async () => {
    const hinted = await openOrder();
    const written = hinted.persisted();
    await hinted.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 1_000 });
    expect(hinted.context.hintDueAt).not.toBeNull();
    expect(onlyConfirms(written, hinted.persisted())).toBe(false);

    const failed = await openOrder({ fetchOrder: [fails('backoff')] });
    const before = failed.persisted();
    await failed.advance(30_000);
    expect(failed.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(onlyConfirms(before, failed.persisted())).toBe(false);

    const deposited = await openOrder();
    const resting = deposited.persisted();
    await deposited.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 500 });
    await deposited.answer('submitDeposit', ok({ alreadyRecorded: false }));
    expect(onlyConfirms(resting, deposited.persisted())).toBe(false);
    expect(onlyConfirms(null, deposited.persisted())).toBe(false);
  });
});

describe('onlyStartsAPoll', () => {
  it('is true for a routine poll or a hint that starts a GET, and nothing else changed', async () => {
    const h = await openOrder();
    const resting = h.persisted();
    await h.advance(30_000);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(onlyStartsAPoll(resting, h.persisted())).toBe(true);
    await h.answer('fetchOrder', ok({ order: exchangeOrder() }));
    const answered = h.persisted();
    // The answer is not a poll's start: it moved the exchange region back (it only confirms the record: onlyConfirms).
    expect(onlyStartsAPoll(resting, answered)).toBe(false);
    expect(onlyConfirms(resting, answered)).toBe(true);
    await h.send({ type: 'WEBHOOK_HINT', status: 'COMPLETED', at: T0 + 31_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(onlyStartsAPoll(answered, h.persisted())).toBe(true);
  });

  it('is false when the deposit region moved meanwhile (its intent must be written before the PATCH)', async () => {
    const h = await openOrder();
    const resting = h.persisted();
    await h.advance(30_000);
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 30_500 });
    expect(h.state).toBe('open.deposit.submitting.calling+open.exchange.polling');
    expect(onlyStartsAPoll(resting, h.persisted())).toBe(false);
  });

  it('is false before the exchange order exists and for anything not stored by this machine', async () => {
    const quoting = await OrderHarness.start(orderInput({ mode: 'cefi' }), {});
    expect(onlyStartsAPoll(quoting.persisted(), quoting.persisted())).toBe(false);
    const h = await openOrder();
    await h.advance(30_000);
    expect(onlyStartsAPoll(null, h.persisted())).toBe(false);
    expect(onlyStartsAPoll({ fake: true }, h.persisted())).toBe(false);
  });
});

describe('onlyStartsAQuote', () => {
  it('is true for the grant of a quote slot that changed nothing else', async () => {
    const h = await OrderHarness.start(orderInput(), {});
    expect(h.state).toBe('quoting.acquiringSlot');
    const acquiring = h.persisted();
    await h.advance(250);
    await h.answer('acquireQuoteSlot', granted);
    expect(h.state).toBe('quoting.requesting');
    expect(onlyStartsAQuote(acquiring, h.persisted())).toBe(true);
    // Its answer is news (the quote, the create intent): written.
    await h.answer('requestQuote', quoteReply());
    expect(h.state).toBe('creating.posting');
    expect(onlyStartsAQuote(acquiring, h.persisted())).toBe(false);
  });

  it('is false from any other written form, and for anything not stored by this machine', async () => {
    const h = await OrderHarness.start(orderInput(), { acquireQuoteSlot: [granted] });
    expect(h.state).toBe('quoting.requesting');
    const requesting = h.persisted();
    expect(onlyStartsAQuote(requesting, requesting)).toBe(false);
    expect(onlyStartsAQuote(null, requesting)).toBe(false);
    expect(onlyStartsAQuote({ fake: true }, requesting)).toBe(false);
    // A written form that differs in more than the grant's bookkeeping (here: a requote counted).
    const acquiring = { ...requesting, resumeFrom: 'quoting.acquiringSlot' as const };
    expect(onlyStartsAQuote(acquiring, requesting)).toBe(true);
    expect(
      onlyStartsAQuote({ ...acquiring, context: { ...acquiring.context, requotes: 1 } }, requesting),
    ).toBe(false);
    // A slot refused and granted after the cooldown: from coolingDown, written (the wait is news).
    const cooling = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [(_input, now) => ({ granted: false, retryAt: now + 15_000, at: now })],
    });
    expect(cooling.state).toBe('quoting.coolingDown');
    const waiting = cooling.persisted();
    await cooling.advance(15_000);
    await cooling.answer('acquireQuoteSlot', granted);
    expect(cooling.state).toBe('quoting.requesting');
    expect(onlyStartsAQuote(waiting, cooling.persisted())).toBe(false);
  });
});

describe('sameJson', () => {
  /** JSON text with object keys in sorted order: equal texts, equal JSON values. */
  const canonical = (value: unknown): string =>
    JSON.stringify(value, (_key, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)),
          )
        : v,
    );

  it('agrees with comparing canonical JSON texts, for any two JSON values and a value with its own copy', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(sameJson(a, b)).toBe(canonical(a) === canonical(b));
        expect(sameJson(a, JSON.parse(JSON.stringify(a)))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('treats an absent field and an undefined one alike, and tells a field apart from its absence', () => {
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(sameJson([1, 2], { 0: 1, 1: 2 })).toBe(false);
  });
});
