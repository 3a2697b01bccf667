// The order machine and a create whose POST was answered yet did not finish, and the re-checks of a parked create
// (issue 50): a reference another order holds never becomes order.created nor a second POST; the reference a POST
// returned stays with the doubt (the lookup asks for it, the park names it); parked re-checks back off, look once,
// run as parked lookups, and stop for good once the lookup can never finish.
import { describe, expect, it } from 'vitest';
import type { CreateEvidence } from '../../../machines/domain.ts';
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

const heldElsewhere: CreateEvidence = { uniqueReference: 'HELD', claim: 'another_order', created: true };
const quick = { backoff: { baseMs: 100, maxMs: 100 }, createSettleMs: 100, parkedRecheckMs: 5_000 };

/** Time until the order's next timer, then past it. */
async function untilRetry(h: OrderHarness): Promise<void> {
  await h.advance((h.context.retryAt ?? h.context.now) - h.context.now);
}

describe('order machine: a reference another order holds (item 1)', () => {
  it('never publishes it, never POSTs again, and parks when the lookup finds no other order free', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), {
      createOrder: [
        fails('unknown_outcome', { code: 'created_order_claimed_elsewhere', evidence: heldElsewhere }),
      ],
      // A lookup that (wrongly) concludes "not created": the doubt knows its POST made an order, so it may not.
      findExistingOrder: [ok({ order: null })],
    });
    expect(h.state).toBe('creating.waiting');
    expect(h.context.pendingIntent).toMatchObject({ reference: 'HELD', foreign: ['HELD'] });
    await untilRetry(h);
    expect(h.calls.findExistingOrder[0]?.input.create).toMatchObject({
      knownReference: 'HELD',
      foreignReferences: ['HELD'],
      repeatsDoubt: true,
    });
    expect(h.calls.createOrder).toHaveLength(1);
    expect(h.state).toBe('creating.parked');
    expect(h.types()).toEqual(['order.parked']);
    expect(h.emitted[0]).toMatchObject({ code: 'created_order_claimed_elsewhere' });
    expect((h.emitted[0] as { tried: string[] }).tried).toContain(
      'POST /orders/ made HELD, which another order holds',
    );
  });

  it('adopts another free order of the same content the lookup finds (the sibling took ours)', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), {
      createOrder: [
        fails('unknown_outcome', { code: 'created_order_claimed_elsewhere', evidence: heldElsewhere }),
      ],
      findExistingOrder: [ok({ order: exchangeOrder({ uniqueReference: 'FREE' }) })],
    });
    await untilRetry(h);
    expect(h.types()).toEqual(['order.created']);
    expect(h.emitted[0]).toMatchObject({ unique_reference: 'FREE' });
  });

  it('keeps a reuse that names another order out of a DeFi repeat (the repeat is refused it too)', async () => {
    const h = await OrderHarness.start(
      orderInput({ config: quick }),
      {
        createOrder: [
          fails('unknown_outcome', {
            code: 'reused_foreign_order',
            evidence: { uniqueReference: 'SOMEONES', claim: 'another_order', created: false },
          }),
        ],
      },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply('rate-1') } },
    );
    await untilRetry(h);
    expect(h.calls.createOrder[1]?.input).toMatchObject({
      rateId: 'rate-1',
      repeatsDoubt: true,
      foreignReferences: ['SOMEONES'],
    });
    expect(h.calls.createOrder[1]?.input.knownReference).toBeUndefined();
    expect(h.types()).toEqual(['order.quoted']);
  });
});

describe('order machine: the reference a POST returned stays with the doubt (item 7)', () => {
  it('DeFi: a create whose confirming GET failed names its reference in the repeat and in order.parked', async () => {
    const h = await OrderHarness.start(
      orderInput({ config: quick }),
      {
        createOrder: [
          fails('unknown_outcome', {
            code: 'create_unconfirmed',
            evidence: { uniqueReference: 'UNCONF', claim: 'ours', created: true },
          }),
          fails('requote', { code: 'rate_id_invalid_or_expired' }),
        ],
      },
      { always: { acquireQuoteSlot: granted, requestQuote: quoteReply('rate-1') } },
    );
    expect(h.context.pendingIntent).toMatchObject({ reference: 'UNCONF' });
    await untilRetry(h);
    expect(h.calls.createOrder[1]?.input).toMatchObject({ knownReference: 'UNCONF', rateId: 'rate-1' });
    expect(h.state).toBe('creating.parked');
    expect((h.emitted.at(-1) as { tried: string[] }).tried).toContain(
      "POST /orders/ was answered with UNCONF (not confirmed as this order's)",
    );
  });
});

