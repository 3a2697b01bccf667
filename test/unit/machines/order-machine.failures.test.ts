import { SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../../machines/backoff.ts';
import { exchangeMessageMaxChars, exchangeValueMaxChars } from '../../../machines/domain.ts';
import { resolveOrderConfig } from '../../../machines/order-context.ts';
import {
  OrderHarness,
  T0,
  exchangeOrder,
  fails,
  granted,
  ok,
  orderInput,
  quoteReply,
  quoteSlots,
} from './order-harness.ts';
import type { Script } from './order-harness.ts';

const created = ok<'createOrder'>({ order: exchangeOrder(), reused: false });

describe('order machine: quoting failures', () => {
  it('backs off exponentially with deterministic jitter, capped at maxMs, on retryable quote failures', async () => {
    const policy = { baseMs: 1_000, maxMs: 8_000, factor: 2 };
    const failuresBeforeQuote = 6;
    const h = await OrderHarness.start(
      orderInput({ config: { maxAttempts: 20, backoff: policy } }),
      {
        requestQuote: [
          ...Array.from({ length: failuresBeforeQuote }, () =>
            fails<'requestQuote'>('backoff', { code: 'defi_quote_unavailable' }),
          ),
          quoteReply(),
        ],
      },
      { always: { acquireQuoteSlot: granted } },
    );

    let rngState = 42;
    const delays: number[] = [];
    for (let attempt = 0; attempt < failuresBeforeQuote; attempt += 1) {
      expect(h.state).toBe('quoting.waiting');
      const delay = (h.context.retryAt ?? 0) - h.context.now;
      const expected = backoffDelay(policy, attempt, rngState);
      rngState = expected.rngState;
      expect(delay).toBe(expected.delayMs);
      const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** attempt);
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
      delays.push(delay);

      await h.advance(delay - 1);
      expect(h.calls.requestQuote).toHaveLength(attempt + 1);
      await h.advance(1);
      expect(h.calls.requestQuote).toHaveLength(attempt + 2);
    }
    // Grows while below the cap, then stays within [maxMs/2, maxMs].
    expect(delays[1]).toBeGreaterThan(delays[0] ?? Infinity);
    expect(delays.slice(3).every((delay) => delay >= 4_000 && delay <= 8_000)).toBe(true);
    expect(h.state).toBe('creating.posting');
    expect(h.context.attempt).toBe(0);
  });

  it('honours the Retry-After of a 429 exactly, without jitter', async () => {
    const h = await OrderHarness.start(
      orderInput(),
      { requestQuote: [fails('throttled', { retryAfterMs: 7_000, httpStatus: 429 }), quoteReply()] },
      { always: { acquireQuoteSlot: granted } },
    );
    expect(h.state).toBe('quoting.waiting');
    expect(h.context.retryAt).toBe(T0 + 7_000);
    expect(h.context.rngState).toBe(42);
    await h.advance(6_999);
    expect(h.calls.requestQuote).toHaveLength(1);
    await h.advance(1);
    expect(h.calls.requestQuote).toHaveLength(2);
    expect(h.calls.requestQuote[1]?.at).toBe(T0 + 7_000);
  });

  it('waits at least the fixed-rate throttle delay after a 429 that came without Retry-After', async () => {
    const h = await OrderHarness.start(
      orderInput({ config: { fixedRateThrottleDelayMs: 25_000 } }),
      { requestQuote: [fails('throttled', { code: 'same_chain_fixed_rate_throttled', httpStatus: 429 })] },
      { always: { acquireQuoteSlot: granted } },
    );
    expect(h.context.retryAt).toBe(T0 + 25_000);
    await h.advance(24_999);
    expect(h.calls.requestQuote).toHaveLength(1);
    await h.advance(1);
    expect(h.calls.requestQuote).toHaveLength(2);
  });

  it('fails with retries_exhausted after maxAttempts retryable failures of one step', async () => {
    const h = await OrderHarness.start(
      orderInput({ config: { maxAttempts: 3, backoff: { baseMs: 100, maxMs: 100 } } }),
      {
        requestQuote: [
          fails('backoff'),
          fails('backoff'),
          fails('backoff', { code: 'provider_unavailable', message: 'Quote provider is unavailable.' }),
        ],
      },
      { always: { acquireQuoteSlot: granted } },
    );
    await h.advance(100);
    await h.advance(100);
    expect(h.state).toBe('failed');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.failed',
      reason: 'retries_exhausted',
      code: 'provider_unavailable',
      message: 'Quote provider is unavailable.',
    });
  });

  it('fails at once with the exchange message on a non-retryable quote error', async () => {
    const h = await OrderHarness.start(
      orderInput(),
      {
        requestQuote: [
          fails('fatal', { code: 'markup_too_high', message: 'Must not exceed 100 basis points' }),
        ],
      },
      { always: { acquireQuoteSlot: granted } },
    );
    expect(h.state).toBe('failed');
    expect(h.context.failure).toEqual({
      reason: 'rejected',
      code: 'markup_too_high',
      message: 'Must not exceed 100 basis points',
    });
  });

  it('treats an unexpected error (not an ExchangeFailure) as retryable', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [
        () => {
          throw new Error('redis connection reset');
        },
      ],
    });
    expect(h.state).toBe('quoting.waiting');
    expect(h.context.lastFailure).toMatchObject({ action: 'unexpected', message: 'redis connection reset' });
  });

  it('shares the quote cooldown between two orders with the same pair and amount', async () => {
    const clock = new SimulatedClock();
    clock.set(T0);
    const slots = quoteSlots();
    const a = await OrderHarness.start(
      orderInput({ orderId: 'a' }),
      { requestQuote: [quoteReply()] },
      { clock, always: { acquireQuoteSlot: slots } },
    );
    const b = await OrderHarness.start(
      orderInput({ orderId: 'b' }),
      { requestQuote: [quoteReply()] },
      { clock, always: { acquireQuoteSlot: slots } },
    );
    const c = await OrderHarness.start(
      orderInput({ orderId: 'c', depositAmount: '2.00000000' }),
      { requestQuote: [quoteReply()] },
      { clock, always: { acquireQuoteSlot: slots } },
    );
    expect(a.state).toBe('creating.posting');
    expect(b.state).toBe('quoting.coolingDown');
    expect(b.context.retryAt).toBe(T0 + 15_000);
    expect(c.state).toBe('creating.posting');

    clock.increment(14_999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(b.calls.requestQuote).toHaveLength(0);
    await b.advance(1);
    expect(b.calls.requestQuote.map((call) => call.at)).toEqual([T0 + 15_000]);
    expect(b.state).toBe('creating.posting');
  });
});

