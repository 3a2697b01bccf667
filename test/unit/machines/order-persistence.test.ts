import fc from 'fast-check';
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { orderMachine } from '../../../machines/order-machine.ts';
import {
  persistedOrderVersion,
  jsonCopy,
  isPersistedOrder,
  resumableStates,
  restoreInput,
  toPersisted,
} from '../../../machines/order-persistence.ts';
import type { PersistedOrder } from '../../../machines/order-persistence.ts';
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
import type { HarnessOptions, Script } from './order-harness.ts';

const created = ok<'createOrder'>({ order: exchangeOrder(), reused: false });
const OPEN = 'open.deposit.awaiting+open.exchange.monitoring';

/** Stores the order, stops it (the replica dies now) and restores it `laterMs` later, as another replica would. */
async function crashAndRestore(
  h: OrderHarness,
  laterMs: number,
  script: Script = {},
  options: HarnessOptions = {},
): Promise<{ restored: OrderHarness; persisted: PersistedOrder }> {
  const persisted = h.persisted();
  h.stop();
  const restored = await OrderHarness.restore(persisted, h.clock.now() + laterMs, script, options);
  return { restored, persisted };
}

describe('persisted form', () => {
  it('is plain JSON with a version, the resume key and the whole context', async () => {
    const h = await OrderHarness.start(orderInput(), { acquireQuoteSlot: [granted] });
    const persisted = h.persisted();
    expect(JSON.parse(JSON.stringify(persisted))).toEqual(persisted);
    expect(persisted).toMatchObject({
      version: persistedOrderVersion,
      orderId: 'order-1',
      resumeFrom: 'quoting.requesting',
      stateValue: { quoting: 'requesting' },
      done: false,
      savedAt: T0,
    });
    expect(isPersistedOrder(persisted)).toBe(true);
    expect(isPersistedOrder({ ...persisted, version: 99 })).toBe(false);
    expect(() =>
      restoreInput({ ...persisted, resumeFrom: 'restoring' } as unknown as PersistedOrder, T0),
    ).toThrow(/unsupported/);
  });

  it('records each side effect intent in the stored form before the call starts', async () => {
    const h = await OrderHarness.start(orderInput({ preScreening: { ip: '203.0.113.7' } }), {
      preScreen: [ok({ status: 'success', message: '' })],
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply()],
      createOrder: [created],
    });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 });
    await h.send({ type: 'WEBHOOK_HINT', at: T0 });
    expect(h.calls.preScreen[0]?.persisted.context.pendingIntent).toMatchObject({ kind: 'pre_screen' });
    expect(h.calls.acquireQuoteSlot[0]?.persisted.context.pendingIntent).toMatchObject({
      kind: 'acquire_quote_slot',
    });
    expect(h.calls.requestQuote[0]?.persisted.context.pendingIntent).toMatchObject({ kind: 'request_quote' });
    expect(h.calls.createOrder[0]?.persisted).toMatchObject({
      resumeFrom: 'creating.posting',
      context: {
        pendingIntent: { kind: 'create', attempt: 1, rateId: 'rate-1', outcome: 'in_flight', startedAt: T0 },
      },
    });
    expect(h.calls.submitDeposit[0]?.persisted.context.deposit).toMatchObject({
      txHash: '0xtx',
      startedAt: T0,
    });
    expect(h.calls.fetchOrder[0]?.persisted.context.pollStartedAt).toBe(T0);
  });

  it('names every state an order can be stored in', () => {
    expect([...resumableStates].sort()).toEqual(
      [
        'canceled',
        'checkingAddress.calling',
        'checkingAddress.waiting',
        'completed',
        'creating.adopting',
        'creating.parked',
        'creating.posting',
        'creating.verifying',
        'creating.waiting',
        'failed',
        'open',
        'preScreening.calling',
        'preScreening.waiting',
        'quoting.acquiringSlot',
        'quoting.coolingDown',
        'quoting.requesting',
        'quoting.waiting',
        'refunded',
      ].sort(),
    );
  });
});

