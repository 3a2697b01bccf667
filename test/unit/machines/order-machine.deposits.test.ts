// Every accepted deposit is accounted for at the order's end: an order.submit_deposit means the user broadcast
// money, so an end (completed, refunded, canceled, failed) that comes before the exchange recorded that transaction
// says so (unrecorded_deposit: unconfirmed, retrying or rejected), and a cancellation then never blames the user.
import { describe, expect, it } from 'vitest';
import type { ExchangeOrderView } from '../../../machines/domain.ts';
import { jsonCopy } from '../../../machines/order-persistence.ts';
import { OrderHarness, T0, exchangeOrder, fails, ok, orderInput } from './order-harness.ts';
import type { Script } from './order-harness.ts';

/** The payment window of the exchange order (exchangeOrder: 30 minutes from T0). */
const deadline = T0 + 30 * 60_000;

/**
 * A CeFi order whose exchange order exists and whose polls answer `status` (INITIAL until the payment deadline, then
 * `atDeadline`), with the deposit `txHash` submitted at T0 + 1 s; `submitDeposit` scripts its PATCH (none: in flight).
 */
async function depositedOrder(
  atDeadline: Partial<ExchangeOrderView>,
  submitDeposit: Script['submitDeposit'] = [],
  txHash = '0xabc',
): Promise<OrderHarness> {
  const h = await OrderHarness.start(
    orderInput({ mode: 'cefi' }),
    { createOrder: [ok({ order: exchangeOrder(), reused: false })], submitDeposit },
    {
      always: {
        fetchOrder: (_input, now) => ({
          order: now >= deadline ? exchangeOrder(atDeadline) : exchangeOrder(),
          at: now,
        }),
      },
    },
  );
  await h.advance(1_000);
  await h.send({ type: 'SUBMIT_DEPOSIT', txHash, at: h.clock.now() });
  return h;
}

/** Runs the order up to its payment deadline (its polls on the way answer INITIAL) and a little past it. */
async function pastDeadline(h: OrderHarness): Promise<void> {
  while (h.clock.now() < deadline + 1_000 && h.snapshot.status === 'active') await h.advance(30_000);
}

describe('order machine: an accepted deposit at the end of its order', () => {
  it('cancels as the exchange did, not as a lapsed window, with a deposit whose PATCH never came back', async () => {
    const h = await depositedOrder({ status: 'CANCELED' });
    expect(h.pending()).toContain('submitDeposit');
    await pastDeadline(h);
    expect(h.state).toBe('canceled');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.canceled',
      unique_reference: 'EXREF1',
      reason: 'exchange',
      unrecorded_deposit: {
        tx_hash: '0xabc',
        state: 'unconfirmed',
        accepted_at: new Date(T0 + 1_000).toISOString(),
      },
    });
    expect(h.context.cancelReason).toBe('exchange');
  });

  it('says the deposit was not recorded when the order completes while its PATCH is out', async () => {
    const h = await depositedOrder({ status: 'COMPLETED', withdrawTransaction: '0xout' });
    await pastDeadline(h);
    expect(h.state).toBe('completed');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.completed',
      unique_reference: 'EXREF1',
      withdraw_transaction: '0xout',
      unrecorded_deposit: {
        tx_hash: '0xabc',
        state: 'unconfirmed',
        accepted_at: new Date(T0 + 1_000).toISOString(),
      },
    });
  });

  it('reports a deposit failing and waiting for its retry as retrying, with the code of its failure', async () => {
    const h = await depositedOrder({}, [fails('throttled', { code: 'throttled', retryAfterMs: 3_600_000 })]);
    expect(h.context.depositRetryAt).toBe(T0 + 1_000 + 3_600_000);
    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ status: 'REFUNDED', refundTransaction: '0xback' }) }),
    );
    await h.advance(30_000);
    expect(h.state).toBe('refunded');
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.refunded',
      unique_reference: 'EXREF1',
      refund_transaction: '0xback',
      unrecorded_deposit: {
        tx_hash: '0xabc',
        state: 'retrying',
        accepted_at: new Date(T0 + 1_000).toISOString(),
        code: 'throttled',
        message: 'throttled failure',
      },
    });
  });

  it('reports a deposit the exchange refused, and cancels as the exchange did rather than as a lapsed window', async () => {
    const h = await depositedOrder({ status: 'CANCELED' }, [
      fails('fatal', { code: 'deposit_hash_on_another_order', message: 'known on another order' }),
    ]);
    expect(h.types()).toContain('order.deposit_rejected');
    await pastDeadline(h);
    expect(h.emitted.at(-1)).toMatchObject({
      type: 'order.canceled',
      reason: 'exchange',
      unrecorded_deposit: {
        tx_hash: '0xabc',
        state: 'rejected',
        code: 'deposit_hash_on_another_order',
        message: 'known on another order',
      },
    });
  });

  it('says nothing when the exchange order carries the hash (however it got there), spelled in another case', async () => {
    const h = await depositedOrder({ status: 'COMPLETED', depositTransaction: '0xABC' });
    await pastDeadline(h);
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.completed',
      unique_reference: 'EXREF1',
      withdraw_transaction: '',
    });
  });

  it('forgets a refused deposit once another one is recorded', async () => {
    const h = await depositedOrder({ status: 'COMPLETED' }, [
      fails('fatal', { code: 'invalid_tx', message: 'bad hash' }),
      ok({ alreadyRecorded: false }),
    ]);
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xgood', at: h.clock.now() });
    expect(h.context.depositRecorded).toMatchObject({ txHash: '0xgood' });
    await pastDeadline(h);
    expect(h.emitted.at(-1)).not.toHaveProperty('unrecorded_deposit');
  });

  it('still reports a lapsed payment window when no deposit was ever submitted', async () => {
    const h = await OrderHarness.start(
      orderInput({ mode: 'cefi' }),
      { createOrder: [ok({ order: exchangeOrder(), reused: false })] },
      {
        always: {
          fetchOrder: (_input, now) => ({
            order: exchangeOrder(now >= deadline ? { status: 'CANCELED' } : {}),
            at: now,
          }),
        },
      },
    );
    await pastDeadline(h);
    expect(h.emitted.at(-1)).toEqual({
      type: 'order.canceled',
      unique_reference: 'EXREF1',
      reason: 'payment_window_lapsed',
    });
  });

  it('says so when an order restored in a state this version does not know fails with a deposit pending', async () => {
    const h = await depositedOrder({});
    const persisted = h.persisted();
    h.stop();
    const restored = await OrderHarness.start({
      restore: { resumeFrom: 'warpDrive', context: jsonCopy(persisted.context) },
      now: h.clock.now(),
    });
    expect(restored.state).toBe('failed');
    expect(restored.emitted.at(-1)).toMatchObject({
      type: 'order.failed',
      reason: 'unrestorable',
      unrecorded_deposit: { tx_hash: '0xabc', state: 'unconfirmed' },
    });
  });
});