describe('order machine: creating failures', () => {
  it('re-quotes once when rate_id has expired, after the quote cooldown', async () => {
    const slots = quoteSlots();
    const h = await OrderHarness.start(
      orderInput(),
      {
        requestQuote: [quoteReply('rate-1'), quoteReply('rate-2')],
        createOrder: [
          fails('requote', { code: 'rate_id_expired', message: "rate_id 'rate-1' is invalid or expired." }),
          created,
        ],
      },
      { always: { acquireQuoteSlot: slots } },
    );
    expect(h.state).toBe('quoting.coolingDown');
    expect(h.context.requotes).toBe(1);
    await h.advance(15_000);
    expect(h.calls.requestQuote.map((call) => call.at)).toEqual([T0, T0 + 15_000]);
    expect(h.calls.createOrder.map((call) => [call.input.rateId, call.input.attempt])).toEqual([
      ['rate-1', 1],
      ['rate-2', 2],
    ]);
    expect(h.types()).toEqual(['order.quoted', 'order.quoted', 'order.created']);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it('fails with the reason once the re-quote bound is reached', async () => {
    const mismatch = fails<'createOrder'>('requote', {
      code: 'promised_rate_mismatch',
      message:
        'Promised applied referral rate no longer matches current partner limits; request a new quote (rate_id).',
    });
    const h = await OrderHarness.start(
      orderInput({ config: { maxRequotes: 3 } }),
      { createOrder: [mismatch, mismatch, mismatch, mismatch] },
      { always: { acquireQuoteSlot: quoteSlots(), requestQuote: quoteReply() } },
    );
    for (let requote = 1; requote <= 3; requote += 1) {
      expect(h.context.requotes).toBe(requote);
      await h.advance(15_000);
    }
    expect(h.calls.requestQuote).toHaveLength(4);
    expect(h.calls.createOrder).toHaveLength(4);
    expect(h.state).toBe('failed');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.failed',
      reason: 'requote_limit_reached',
      code: 'promised_rate_mismatch',
      message:
        'Promised applied referral rate no longer matches current partner limits; request a new quote (rate_id).',
    });
  });

  it('asks for a fresh actionable quote when the rate_id is non-actionable for the route', async () => {
    const h = await OrderHarness.start(
      orderInput(),
      { createOrder: [fails('non_actionable', { code: 'rate_non_actionable' })] },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply() } },
    );
    expect(h.context.requotes).toBe(1);
    expect(h.calls.requestQuote).toHaveLength(2);
  });

  it('fails without retrying when quote and order modes do not match', async () => {
    const h = await OrderHarness.start(
      orderInput({ mode: 'cefi_fixed' }),
      { createOrder: [fails('mode_mismatch', { code: 'defi_rate_for_cefi_order' })] },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply() } },
    );
    expect(h.state).toBe('failed');
    expect(h.context.failure).toMatchObject({ reason: 'mode_mismatch', code: 'defi_rate_for_cefi_order' });
    expect(h.calls.createOrder).toHaveLength(1);
  });

  it('retries a limit order after "pair temporarily unavailable" with a backoff, without quoting', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', limitOrder: { ttlSeconds: 600 } }), {
      createOrder: [fails('requote', { code: 'pair_unavailable' }), created],
    });
    expect(h.state).toBe('creating.waiting');
    expect(h.context.requotes).toBe(1);
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.requestQuote).toHaveLength(0);
    expect(h.calls.createOrder).toHaveLength(2);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it('retries a create after a backoff when the exchange answered a retryable failure', async () => {
    const h = await OrderHarness.start(
      orderInput(),
      { createOrder: [fails('backoff', { code: 'cross_chain_quote_unavailable' }), created] },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply() } },
    );
    expect(h.state).toBe('creating.waiting');
    expect(h.context.pendingIntent).toBeNull();
    expect(h.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(true);
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.createOrder.map((call) => call.input.rateId)).toEqual(['rate-1', 'rate-1']);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it('looks for an existing CeFi order before repeating a create whose outcome is unknown', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [fails('unknown_outcome', { code: 'timeout' })],
      findExistingOrder: [ok({ order: exchangeOrder({ uniqueReference: 'FOUND' }) })],
    });
    expect(h.state).toBe('creating.waiting');
    expect(h.context.pendingIntent).toMatchObject({ kind: 'create', outcome: 'unknown', attempt: 1 });
    expect(h.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(false);
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.findExistingOrder[0]?.input).toMatchObject({
      since: T0,
      create: { mode: 'cefi', rateId: null },
    });
    expect(h.calls.createOrder).toHaveLength(1);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.emitted.at(-1)).toMatchObject({
      type: 'order.created',
      unique_reference: 'FOUND',
      reused: false,
    });
  });

  it('repeats the POST once a CeFi create in doubt is known not to have created anything', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [fails('unknown_outcome'), created],
      findExistingOrder: [ok({ order: null })],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.createOrder.map((call) => call.input.attempt)).toEqual([1, 2]);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it('repeats a DeFi create in doubt with the same rate_id and takes the 200 reuse', async () => {
    const h = await OrderHarness.start(
      orderInput(),
      { createOrder: [fails('unknown_outcome'), ok({ order: exchangeOrder(), reused: true })] },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply('rate-9') } },
    );
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.findExistingOrder).toHaveLength(0);
    expect(h.calls.requestQuote).toHaveLength(1);
    expect(h.calls.createOrder.map((call) => call.input.rateId)).toEqual(['rate-9', 'rate-9']);
    expect(h.emitted.at(-1)).toMatchObject({ type: 'order.created', reused: true });
  });

  it('repeats a DeFi create in doubt only once the settle window has passed: never beside the POST in doubt', async () => {
    const h = await OrderHarness.start(
      orderInput({ config: { createSettleMs: 60_000 } }),
      {
        createOrder: [
          fails('unknown_outcome', { code: 'timeout' }),
          ok({ order: exchangeOrder(), reused: true }),
        ],
      },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply('rate-9') } },
    );
    expect(h.state).toBe('creating.waiting');
    const failedAt = h.context.now;
    expect(h.context.retryAt).toBe(failedAt + 60_000);
    expect(h.snapshot.can({ type: 'CANCEL', at: h.context.now })).toBe(false);
    await h.advance(59_999);
    expect(h.calls.createOrder).toHaveLength(1);
    await h.advance(1);
    expect(h.calls.createOrder.map((call) => [call.input.rateId, call.at])).toEqual([
      ['rate-9', T0],
      ['rate-9', failedAt + 60_000],
    ]);
    expect(h.emitted.at(-1)).toMatchObject({ type: 'order.created', reused: true });
  });

  it('never re-checks a parked create sooner than the settle window after the failure that parked it', () => {
    expect(resolveOrderConfig({ createSettleMs: 60_000, parkedRecheckMs: 1_000 }).parkedRecheckMs).toBe(
      60_000,
    );
    expect(resolveOrderConfig({ createSettleMs: 1_000, parkedRecheckMs: 5_000 }).parkedRecheckMs).toBe(5_000);
    expect(resolveOrderConfig(undefined).parkedRecheckMs).toBe(300_000);
  });

  it('parks a create in doubt whose verification keeps failing past maxAttempts, and keeps re-checking', async () => {
    const h = await OrderHarness.start(
      orderInput({
        mode: 'cefi',
        config: {
          maxAttempts: 3,
          backoff: { baseMs: 100, maxMs: 100 },
          createSettleMs: 100,
          parkedRecheckMs: 5_000,
        },
      }),
      {
        createOrder: [fails('unknown_outcome')],
        findExistingOrder: [fails('backoff'), fails('backoff'), ok({ order: exchangeOrder() })],
      },
    );
    for (let step = 0; step < 3; step += 1) await h.advance(100);
    expect(h.calls.findExistingOrder).toHaveLength(2);
    expect(h.state).toBe('creating.parked');
    expect(h.types()).toEqual(['order.parked']);
    expect(h.emitted[0]).toMatchObject({ reason: 'create_outcome_unknown', mode: 'cefi', attempts: 1 });
    expect(h.calls.createOrder).toHaveLength(1);
    await h.advance(5_000);
    expect(h.calls.findExistingOrder).toHaveLength(3);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.types()).toEqual(['order.parked', 'order.created']);
  });

  it('fails on a non-retryable create error', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [
        fails('fatal', { code: 'invalid_address', message: 'xyz has invalid characters for a valid value' }),
      ],
    });
    expect(h.state).toBe('failed');
    expect(h.emitted).toEqual([
      {
        type: 'order.failed',
        reason: 'rejected',
        code: 'invalid_address',
        message: 'xyz has invalid characters for a valid value',
      },
    ]);
  });

  it('parks (never fails) a create in doubt whose lookup is refused for good: the order may exist', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [fails('unknown_outcome')],
      findExistingOrder: [fails('fatal', { code: 'unauthorized' })],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.state).toBe('creating.parked');
    expect(h.context.failure).toBeNull();
    expect(h.types()).toEqual(['order.parked']);
    expect(h.emitted[0]).toMatchObject({ code: 'unauthorized' });
    const parked = h.emitted[0] as { tried?: readonly string[] };
    expect(parked.tried).toContain('GET /orders/ scanned 1 time(s)');
  });

  it('retries a failed pre-screening after a backoff and fails when it is refused for good', async () => {
    const h = await OrderHarness.start(orderInput({ preScreening: { ip: '203.0.113.7' } }), {
      preScreen: [fails('backoff'), fails('fatal', { code: 'pre_screening_forbidden' })],
    });
    expect(h.state).toBe('preScreening.waiting');
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.state).toBe('failed');
    expect(h.context.failure).toMatchObject({ reason: 'rejected', code: 'pre_screening_forbidden' });
  });

  it('goes straight to creating after a successful pre-screening when no quote is needed', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', preScreening: { ip: '203.0.113.7' } }), {
      preScreen: [ok({ status: 'success', message: 'ok' })],
    });
    expect(h.state).toBe('creating.posting');
  });
});