describe('restore: before the exchange order exists', () => {
  it('repeats a pre-screening that was in flight', async () => {
    const h = await OrderHarness.start(orderInput({ preScreening: { ip: '203.0.113.7' } }));
    expect(h.state).toBe('preScreening.calling');
    const { restored } = await crashAndRestore(h, 3_000, {
      preScreen: [ok({ status: 'success', message: '' })],
    });
    expect(restored.calls.preScreen).toHaveLength(1);
    expect(restored.state).toBe('quoting.acquiringSlot');
    expect(restored.emitted).toEqual([]);
  });

  it('re-arms a pre-screening backoff with the time that remains', async () => {
    const h = await OrderHarness.start(orderInput({ preScreening: { ip: '203.0.113.7' } }), {
      preScreen: [fails('backoff')],
    });
    const retryAt = h.context.retryAt ?? 0;
    const { restored } = await crashAndRestore(h, 200, {
      preScreen: [ok({ status: 'success', message: '' })],
    });
    expect(restored.state).toBe('preScreening.waiting');
    await restored.advance(retryAt - T0 - 200 - 1);
    expect(restored.calls.preScreen).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.preScreen.map((call) => call.at)).toEqual([retryAt]);
  });

  it('asks for the quote slot again when the slot request was in flight', async () => {
    const h = await OrderHarness.start(orderInput());
    expect(h.state).toBe('quoting.acquiringSlot');
    const { restored } = await crashAndRestore(h, 1_000, { acquireQuoteSlot: [granted] });
    expect(restored.calls.acquireQuoteSlot).toHaveLength(1);
    expect(restored.state).toBe('quoting.requesting');
  });

  it('honours the quote cooldown across a restore', async () => {
    const slots = quoteSlots();
    // Another order took the slot for the same pair and amount at T0.
    void slots(
      {
        orderId: 'other',
        mode: 'defi',
        pair: 'BTCETH',
        depositCurrency: 'ETH',
        withdrawCurrency: 'BTC',
        depositAmount: '1.00000000',
        withdrawAmount: null,
        markup: null,
        referralCode: null,
        actionable: true,
        cooldownMs: 15_000,
      },
      T0,
    );
    const h = await OrderHarness.start(
      orderInput({ now: T0 + 2_000 }),
      {},
      { always: { acquireQuoteSlot: slots } },
    );
    expect(h.state).toBe('quoting.coolingDown');
    expect(h.context.retryAt).toBe(T0 + 15_000);

    const { restored } = await crashAndRestore(
      h,
      3_000,
      { requestQuote: [quoteReply()] },
      { always: { acquireQuoteSlot: slots } },
    );
    expect(restored.state).toBe('quoting.coolingDown');
    await restored.advance(9_999);
    expect(restored.calls.acquireQuoteSlot).toHaveLength(0);
    expect(restored.calls.requestQuote).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.requestQuote.map((call) => call.at)).toEqual([T0 + 15_000]);
  });

  it('fires a cooldown that ended while the order was down as soon as it is restored', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [ok({ granted: false, retryAt: T0 + 15_000 })],
    });
    const { restored } = await crashAndRestore(h, 60_000, { acquireQuoteSlot: [granted] });
    await restored.advance(0);
    expect(restored.calls.acquireQuoteSlot.map((call) => call.at)).toEqual([T0 + 60_000]);
    expect(restored.context.now).toBe(T0 + 60_000);
  });

  it('never repeats an identical quote request within the cooldown after a crash mid-request', async () => {
    const slots = quoteSlots();
    const h = await OrderHarness.start(orderInput(), {}, { always: { acquireQuoteSlot: slots } });
    expect(h.state).toBe('quoting.requesting');
    const { restored } = await crashAndRestore(
      h,
      4_000,
      { requestQuote: [quoteReply()] },
      { always: { acquireQuoteSlot: slots } },
    );
    expect(restored.state).toBe('quoting.coolingDown');
    await restored.advance(11_000);
    expect(restored.calls.requestQuote.map((call) => call.at)).toEqual([T0 + 15_000]);
    expect(restored.types()).toEqual(['order.quoted']);
  });

  it('re-arms a quote backoff with the time that remains', async () => {
    const h = await OrderHarness.start(
      orderInput(),
      { requestQuote: [fails('throttled', { retryAfterMs: 10_000 })] },
      {
        always: { acquireQuoteSlot: granted },
      },
    );
    expect(h.state).toBe('quoting.waiting');
    const { restored } = await crashAndRestore(h, 4_000, {}, { always: { acquireQuoteSlot: granted } });
    expect(restored.state).toBe('quoting.waiting');
    await restored.advance(5_999);
    expect(restored.calls.acquireQuoteSlot).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.acquireQuoteSlot.map((call) => call.at)).toEqual([T0 + 10_000]);
  });

  it('repeats a DeFi create that was in flight with the same rate_id, after the settle window, and takes the 200 reuse', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('rate-7')],
    });
    expect(h.state).toBe('creating.posting');
    const { restored } = await crashAndRestore(h, 2_000, {
      createOrder: [ok({ order: exchangeOrder(), reused: true })],
    });
    // The previous owner's POST may still be under way: no second POST beside it before the settle window passed.
    expect(restored.state).toBe('creating.waiting');
    expect(restored.context.pendingIntent).toMatchObject({ kind: 'create', outcome: 'unknown' });
    await restored.advance(restored.context.config.createSettleMs - 1);
    expect(restored.calls.createOrder).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.createOrder.map((call) => call.at)).toEqual([
      T0 + 2_000 + restored.context.config.createSettleMs,
    ]);
    expect(restored.calls.requestQuote).toHaveLength(0);
    expect(restored.calls.findExistingOrder).toHaveLength(0);
    expect(restored.calls.createOrder[0]?.input).toMatchObject({ rateId: 'rate-7', attempt: 2 });
    expect(restored.calls.createOrder[0]?.persisted.context.pendingIntent).toMatchObject({
      outcome: 'unknown',
    });
    expect(restored.state).toBe(OPEN);
    expect(restored.types()).toEqual(['order.created']);
    expect(restored.emitted[0]).toMatchObject({ reused: true });
  });

  it('parks (never re-quotes) a DeFi create in doubt whose repeat is answered with an expired rate_id', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('rate-7')],
    });
    const { restored } = await crashAndRestore(
      h,
      120_000,
      { createOrder: [fails('requote', { code: 'rate_id_invalid_or_expired' })] },
      { always: { acquireQuoteSlot: granted } },
    );
    await restored.advance(restored.context.config.createSettleMs);
    // The first POST may have created the order: a fresh quote and a second POST could make a second one.
    expect(restored.calls.requestQuote).toHaveLength(0);
    expect(restored.calls.createOrder).toHaveLength(1);
    expect(restored.context.requotes).toBe(0);
    expect(restored.context.pendingIntent).toMatchObject({
      kind: 'create',
      rateId: 'rate-7',
      outcome: 'unknown',
    });
    expect(restored.state).toBe('creating.parked');
    expect(restored.types()).toEqual(['order.parked']);
    expect(restored.emitted[0]).toMatchObject({
      rate_id: 'rate-7',
      mode: 'defi',
      code: 'rate_id_invalid_or_expired',
    });
  });

  it('looks for the CeFi order a create in flight may have made instead of posting again', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi_fixed' }), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply()],
    });
    const { restored } = await crashAndRestore(h, 2_000, {
      findExistingOrder: [ok({ order: exchangeOrder({ uniqueReference: 'FOUND' }) })],
    });
    // The previous owner's POST may still land: no lookup before the settle window has passed.
    expect(restored.state).toBe('creating.waiting');
    expect(restored.calls.findExistingOrder).toHaveLength(0);
    await restored.advance(restored.context.config.createSettleMs);
    expect(restored.calls.findExistingOrder[0]?.input).toMatchObject({
      since: T0,
      create: { rateId: 'rate-1' },
    });
    expect(restored.calls.createOrder).toHaveLength(0);
    expect(restored.state).toBe(OPEN);
    expect(restored.emitted).toEqual([
      expect.objectContaining({ type: 'order.created', unique_reference: 'FOUND' }),
    ]);
  });

  it('repeats a verification that was in flight', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [fails('unknown_outcome')],
    });
    await h.advance((h.context.retryAt ?? 0) - h.context.now);
    expect(h.state).toBe('creating.verifying');
    const { restored } = await crashAndRestore(h, 1_000, {
      findExistingOrder: [ok({ order: null })],
      createOrder: [created],
    });
    expect(restored.calls.findExistingOrder).toHaveLength(1);
    expect(restored.calls.createOrder).toHaveLength(1);
    expect(restored.state).toBe(OPEN);
  });

  it('re-arms a create backoff with the time that remains, and keeps a create in doubt in doubt', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [fails('unknown_outcome')],
    });
    const retryAt = h.context.retryAt ?? 0;
    const { restored } = await crashAndRestore(h, 100, {
      findExistingOrder: [ok({ order: exchangeOrder() })],
    });
    expect(restored.state).toBe('creating.waiting');
    expect(restored.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(false);
    await restored.advance(retryAt - T0 - 100 - 1);
    expect(restored.calls.findExistingOrder).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.findExistingOrder.map((call) => call.at)).toEqual([retryAt]);
    expect(restored.calls.createOrder).toHaveLength(0);
  });

  it('re-arms a create backoff after a definitive failure and posts again', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), { createOrder: [fails('backoff')] });
    const retryAt = h.context.retryAt ?? 0;
    const { restored } = await crashAndRestore(h, 100, { createOrder: [created] });
    expect(restored.snapshot.can({ type: 'CANCEL', at: T0 })).toBe(true);
    await restored.advance(retryAt - T0 - 100);
    expect(restored.calls.createOrder.map((call) => call.at)).toEqual([retryAt]);
    expect(restored.state).toBe(OPEN);
  });
});

