import { describe, expect, it } from 'vitest';
import {
  OrderHarness,
  T0,
  exchangeOrder,
  fails,
  granted,
  ok,
  orderInput,
  quoteReply,
} from './order-harness.ts';

describe('order machine: happy paths', () => {
  it('quotes, creates with the rate_id, takes a deposit and completes a DeFi order after a confirming GET', async () => {
    const order = exchangeOrder({ fixedRateDeadline: new Date(T0 + 20 * 60_000).toISOString() });
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('rate-1')],
      createOrder: [ok({ order, reused: false })],
      submitDeposit: [ok({ alreadyRecorded: false })],
    });

    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.calls.acquireQuoteSlot[0]?.input).toMatchObject({
      mode: 'defi',
      pair: 'BTCETH',
      depositAmount: '1.00000000',
      cooldownMs: 15_000,
      actionable: true,
    });
    expect(h.calls.createOrder[0]?.input).toMatchObject({
      rateId: 'rate-1',
      isLimitOrder: false,
      attempt: 1,
    });
    expect(h.types()).toEqual(['order.quoted', 'order.created']);
    expect(h.emitted[1]).toEqual({
      type: 'order.created',
      unique_reference: 'EXREF1',
      deposit_address: '0xdeposit',
      deposit_address_extra_id: '',
      deposit_amount: '1.00000000',
      withdraw_amount: '0.05000000',
      rate: '0.05000000',
      deadline: new Date(T0 + 20 * 60_000).toISOString(),
      reused: false,
    });
    expect(h.context.paymentDeadline).toBe(T0 + 20 * 60_000);

    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: h.clock.now() });
    expect(h.state).toBe('open.deposit.submitted+open.exchange.monitoring');
    expect(h.calls.submitDeposit[0]?.input).toEqual({
      orderId: 'order-1',
      mode: 'defi',
      uniqueReference: 'EXREF1',
      txHash: '0xtx',
    });
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.deposit_submitted',
      tx_hash: '0xtx',
      already_recorded: false,
    });

    await h.answer('fetchOrder', ok({ order: { ...order, status: 'PAID', depositTransaction: '0xtx' } }));
    await h.advance(30_000);
    expect(h.calls.fetchOrder).toHaveLength(1);
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.status_changed',
      unique_reference: 'EXREF1',
      status: 'PAID',
      previous_status: 'INITIAL',
    });

    await h.answer(
      'fetchOrder',
      ok({ order: { ...order, status: 'COMPLETED', withdrawTransaction: '0xpayout' } }),
    );
    await h.advance(30_000);
    expect(h.state).toBe('completed');
    expect(h.snapshot.status).toBe('done');
    expect(h.types().slice(-2)).toEqual(['order.status_changed', 'order.completed']);
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.completed',
      unique_reference: 'EXREF1',
      withdraw_transaction: '0xpayout',
    });
  });

  it('creates a floating CeFi order without a quote or rate_id', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
    });
    expect(h.calls.acquireQuoteSlot).toHaveLength(0);
    expect(h.calls.requestQuote).toHaveLength(0);
    expect(h.calls.createOrder[0]?.input).toMatchObject({ mode: 'cefi', rateId: null, isLimitOrder: false });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
  });

  it('creates a CeFi fixed-rate order bound to a CeFi quote', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi_fixed' }), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply('cefi-rate')],
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
    });
    expect(h.calls.requestQuote[0]?.input).toMatchObject({ mode: 'cefi_fixed', actionable: false });
    expect(h.calls.createOrder[0]?.input).toMatchObject({ rateId: 'cefi-rate' });
  });

  it('creates a limit order with limit_ttl and no rate_id', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', limitOrder: { ttlSeconds: 900 } }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
    });
    expect(h.calls.requestQuote).toHaveLength(0);
    expect(h.calls.createOrder[0]?.input).toMatchObject({
      rateId: null,
      isLimitOrder: true,
      limitTtlSeconds: 900,
    });
  });

  it('goes on when the exchange reuses an existing DeFi order (200)', async () => {
    const h = await OrderHarness.start(orderInput(), {
      acquireQuoteSlot: [granted],
      requestQuote: [quoteReply()],
      createOrder: [ok({ order: exchangeOrder(), reused: true })],
    });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.emitted.at(-1)).toMatchObject({ type: 'order.created', reused: true });
  });

  it('pre-screens before quoting and stops the order with the compliance message when it fails', async () => {
    const h = await OrderHarness.start(orderInput({ preScreening: { ip: '203.0.113.7' } }), {
      preScreen: [ok({ status: 'failed', message: 'Address flagged' })],
    });
    expect(h.calls.preScreen[0]?.input).toEqual({
      orderId: 'order-1',
      mode: 'defi',
      ip: '203.0.113.7',
      pair: 'BTCETH',
      depositAmount: '1.00000000',
      withdrawAmount: null,
    });
    expect(h.state).toBe('failed');
    expect(h.calls.acquireQuoteSlot).toHaveLength(0);
    expect(h.emitted).toEqual([
      {
        type: 'order.failed',
        reason: 'compliance_rejected',
        code: 'pre_screening_failed',
        message: 'Address flagged',
      },
    ]);
  });

  it('goes on to quoting when pre-screening succeeds', async () => {
    const h = await OrderHarness.start(orderInput({ preScreening: { ip: '203.0.113.7' } }), {
      preScreen: [ok({ status: 'success', message: '' })],
      acquireQuoteSlot: [granted],
    });
    expect(h.state).toBe('quoting.requesting');
  });

  it('treats the "already exists" answer to a deposit submission as success', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
      submitDeposit: [fails('idempotent_success', { code: 'deposit_already_exists' })],
    });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: h.clock.now() });
    expect(h.state).toBe('open.deposit.submitted+open.exchange.monitoring');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.deposit_submitted',
      tx_hash: '0xtx',
      already_recorded: true,
    });
  });
});