describe('order machine: commands', () => {
  const commandsBeforeOrder: Array<[string, Script, Parameters<typeof orderInput>[0]]> = [
    ['pre-screening', {}, { preScreening: { ip: '203.0.113.7' } }],
    ['acquiring a quote slot', {}, {}],
    ['requesting a quote', { acquireQuoteSlot: [granted] }, {}],
  ];
  for (const [step, script, overrides] of commandsBeforeOrder) {
    it(`cancels by command while ${step}, before the exchange order exists`, async () => {
      const h = await OrderHarness.start(orderInput(overrides), script);
      expect(h.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(true);
      await h.send({ type: 'CANCEL', at: T0 + 5 });
      expect(h.state).toBe('canceled');
      expect(h.snapshot.status).toBe('done');
      expect(h.emitted).toEqual([{ type: 'order.canceled', reason: 'command' }]);
      expect(h.context.cancelReason).toBe('command');
    });
  }

  it('cancels by command during the quote cooldown and makes no further call', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [ok({ granted: false, retryAt: T0 + 15_000 })],
    });
    expect(h.state).toBe('quoting.coolingDown');
    await h.send({ type: 'CANCEL', at: T0 + 1_000 });
    await h.advance(60_000);
    expect(h.state).toBe('canceled');
    expect(h.calls.acquireQuoteSlot).toHaveLength(1);
  });

  it('cancels by command while a create waits to be retried after a definitive failure', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), { createOrder: [fails('backoff')] });
    await h.send({ type: 'CANCEL', at: T0 + 10 });
    expect(h.state).toBe('canceled');
  });

  it('refuses CANCEL while the create is in flight and once the exchange order exists', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }));
    expect(h.state).toBe('creating.posting');
    expect(h.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(false);
    await h.answer('createOrder', created);
    expect(h.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(false);
    await h.send({ type: 'CANCEL', at: T0 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it('accepts SUBMIT_DEPOSIT only once the exchange order exists and awaits its deposit', async () => {
    const submit = { type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 } as const;
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }));
    expect(h.snapshot.can(submit)).toBe(false);
    await h.answer('createOrder', created);
    expect(h.snapshot.can(submit)).toBe(true);
    await h.send(submit);
    expect(h.state).toBe('open.deposit.submitting.calling+open.exchange.monitoring');
    expect(h.snapshot.can(submit)).toBe(false);
  });

  it('refuses SUBMIT_DEPOSIT once a GET shows the deposit has arrived', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [created],
      fetchOrder: [ok({ order: exchangeOrder({ status: 'UNCONFIRMED PAYMENT' }) })],
    });
    await h.advance(30_000);
    expect(h.context.lastStatus).toBe('UNCONFIRMED PAYMENT');
    expect(h.snapshot.can({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 })).toBe(false);
  });

  it('retries a deposit submission with the same hash on a retryable failure', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [created],
      submitDeposit: [fails('throttled', { retryAfterMs: 2_000 }), ok({ alreadyRecorded: false })],
    });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 });
    expect(h.state).toBe('open.deposit.submitting.waiting+open.exchange.monitoring');
    expect(h.context.depositRetryAt).toBe(T0 + 2_000);
    await h.advance(2_000);
    expect(h.calls.submitDeposit.map((call) => call.input.txHash)).toEqual(['0xtx', '0xtx']);
    expect(h.types().filter((type) => type === 'order.deposit_submitted')).toHaveLength(1);
  });

  it('goes back to awaiting the deposit when the exchange refuses the hash for good', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [created],
      submitDeposit: [fails('fatal', { code: 'invalid_tx', message: 'bad hash' })],
    });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xbad', at: T0 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.deposit_rejected',
      tx_hash: '0xbad',
      code: 'invalid_tx',
      message: 'bad hash',
    });
    expect(h.snapshot.can({ type: 'SUBMIT_DEPOSIT', txHash: '0xgood', at: T0 })).toBe(true);
  });
});