describe('restore: once the exchange order exists', () => {
  async function openOrder(script: Script = {}, fixedRateDeadline: string | null = null) {
    return OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [ok({ order: exchangeOrder({ fixedRateDeadline }), reused: false })],
      ...script,
    });
  }

  it('re-arms the next poll with the time that remains', async () => {
    const h = await openOrder();
    await h.advance(10_000);
    const { restored } = await crashAndRestore(h, 5_000, {
      fetchOrder: [ok({ order: exchangeOrder() })],
    });
    expect(restored.state).toBe(OPEN);
    await restored.advance(14_999);
    expect(restored.calls.fetchOrder).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 30_000]);
    // INITIAL was published with the create: re-observing it publishes nothing.
    expect(restored.emitted).toEqual([]);
  });

  it('re-arms the payment deadline with the time that remains', async () => {
    const deadline = T0 + 45_000;
    const fixedRateDeadline = new Date(deadline).toISOString();
    const h = await openOrder(
      { fetchOrder: [ok({ order: exchangeOrder({ fixedRateDeadline }) })] },
      fixedRateDeadline,
    );
    await h.advance(30_000);
    expect(h.calls.fetchOrder).toHaveLength(1);
    const { restored } = await crashAndRestore(h, 5_000, {
      fetchOrder: [ok({ order: exchangeOrder({ fixedRateDeadline, status: 'CANCELED' }) })],
    });
    await restored.advance(9_999);
    expect(restored.calls.fetchOrder).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.fetchOrder.map((call) => call.at)).toEqual([deadline]);
    expect(restored.state).toBe('canceled');
    expect(restored.emitted).toEqual([
      {
        type: 'order.status_changed',
        unique_reference: 'EXREF1',
        status: 'CANCELED',
        previous_status: 'INITIAL',
      },
      { type: 'order.canceled', unique_reference: 'EXREF1', reason: 'payment_window_lapsed' },
    ]);
  });

  it('polls at once when a GET was in flight, without re-publishing a known status', async () => {
    const h = await openOrder({ fetchOrder: [ok({ order: exchangeOrder({ status: 'PAID' }) })] });
    await h.advance(30_000);
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 30_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    const { restored } = await crashAndRestore(h, 2_000, {
      fetchOrder: [ok({ order: exchangeOrder({ status: 'PAID' }) })],
    });
    expect(restored.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 32_000]);
    expect(restored.state).toBe(OPEN);
    expect(restored.emitted).toEqual([]);
  });

  it('repeats a deposit submission that was in flight; "already exists" counts as success', async () => {
    const h = await openOrder();
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 1_000 });
    expect(h.state).toBe('open.deposit.submitting.calling+open.exchange.monitoring');
    const { restored } = await crashAndRestore(h, 1_000, {
      submitDeposit: [fails('idempotent_success', { code: 'deposit_already_exists' })],
    });
    expect(restored.calls.submitDeposit.map((call) => call.input.txHash)).toEqual(['0xtx']);
    expect(restored.state).toBe('open.deposit.submitted+open.exchange.monitoring');
    expect(restored.emitted).toEqual([
      { type: 'order.deposit_submitted', tx_hash: '0xtx', already_recorded: true },
    ]);
  });

  it('re-arms a deposit submission backoff with the time that remains', async () => {
    const h = await openOrder({ submitDeposit: [fails('throttled', { retryAfterMs: 8_000 })] });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 });
    expect(h.state).toBe('open.deposit.submitting.waiting+open.exchange.monitoring');
    const { restored } = await crashAndRestore(h, 3_000, { submitDeposit: [ok({ alreadyRecorded: false })] });
    expect(restored.state).toBe('open.deposit.submitting.waiting+open.exchange.monitoring');
    await restored.advance(4_999);
    expect(restored.calls.submitDeposit).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.submitDeposit.map((call) => call.at)).toEqual([T0 + 8_000]);
    expect(restored.state).toBe('open.deposit.submitted+open.exchange.monitoring');
  });

  it('keeps a recorded deposit recorded and refuses a second one', async () => {
    const h = await openOrder({ submitDeposit: [ok({ alreadyRecorded: false })] });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 1_000 });
    const { restored } = await crashAndRestore(h, 1_000);
    expect(restored.state).toBe('open.deposit.submitted+open.exchange.monitoring');
    expect(restored.snapshot.can({ type: 'SUBMIT_DEPOSIT', txHash: '0xother', at: T0 })).toBe(false);
    expect(restored.calls.submitDeposit).toHaveLength(0);
  });

  it('polls at once when the next poll fell due while the order was down', async () => {
    const h = await openOrder();
    const { restored } = await crashAndRestore(h, 120_000, { fetchOrder: [ok({ order: exchangeOrder() })] });
    await restored.advance(0);
    expect(restored.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 120_000]);
  });
});

