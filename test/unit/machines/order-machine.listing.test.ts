// The order machine and the bulk listing (GET /orders/?status=<code>, LISTED events): a listed status equal to the
// one confirmed stands for the routine poll, another one only triggers a GET, a stale one changes nothing, and no
// listing ever ends an order by itself.
import { describe, expect, it } from 'vitest';
import { listedPollIntervalMs } from '../../../machines/order-context.ts';
import { exchangeOrder, ok, orderInput, OrderHarness, T0 } from './order-harness.ts';

async function openCefiOrder(pollIntervalMs = 30_000) {
  return OrderHarness.start(orderInput({ mode: 'cefi', config: { pollIntervalMs } }), {
    createOrder: [ok({ order: exchangeOrder({ status: 'INITIAL' }), reused: false })],
  });
}

describe('order machine: bulk listing', () => {
  it('takes a listing of the confirmed status as a confirmation: no GET, the next poll moves back', async () => {
    const h = await openCefiOrder();
    expect(h.context.confirmedAt).toBe(T0);
    expect(h.context.nextPollAt).toBe(T0 + 30_000);

    await h.advance(20_000);
    await h.send({ type: 'LISTED', status: 'INITIAL', at: T0 + 20_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.context.confirmedAt).toBe(T0 + 20_000);
    // The routine poll becomes a fallback at the longest recommended interval after the listing.
    expect(h.context.nextPollAt).toBe(T0 + 20_000 + listedPollIntervalMs);

    // The poll that was due at T0 + 30 s does not happen: its timer was re-armed from the listing.
    await h.advance(listedPollIntervalMs - 1);
    expect(h.calls.fetchOrder).toHaveLength(0);
    await h.advance(1);
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 20_000 + listedPollIntervalMs]);
    expect(h.types()).toEqual(['order.created']);
  });

  it('keeps an order confirmed by listings alone, round after round, without a GET', async () => {
    const h = await openCefiOrder();
    for (let round = 1; round <= 10; round++) {
      await h.advance(25_000);
      await h.send({ type: 'LISTED', status: 'INITIAL', at: T0 + round * 25_000 });
    }
    expect(h.calls.fetchOrder).toHaveLength(0);
    expect(h.context.nextPollAt).toBe(T0 + 250_000 + listedPollIntervalMs);
  });

  it('moves the routine poll of a 60 s order to a full interval after the listing', async () => {
    const h = await openCefiOrder(60_000);
    expect(h.context.nextPollAt).toBe(T0 + 60_000);
    await h.advance(30_000);
    await h.send({ type: 'LISTED', status: 'INITIAL', at: T0 + 30_000 });
    expect(h.context.nextPollAt).toBe(T0 + 30_000 + listedPollIntervalMs);
    await h.advance(listedPollIntervalMs - 1);
    expect(h.calls.fetchOrder).toHaveLength(0);
  });

  it('treats a listing with another status as a hint: a GET, and only the GET is believed', async () => {
    const h = await openCefiOrder();
    await h.advance(5_000);
    await h.send({ type: 'LISTED', status: 'PAID', at: T0 + 5_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(h.calls.fetchOrder.map((call) => call.at)).toEqual([T0 + 5_000]);
    // Nothing is published on the listing's word.
    expect(h.context.lastStatus).toBe('INITIAL');
    expect(h.types()).toEqual(['order.created']);

    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.monitoring');
    expect(h.context.lastStatus).toBe('PAID');
    expect(h.emitted.at(-1)).toMatchObject({
      type: 'order.status_changed',
      status: 'PAID',
      previous_status: 'INITIAL',
    });
  });

  it('publishes nothing when the GET a listing triggered disagrees with the listing', async () => {
    const h = await openCefiOrder();
    await h.send({ type: 'LISTED', status: 'PAID', at: T0 + 1_000 });
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'INITIAL' }) }));
    expect(h.context.lastStatus).toBe('INITIAL');
    expect(h.types()).toEqual(['order.created']);
  });

  it('ignores a listing older than the last confirmation', async () => {
    const h = await openCefiOrder();
    await h.advance(10_000);
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 10_000 });
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    expect(h.context.confirmedAt).toBe(T0 + 10_000);
    const before = h.context;

    // A page requested before that GET still shows INITIAL: neither a hint nor a confirmation.
    expect(h.snapshot.can({ type: 'LISTED', status: 'INITIAL', at: T0 + 9_000 })).toBe(false);
    expect(h.snapshot.can({ type: 'LISTED', status: 'PAID', at: T0 + 9_000 })).toBe(false);
    await h.send({ type: 'LISTED', status: 'INITIAL', at: T0 + 9_000 });
    await h.send({ type: 'LISTED', status: 'PAID', at: T0 + 9_000 });
    expect(h.calls.fetchOrder).toHaveLength(1);
    expect(h.context.nextPollAt).toBe(before.nextPollAt);
    expect(h.context.confirmedAt).toBe(before.confirmedAt);
  });

  it('does not count a GET that answers a status behind the confirmed one as a confirmation', async () => {
    const h = await openCefiOrder();
    await h.advance(10_000);
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 10_000 });
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'PAID' }) }));
    await h.advance(10_000);
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 20_000 });
    await h.answer('fetchOrder', ok({ order: exchangeOrder({ status: 'INITIAL' }) }));
    expect(h.context.lastStatus).toBe('PAID');
    expect(h.context.confirmedAt).toBe(T0 + 10_000);
  });

  it('reaches a terminal state only through the GET, never on a listing', async () => {
    const h = await openCefiOrder();
    await h.send({ type: 'LISTED', status: 'COMPLETED', at: T0 + 1_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(h.snapshot.status).toBe('active');
    expect(h.types()).toEqual(['order.created']);

    await h.answer(
      'fetchOrder',
      ok({ order: exchangeOrder({ status: 'COMPLETED', withdrawTransaction: '0xw' }) }),
    );
    expect(h.state).toBe('completed');
    expect(h.types()).toEqual(['order.created', 'order.status_changed', 'order.completed']);
  });

  it('does not react to a listing while a GET is in flight (the GET answers, the next round lists again)', async () => {
    const h = await openCefiOrder();
    await h.send({ type: 'WEBHOOK_HINT', at: T0 + 1_000 });
    expect(h.state).toBe('open.deposit.awaiting+open.exchange.polling');
    expect(h.snapshot.can({ type: 'LISTED', status: 'INITIAL', at: T0 + 2_000 })).toBe(false);
    expect(h.snapshot.can({ type: 'LISTED', status: 'PAID', at: T0 + 2_000 })).toBe(false);
    await h.send({ type: 'LISTED', status: 'PAID', at: T0 + 2_000 });
    expect(h.calls.fetchOrder).toHaveLength(1);
    expect(h.context.hintPending).toBe(false);
  });

  it('keeps the listing confirmation across a restore, and restores older records without it', async () => {
    const h = await openCefiOrder();
    await h.advance(20_000);
    await h.send({ type: 'LISTED', status: 'INITIAL', at: T0 + 20_000 });
    const persisted = h.persisted();
    h.stop();
    expect(persisted.context.confirmedAt).toBe(T0 + 20_000);

    const restored = await OrderHarness.restore(persisted, T0 + 21_000);
    expect(restored.context.confirmedAt).toBe(T0 + 20_000);
    expect(restored.context.nextPollAt).toBe(T0 + 20_000 + listedPollIntervalMs);
    // A stale listing is still recognised after the restore.
    expect(restored.snapshot.can({ type: 'LISTED', status: 'INITIAL', at: T0 + 19_000 })).toBe(false);
    await restored.advance(listedPollIntervalMs - 1_000 - 1);
    expect(restored.calls.fetchOrder).toHaveLength(0);
    await restored.advance(1);
    expect(restored.calls.fetchOrder).toHaveLength(1);
    restored.stop();

    // A record written before listings existed has no confirmedAt: it restores, and a listing confirms it.
    const { confirmedAt: _dropped, ...olderContext } = persisted.context;
    const older = await OrderHarness.restore({ ...persisted, context: olderContext }, T0 + 21_000);
    expect(older.context.confirmedAt).toBeNull();
    await older.send({ type: 'LISTED', status: 'INITIAL', at: T0 + 22_000 });
    expect(older.context.confirmedAt).toBe(T0 + 22_000);
    expect(older.context.nextPollAt).toBe(T0 + 22_000 + listedPollIntervalMs);
    older.stop();
  });
});