describe('order machine: monitoring', () => {
  async function openOrder(overrides: Parameters<typeof exchangeOrder>[0] = {}, pollIntervalMs?: number) {
    return OrderHarness.start(
      orderInput({ mode: 'cefi', ...(pollIntervalMs === undefined ? {} : { config: { pollIntervalMs } }) }),
      { createOrder: [ok({ order: exchangeOrder(overrides), reused: false })] },
    );
  }

  it('polls every configured interval', async () => {
    const h = await openOrder({}, 45_000);
    await h.answer('fetchOrder', ok({ order: exchangeOrder() }), ok({ order: exchangeOrder() }));
    await h.advance(44_999);
    expect(h.calls.fetchOrder).toHaveLength(0);
    await h.advance(1);
    await h.advance(45_000);
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 45_000, T0 + 90_000]);
  });

  it('clamps the poll interval to 30-60 s', () => {
    expect(resolveOrderConfig({ pollIntervalMs: 5_000 }).pollIntervalMs).toBe(30_000);
    expect(resolveOrderConfig({ pollIntervalMs: 600_000 }).pollIntervalMs).toBe(60_000);
    expect(resolveOrderConfig(undefined).pollIntervalMs).toBe(30_000);
  });

  it('polls at once on a webhook hint, and a hint changes nothing without a GET', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', status: 'COMPLETED', at: T0 + 1_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0]);
    expect(h.context.lastStatus).toBe('INITIAL');
    expect(h.types()).toEqual(['order.created']);

    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'INITIAL' }) }));
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.types()).toEqual(['order.created']);
  });

  it('spaces routine polls to the webhook interval while webhooks announce each change, and not once a poll finds news', async () => {
    const h = await openOrder();
    const untilNextPoll = () => (h.context.nextPollAt ?? 0) - h.context.now;
    // A reconciliation nudge (no status) is not a webhook.
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 500 });
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'INITIAL' }) }));
    expect(h.context.webhooksInformed).toBe(false);
    expect(untilNextPoll()).toBe(30_000);
    // A webhook announces PAID; the GET it leads to (once no other hint came for 3 s) confirms it: webhooks keep
    // this order informed.
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 1_000 });
    await h.advance(3_000);
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    expect(h.types().at(-1)).toBe('order.status_changed');
    expect(h.context.webhooksInformed).toBe(true);
    expect(untilNextPoll()).toBe(60_000);
    const gets = h.calls.fetchOrder.length;
    await h.advance(59_999);
    expect(h.calls.fetchOrder).toHaveLength(gets);
    // The routine poll finds RELEASED, which no webhook announced: back to the shorter interval.
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'RELEASED' }) }));
    await h.advance(1);
    expect(h.calls.fetchOrder).toHaveLength(gets + 1);
    expect(h.context.lastStatus).toBe('RELEASED');
    expect(h.context.webhooksInformed).toBe(false);
    expect(untilNextPoll()).toBe(30_000);
  });

  it('takes the webhook interval from the configuration, never below the poll interval nor above 60 s', () => {
    expect(resolveOrderConfig(undefined).webhookPollIntervalMs).toBe(60_000);
    expect(
      resolveOrderConfig({ pollIntervalMs: 45_000, webhookPollIntervalMs: 30_000 }).webhookPollIntervalMs,
    ).toBe(45_000);
    expect(resolveOrderConfig({ webhookPollIntervalMs: 600_000 }).webhookPollIntervalMs).toBe(60_000);
  });

  it('confirms hints naming open statuses together: one GET once none came for 3 s', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', status: 'UNCONFIRMED PAYMENT', at: T0 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    await h.advance(2_000);
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 2_000 });
    await h.advance(2_999);
    expect(h.calls.fetchOrder).toHaveLength(0);
    await h.advance(1);
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 5_000]);
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    expect(h.types()).toEqual(['order.created', 'order.status_changed']);
    expect(h.emitted.at(-1)).toMatchObject({ status: 'PAID', previous_status: 'INITIAL' });
    expect(h.context.hintDueAt).toBeNull();
    // The GET found what the hints announced: webhooks keep the order informed.
    expect(h.context.webhooksInformed).toBe(true);
  });

  it('confirms an end at once, and it serves the open statuses still waiting', async () => {
    const h = await openOrder();
    for (const [i, status] of ['UNCONFIRMED PAYMENT', 'PAID', 'PRE-RELEASE', 'RELEASED'].entries()) {
      await h.send({ type: 'WEBHOOK_HINT', status, at: T0 + i * 2_000 });
      await h.advance(2_000);
    }
    expect(h.calls.fetchOrder).toHaveLength(0);
    await h.send({ type: 'WEBHOOK_HINT', status: 'COMPLETED', at: T0 + 8_000 });
    expect(h.calls.fetchOrder).toHaveLength(1);
    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ status: 'COMPLETED', withdrawTransaction: '0xw' }) }),
    );
    expect(h.state).toBe('completed');
    expect(h.calls.fetchOrder).toHaveLength(1);
  });

  it('makes a steady stream of open statuses wait at most 10 s for its GET', async () => {
    const h = await openOrder();
    const statuses = ['UNCONFIRMED PAYMENT', 'PAID', 'PRE-RELEASE', 'RELEASED', 'RELEASED', 'RELEASED'];
    for (const [i, status] of statuses.entries()) {
      await h.send({ type: 'WEBHOOK_HINT', status, at: T0 + i * 2_000 });
      if (i < statuses.length - 1) await h.advance(2_000);
    }
    // The last hint came at 10 s; the first at 0 s: the GET is due at 10 s, not at 13 s.
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 10_000]);
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'RELEASED' }) }));
    expect(h.context.lastStatus).toBe('RELEASED');
  });

  it('needs no GET for a hint naming the status already confirmed, or one behind it', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', status: 'INITIAL', at: T0 + 1_000 });
    await h.advance(15_000);
    expect(h.calls.fetchOrder).toHaveLength(0);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    // The routine poll still comes at its time.
    await h.advance(15_000);
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 30_000]);
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    await h.send({ type: 'WEBHOOK_HINT', status: 'UNCONFIRMED PAYMENT', at: T0 + 31_000 });
    await h.advance(20_000);
    expect(h.calls.fetchOrder).toHaveLength(1);
  });

  it('does not ask again when the answer of a GET already shows the hints that came during it', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', status: 'COMPLETED', at: T0 });
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 10 });
    await h.send({ type: 'WEBHOOK_HINT', status: 'UNCONFIRMED PAYMENT', at: T0 + 20 });
    expect(h.context.hintPending).toBe(true);
    // COMPLETED started the GET; PAID and UNCONFIRMED PAYMENT came during it, and its answer shows PAID, the
    // furthest of them: no other GET.
    expect(h.context.hintedStatus).toBe('PAID');
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    await h.advance(20_000);
    expect(h.calls.fetchOrder).toHaveLength(1);

    const g = await openOrder();
    await g.send({ type: 'WEBHOOK_HINT', at: T0 }); // a nudge: a GET at once
    await g.send({ type: 'WEBHOOK_HINT', status: 'RELEASED', at: T0 + 10 });
    await g.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 20 });
    expect(g.context.hintedStatus).toBe('RELEASED');
    await g.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'RELEASED' }) }));
    expect(g.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    await g.advance(20_000);
    expect(g.calls.fetchOrder).toHaveLength(1);
  });

  it('waits 3 s before asking again for open statuses a GET did not show yet', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', at: T0 }); // a nudge: a GET at once
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 10 });
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'UNCONFIRMED PAYMENT' }) }));
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.calls.fetchOrder).toHaveLength(1);
    await h.advance(2_999);
    expect(h.calls.fetchOrder).toHaveLength(1);
    await h.advance(1);
    expect(h.calls.fetchOrder).toHaveLength(2);
  });

  it('confirms every hint at once with hintCoalesceMs 0, and bounds the coalescing settings', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: { hintCoalesceMs: 0 } }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
    });
    await h.send({ type: 'WEBHOOK_HINT', status: 'PAID', at: T0 + 1_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(resolveOrderConfig(undefined)).toMatchObject({ hintCoalesceMs: 3_000, hintCoalesceMaxMs: 10_000 });
    expect(resolveOrderConfig({ hintCoalesceMs: 60_000, hintCoalesceMaxMs: 1_000 })).toMatchObject({
      hintCoalesceMs: 10_000,
      hintCoalesceMaxMs: 10_000,
    });
    expect(resolveOrderConfig({ hintCoalesceMs: -5, hintCoalesceMaxMs: 600_000 })).toMatchObject({
      hintCoalesceMs: 0,
      hintCoalesceMaxMs: 30_000,
    });
  });

  it('polls again when a hint arrived while a GET was in flight', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 1_000 });
    await h.send({ type: 'WEBHOOK_HINT', status: 'COMPLETED', at: T0 + 1_500 });
    expect(h.context.hintPending).toBe(true);
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    expect(h.calls.fetchOrder).toHaveLength(2);
    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ status: 'COMPLETED', withdrawTransaction: '0xw' }) }),
    );
    expect(h.state).toBe('completed');
    expect(h.types()).toEqual([
      'order.created',
      'order.status_changed',
      'order.status_changed',
      'order.completed',
    ]);
  });

  it('reaches a terminal state only after a confirming GET, even when the create answer says otherwise', async () => {
    const h = await openOrder({ status: 'COMPLETED' });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.snapshot.status).toBe('active');
    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ status: 'COMPLETED', withdrawTransaction: '0xw' }) }),
    );
    await h.advance(30_000);
    expect(h.state).toBe('completed');
    // COMPLETED was already published with the create answer's status: no second status_changed.
    expect(h.types()).toEqual(['order.created', 'order.completed']);
  });

  it('publishes refunded with the refund transaction after a GET shows REFUNDED', async () => {
    const h = await openOrder();
    await h.send({ type: 'WEBHOOK_HINT', status: 'REFUNDED', at: T0 + 1 });
    expect(h.state).not.toBe('refunded');
    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ status: 'REFUNDED', refundTransaction: '0xr' }) }),
    );
    expect(h.state).toBe('refunded');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.refunded',
      unique_reference: 'EXREF1',
      refund_transaction: '0xr',
    });
  });

  it('checks the order at its payment deadline and reports a lapsed payment window', async () => {
    const deadline = T0 + 90_000;
    const fixedRateDeadline = new Date(deadline).toISOString();
    const h = await openOrder({ fixedRateDeadline }, 60_000);
    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ fixedRateDeadline }) }),
      ok({ order: exchangeOrder({ fixedRateDeadline, status: 'CANCELED' }) }),
    );
    await h.advance(60_000);
    await h.advance(29_999);
    expect(h.calls.fetchOrder).toHaveLength(1);
    await h.advance(1);
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 60_000, deadline]);
    expect(h.state).toBe('canceled');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.canceled',
      unique_reference: 'EXREF1',
      reason: 'payment_window_lapsed',
    });
  });

  it('reports an exchange cancellation before the deadline as such', async () => {
    const h = await openOrder();
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'CANCELED' }) }));
    await h.advance(30_000);
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.canceled',
      unique_reference: 'EXREF1',
      reason: 'exchange',
    });
  });

  it('keeps polling after failed GETs, never faster than the interval, honouring Retry-After', async () => {
    const h = await openOrder();
    await h.answer('fetchOrder', fails('backoff'), fails('throttled', { retryAfterMs: 90_000 }));
    await h.advance(30_000);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.context.nextPollAt).toBe(T0 + 60_000);
    await h.advance(30_000);
    expect(h.context.nextPollAt).toBe(T0 + 150_000);
    expect(h.context.pollAttempt).toBe(2);
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    await h.advance(90_000);
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 30_000, T0 + 60_000, T0 + 150_000]);
    expect(h.context.pollAttempt).toBe(0);
  });
});