describe('restore: final states', () => {
  const finals: Array<[string, () => Promise<OrderHarness>]> = [
    [
      'completed',
      async () => {
        const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
          createOrder: [created],
          fetchOrder: [ok({ order: exchangeOrder({ status: 'COMPLETED' }) })],
        });
        await h.advance(30_000);
        return h;
      },
    ],
    [
      'refunded',
      async () => {
        const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
          createOrder: [created],
          fetchOrder: [ok({ order: exchangeOrder({ status: 'REFUNDED' }) })],
        });
        await h.advance(30_000);
        return h;
      },
    ],
    [
      'canceled',
      async () => {
        const h = await OrderHarness.start(orderInput());
        await h.send({ type: 'CANCEL', at: T0 });
        return h;
      },
    ],
    ['failed', () => OrderHarness.start(orderInput({ mode: 'cefi' }), { createOrder: [fails('fatal')] })],
  ];
  for (const [state, reach] of finals) {
    it(`restores a ${state} order as ${state}, publishing nothing`, async () => {
      const h = await reach();
      expect(h.state).toBe(state);
      const persisted = h.persisted();
      expect(persisted.done).toBe(true);
      const { restored } = await crashAndRestore(h, 1_000);
      expect(restored.state).toBe(state);
      expect(restored.snapshot.status).toBe('done');
      expect(restored.emitted).toEqual([]);
      expect(restored.context).toEqual({ ...h.context, now: h.context.now + 1_000 });
    });
  }

  it('fails an order whose stored state it does not know, rather than guessing', async () => {
    const h = await OrderHarness.start(orderInput());
    const persisted = h.persisted();
    const actor = createActor(orderMachine, {
      input: { restore: { resumeFrom: 'warpDrive', context: persisted.context }, now: T0 },
    });
    const emitted: unknown[] = [];
    actor.on('*', (event) => emitted.push(event));
    actor.start();
    expect(actor.getSnapshot().value).toBe('failed');
    expect(emitted).toEqual([expect.objectContaining({ type: 'order.failed', reason: 'unrestorable' })]);
    actor.stop();
  });
});