describe('order machine: parked re-checks (item 6)', () => {
  /** A CeFi create in doubt whose first lookup is refused for good: parked. */
  const parking = () => ({
    createOrder: [fails<'createOrder'>('unknown_outcome')],
    findExistingOrder: [fails<'findExistingOrder'>('fatal', { code: 'unauthorized' })],
  });

  it('back off: each re-check that changes nothing doubles the wait, up to the cap; a restored order keeps it', async () => {
    const config = { ...quick, maxAttempts: 2, parkedRecheckMs: 5_000, parkedRecheckMaxMs: 20_000 };
    const h = await OrderHarness.start(
      orderInput({ mode: 'cefi', config }),
      { createOrder: [fails('unknown_outcome')] },
      { always: { findExistingOrder: fails('backoff', { code: 'http_503' }) } },
    );
    await untilRetry(h);
    expect(h.state).toBe('creating.parked');
    const parkedAt = h.context.now;
    const waits: number[] = [];
    let last = parkedAt;
    for (let i = 0; i < 3; i++) {
      const due = h.context.retryAt ?? 0;
      waits.push(due - last);
      last = due;
      await untilRetry(h);
    }
    expect(waits).toEqual([5_000, 10_000, 20_000]);
    // Restored elsewhere now: the next re-check is where this replica would have made it, and then the cap again.
    const next = h.context.retryAt ?? 0;
    expect(next - last).toBe(20_000);
    const restored = await OrderHarness.restore(
      h.persisted(),
      h.context.now + 1_000,
      {},
      { always: { findExistingOrder: fails('backoff', { code: 'http_503' }) } },
    );
    h.stop();
    expect(restored.state).toBe('creating.parked');
    expect(restored.context.retryAt).toBe(next);
    await untilRetry(restored);
    expect(restored.calls.findExistingOrder).toHaveLength(1);
    expect((restored.context.retryAt ?? 0) - next).toBe(20_000);
    expect(restored.types()).toEqual([]);
  });

  it('look once per re-check (a failure waits for the next one), as a parked lookup', async () => {
    const h = await OrderHarness.start(
      orderInput({ mode: 'cefi', config: { ...quick, maxAttempts: 8 } }),
      parking(),
    );
    await untilRetry(h);
    expect(h.state).toBe('creating.parked');
    await h.answer('findExistingOrder', fails('backoff', { code: 'http_503' }));
    await h.advance(5_000);
    expect(h.calls.findExistingOrder).toHaveLength(2);
    expect(h.calls.findExistingOrder[1]?.input.parked).toBe(true);
    expect(h.calls.findExistingOrder[0]?.input.parked).toBe(false);
    expect(h.state).toBe('creating.parked');
    // No retry inside the re-check: the next lookup only after the doubled wait.
    await h.advance(9_999);
    expect(h.calls.findExistingOrder).toHaveLength(2);
    await h.advance(1);
    expect(h.calls.findExistingOrder).toHaveLength(3);
  });

  it('stop for good once the lookup can never finish (lookup_unreachable): parked, said once, waiting for order.settle', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), {
      createOrder: [fails('unknown_outcome')],
      findExistingOrder: [fails('fatal', { code: 'lookup_unreachable', message: 'past the page cap' })],
      adoptOrder: [ok({ order: exchangeOrder({ uniqueReference: 'OPS' }) })],
    });
    await untilRetry(h);
    expect(h.state).toBe('creating.parked');
    expect(h.types()).toEqual(['order.parked']);
    expect(h.emitted[0]).toMatchObject({ code: 'lookup_unreachable' });
    expect(h.context.lookupUnreachableAt).toBe(h.context.now);
    expect(h.context.retryAt).toBeNull();
    // Past setTimeout's longest delay (the only timer left): still no lookup.
    await h.advance(30 * 24 * 3_600_000);
    expect(h.calls.findExistingOrder).toHaveLength(1);
    expect(h.types()).toEqual(['order.parked']);
    await h.send({ type: 'SETTLE', resolution: 'adopt', uniqueReference: 'OPS', at: h.context.now });
    expect(h.types()).toEqual(['order.parked', 'order.created']);
  });

  it('stop once a parked re-check finds the lookup can never finish, quietly (no second order.parked)', async () => {
    const script = parking();
    script.findExistingOrder.push(fails('fatal', { code: 'lookup_unreachable' }));
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), script);
    await untilRetry(h);
    await h.advance(5_000);
    expect(h.calls.findExistingOrder).toHaveLength(2);
    expect(h.context.lookupUnreachableAt).not.toBeNull();
    await h.advance(3_600_000);
    expect(h.calls.findExistingOrder).toHaveLength(2);
    expect(h.types()).toEqual(['order.parked']);
  });
});

describe('order machine: a lookup that cannot conclude yet (a sibling POST is out)', () => {
  it('looks again when told, without counting a failure; a parked one waits parked, quietly', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi', config: quick }), {
      createOrder: [fails('unknown_outcome')],
    });
    await untilRetry(h);
    expect(h.state).toBe('creating.verifying');
    await h.answer('findExistingOrder', ok({ order: null, recheckAt: h.context.now + 30_000 }));
    expect(h.state).toBe('creating.waiting');
    expect(h.context.attempt).toBe(0);
    expect(h.context.retryAt).toBe(h.context.now + 30_000);
    await h.advance(29_999);
    expect(h.calls.findExistingOrder).toHaveLength(1);
    await h.advance(1);
    expect(h.calls.findExistingOrder).toHaveLength(2);
    await h.answer('findExistingOrder', fails('fatal', { code: 'unauthorized' }));
    expect(h.state).toBe('creating.parked');
    await h.advance(5_000);
    await h.answer('findExistingOrder', ok({ order: null, recheckAt: h.context.now + 7_000 }));
    expect(h.state).toBe('creating.parked');
    expect(h.context.retryAt).toBe(h.context.now + 7_000);
    expect(h.types()).toEqual(['order.parked']);
    expect(T0).toBeLessThan(h.context.now);
  });
});