describe('order machine: a create in doubt (money safety)', () => {
  const quick = { backoff: { baseMs: 100, maxMs: 100 }, createSettleMs: 100, parkedRecheckMs: 5_000 };

  it('parks a DeFi create whose repeat after a lost answer says the rate expired: no fresh quote, no second order', async () => {
    const h = await OrderHarness.start(orderInput({ config: quick }), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('rate-1')],
      createOrder: [fails('unknown_outcome'), fails('requote', { code: 'rate_id_invalid_or_expired' })],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.createOrder.map((c) => c.input.rateId)).toEqual(['rate-1', 'rate-1']);
    expect(h.calls.requestQuote).toHaveLength(1);
    expect(h.state).toBe('creating.parked');
    expect(h.types()).toEqual(['order.quoted', 'order.parked']);
    expect(h.emitted[1]).toMatchObject({
      type: 'order.parked',
      reason: 'create_outcome_unknown',
      rate_id: 'rate-1',
      attempts: 2,
      window_from: new Date(T0).toISOString(),
    });
  });

  it('parks rather than fails when a repeat in doubt is refused for good (the first POST may have succeeded)', async () => {
    const h = await OrderHarness.start(orderInput({ config: quick }), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('rate-1')],
      createOrder: [fails('unknown_outcome'), fails('fatal', { code: 'address_invalid' })],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.state).toBe('creating.parked');
    expect(h.context.failure).toBeNull();
  });

  it('refuses a cancel while parked; re-checks the evidence with the same rate_id and adopts a definite answer', async () => {
    const h = await OrderHarness.start(orderInput({ config: quick }), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('rate-1')],
      createOrder: [
        fails('unknown_outcome'),
        fails('requote', { code: 'rate_id_invalid_or_expired' }),
        ok({ order: exchangeOrder({ uniqueReference: 'LATE' }), reused: true }),
      ],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.state).toBe('creating.parked');
    expect(h.snapshot.can({ type: 'CANCEL', at: h.context.now })).toBe(false);
    await h.advance(5_000);
    expect(h.calls.createOrder.map((c) => c.input.rateId)).toEqual(['rate-1', 'rate-1', 'rate-1']);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.types()).toEqual(['order.quoted', 'order.parked', 'order.created']);
  });

  it('lets an operator adopt a named exchange order, refusing one that does not match', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), {
      createOrder: [fails('unknown_outcome')],
      findExistingOrder: [fails('fatal', { code: 'unauthorized' })],
      adoptOrder: [
        fails('fatal', { code: 'adopt_mismatch', message: 'does not match' }),
        ok({ order: exchangeOrder({ uniqueReference: 'OPS1' }) }),
      ],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.state).toBe('creating.parked');
    await h.send({ type: 'SETTLE', resolution: 'adopt', uniqueReference: 'WRONG', at: h.context.now });
    expect(h.calls.adoptOrder[0]?.input.uniqueReference).toBe('WRONG');
    expect(h.state).toBe('creating.parked');
    expect(h.emitted.at(-1)).toMatchObject({
      type: 'order.settle_refused',
      unique_reference: 'WRONG',
      code: 'adopt_mismatch',
    });
    await h.send({ type: 'SETTLE', resolution: 'adopt', uniqueReference: 'OPS1', at: h.context.now });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.emitted.at(-1)).toMatchObject({ type: 'order.created', unique_reference: 'OPS1' });
  });

  it('lets an operator abandon a parked order', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), {
      createOrder: [fails('unknown_outcome')],
      findExistingOrder: [fails('fatal', { code: 'unauthorized' })],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    await h.send({ type: 'SETTLE', resolution: 'abandon', at: h.context.now });
    expect(h.state).toBe('failed');
    expect(h.emitted.at(-1)).toMatchObject({ type: 'order.failed', reason: 'abandoned_by_operator' });
  });

  it('does not look a CeFi create up before the settle window has passed, nor cancel it meanwhile', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: { createSettleMs: 60_000 } }), {
      createOrder: [fails('unknown_outcome', { code: 'http_503' })],
      findExistingOrder: [ok({ order: null }), ok({ order: exchangeOrder() })],
    });
    expect(h.state).toBe('creating.waiting');
    expect(h.context.retryAt).toBeGreaterThanOrEqual(h.context.now + 60_000);
    expect(h.snapshot.can({ type: 'CANCEL', at: h.context.now })).toBe(false);
    await h.advance(59_000);
    expect(h.calls.findExistingOrder).toHaveLength(0);
  });

  it('never publishes a status that moves backwards (PAID, then a stale INITIAL)', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
      fetchOrder: [
        ok({ order: exchangeOrder({ status: 'PAID' }) }),
        ok({ order: exchangeOrder({ status: 'INITIAL' }) }),
      ],
    });
    await h.advance(30_000);
    await h.advance(30_000);
    expect(h.calls.fetchOrder).toHaveLength(2);
    expect(h.types()).toEqual(['order.created', 'order.status_changed']);
    expect(h.context.lastStatus).toBe('PAID');
  });
});