describe('toPersisted', () => {
  it('stores an open order under the single resume key "open"', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), { createOrder: [created] });
    expect(toPersisted(h.snapshot)).toMatchObject({
      resumeFrom: 'open',
      stateValue: { open: { deposit: 'awaiting', exchange: 'monitoring' } },
    });
  });
});

describe('jsonCopy', () => {
  const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;
  const leaf = fc.oneof(
    fc.string(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.date({ noInvalidDate: true }),
  );
  const data = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 5 }),
    object: fc.dictionary(fc.string(), tie('value'), { maxKeys: 6 }),
  }));

  it('gives what a JSON round trip gives, for plain data and for data holding dates, undefined, -0 or NaN', () => {
    fc.assert(
      fc.property(data.object, (value) => {
        expect(jsonCopy(value)).toStrictEqual(roundTrip(value));
      }),
      { numRuns: 2_000 },
    );
    expect(jsonCopy({ a: [1, undefined, -0], b: undefined, c: { d: NaN } })).toStrictEqual({
      a: [1, null, 0],
      c: { d: null },
    });
  });

  it('keeps an own "__proto__" key as JSON does, instead of setting the copy\'s prototype', () => {
    // fast-check found it (seed -979753598): JSON.parse makes "__proto__" an own property; an assignment does not.
    const value = JSON.parse('{"a":{"__proto__":{"b":1}},"c":{"__proto__":0}}') as Record<string, unknown>;
    const copy = jsonCopy(value);
    expect(copy).toStrictEqual(roundTrip(value));
    expect(Object.keys(copy['a'] as object)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(copy['a'])).toBe(Object.prototype);
    expect((copy['a'] as { b?: number }).b).toBeUndefined();
  });

  it('shares nothing with its source', () => {
    const source = { order: { status: 'PAID', amounts: [1, 2] } };
    const copy = jsonCopy(source);
    expect(copy).toStrictEqual(source);
    expect(copy.order).not.toBe(source.order);
    expect(copy.order.amounts).not.toBe(source.order.amounts);
  });
});
