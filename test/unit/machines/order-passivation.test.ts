// Which stored orders may lose their actor while they wait, and until when (machines/order-passivation.ts): only an
// open order monitoring between polls, with its deposit region in a state its restore routes back to.
import { describe, expect, it } from 'vitest';
import { passiveUntil } from '../../../machines/order-passivation.ts';
import { OrderHarness, T0, exchangeOrder, fails, ok, orderInput } from './order-harness.ts';
import type { Script } from './order-harness.ts';

async function openOrder(script: Script = {}, fixedRateDeadline: string | null = null) {
  return OrderHarness.start(orderInput({ mode: 'cefi' }), {
    createOrder: [ok({ order: exchangeOrder({ fixedRateDeadline }), reused: false })],
    ...script,
  });
}

describe('passiveUntil', () => {
  it('lets an open order awaiting its deposit rest until its next poll', async () => {
    const h = await openOrder();
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(passiveUntil(h.durable())).toBe(T0 + 30_000);
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
    expect(passiveUntil(h.durable())).toBe(deadline);
  });

  it('keeps the actor while a poll is in flight, and while a deposit is being submitted', async () => {
    const h = await openOrder();
    await h.advance(30_000);
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(passiveUntil(h.durable())).toBeNull();
    await h.answer('fetchOrder', ok({ order: exchangeOrder() }));
    expect(passiveUntil(h.durable())).toBe(T0 + 60_000);
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 + 31_000 });
    expect(h.state).toBe('open.deposit.submitting.calling+open.exchange.monitoring');
    expect(passiveUntil(h.durable())).toBeNull();
    await h.answer('submitDeposit', ok({ alreadyRecorded: false }));
    expect(h.state).toBe('open.deposit.submitted+open.exchange.monitoring');
    expect(passiveUntil(h.durable())).toBe(T0 + 60_000);
  });

  it('wakes an order waiting to retry its deposit submission at the retry', async () => {
    const h = await openOrder({ submitDeposit: [fails('throttled', { retryAfterMs: 8_000 })] });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at: T0 });
    expect(h.state).toBe('open.deposit.submitting.waiting+open.exchange.monitoring');
    expect(passiveUntil(h.durable())).toBe(T0 + 8_000);
  });

  it('keeps every state before the exchange order exists, and a finished order, live', async () => {
    const quoting = await OrderHarness.start(orderInput({ mode: 'cefi' }), {});
    expect(passiveUntil(quoting.durable())).toBeNull();
    const done = await openOrder({ fetchOrder: [ok({ order: exchangeOrder({ status: 'COMPLETED' }) })] });
    await done.advance(30_000);
    expect(done.state).toBe('completed');
    expect(passiveUntil(done.durable())).toBeNull();
  });

  it('refuses a stored context its restore would not route back to the same deposit state', async () => {
    const h = await openOrder();
    const durable = h.durable();
    const inconsistent = {
      ...durable,
      context: { ...durable.context, deposit: { txHash: '0x', acceptedAt: T0, startedAt: null } },
    };
    expect(passiveUntil(inconsistent)).toBeNull();
  });
});