describe('order machine: fresh quotes as the interface document says', () => {
  it('retries "rate_id is invalid or expired" once with a fresh quote, then fails', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [granted, granted],
      requestQuote: [quoteReply('rate-1'), quoteReply('rate-2')],
      createOrder: [
        fails('requote', { code: 'rate_id_invalid_or_expired' }),
        fails('requote', { code: 'rate_id_invalid_or_expired' }),
      ],
    });
    expect(h.calls.createOrder.map((c) => c.input.rateId)).toEqual(['rate-1', 'rate-2']);
    expect(h.state).toBe('failed');
    expect(h.context.failure).toMatchObject({
      reason: 'requote_limit_reached',
      code: 'rate_id_invalid_or_expired',
    });
  });

  it('keeps the documented bound of three fresh quotes for the other requote messages', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [granted, granted, granted, granted],
      requestQuote: [quoteReply('r1'), quoteReply('r2'), quoteReply('r3'), quoteReply('r4')],
      createOrder: [
        fails('requote', { code: 'rate_id_quote_expired' }),
        fails('requote', { code: 'referral_rate_no_longer_matches' }),
        fails('requote', { code: 'rate_id_quote_expired' }),
        fails('requote', { code: 'rate_id_quote_expired' }),
      ],
    });
    expect(h.calls.createOrder.map((c) => c.input.rateId)).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(h.state).toBe('failed');
    expect(h.context.requotes).toBe(3);
  });
});

describe('order machine: address and chain pairing before any quote', () => {
  it('fails with address_pairing_rejected before quoting when the address does not belong to the network', async () => {
    const h = await OrderHarness.start(orderInput({ withdrawNetwork: 'BSC' }), {
      checkAddress: [
        ok({ ok: false, code: 'withdraw_network_mismatch', message: 'ETH is not on network BSC' }),
      ],
    });
    expect(h.calls.checkAddress[0]?.input).toMatchObject({ withdrawNetwork: 'BSC' });
    expect(h.calls.acquireQuoteSlot).toHaveLength(0);
    expect(h.calls.requestQuote).toHaveLength(0);
    expect(h.state).toBe('failed');
    expect(h.emitted).toEqual([
      {
        type: 'order.failed',
        reason: 'address_pairing_rejected',
        code: 'withdraw_network_mismatch',
        message: 'ETH is not on network BSC',
      },
    ]);
  });

  it('retries the check while the currency records cannot be read, then goes on to the quote', async () => {
    const h = await OrderHarness.start(orderInput(), {
      checkAddress: [fails('backoff', { code: 'currency_catalog_unavailable' }), ok({ ok: true })],
    });
    expect(h.state).toBe('checkingAddress.waiting');
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.calls.checkAddress).toHaveLength(2);
    expect(h.state.startsWith('quoting')).toBe(true);
  });
});

describe('order machine: exchange text it keeps is bounded', () => {
  it('keeps its record and its events small whatever the length of the exchange text in a failure', async () => {
    const megabyte = 'z'.repeat(1 << 20);
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [fails('fatal', { code: `address_invalid${megabyte}`, message: megabyte })],
    });
    expect(h.state).toBe('failed');
    const failed = h.emitted.at(-1) as { type: string; message: string; code: string };
    expect(failed.type).toBe('order.failed');
    expect(failed.message.length).toBeLessThanOrEqual(exchangeMessageMaxChars);
    expect(failed.code.length).toBeLessThanOrEqual(exchangeValueMaxChars);
    // The whole persisted form (the state record's machine) stays far below a broker's record limit.
    expect(JSON.stringify(h.persisted()).length).toBeLessThan(16_384);
  });

  it('bounds a pre-screening message and an address pairing message it fails with', async () => {
    const megabyte = 'w'.repeat(1 << 20);
    const screened = await OrderHarness.start(
      orderInput({ mode: 'cefi', preScreening: { ip: '203.0.113.7' } }),
      { preScreen: [ok({ status: 'failed', message: megabyte })] },
    );
    expect(screened.context.failure?.message.length).toBeLessThanOrEqual(exchangeMessageMaxChars);
    const paired = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      checkAddress: [ok({ ok: false, code: 'withdraw_network_mismatch', message: megabyte })],
    });
    expect(paired.context.failure?.message.length).toBeLessThanOrEqual(exchangeMessageMaxChars);
  });
});
