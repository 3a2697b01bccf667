// The XState binding's status: computed once per snapshot (the host asks for it many times per transition), and
// computed again as soon as the order moves on.
import { describe, expect, it } from 'vitest';
import type { OrderCreateCommand } from '../../../src/contract/commands.ts';
import { createXStateBinding } from '../../../src/worker/xstate-binding.ts';
import { createCommand } from './host-fixtures.ts';

describe('xstate binding status', () => {
  it('is the same object until the order transitions, then reflects the new state', async () => {
    const addressChecked = Promise.withResolvers<void>();
    const binding = createXStateBinding({
      orderConfig: {},
      actors: {
        checkAddress: async () => {
          await addressChecked.promise;
          return { ok: true, at: Date.now() };
        },
        preScreen: () => Promise.reject(new Error('not used')),
        acquireQuoteSlot: () => new Promise(() => {}),
        requestQuote: () => new Promise(() => {}),
        // Never answers: the order stays in its create call.
        createOrder: () => new Promise(() => {}),
        findExistingOrder: () => Promise.reject(new Error('not used')),
        adoptOrder: () => Promise.reject(new Error('not used')),
        submitDeposit: () => Promise.reject(new Error('not used')),
        fetchOrder: () => new Promise(() => {}),
      },
    });
    const changes: number[] = [];
    const actor = binding.create(createCommand as OrderCreateCommand, {
      orderId: createCommand.order_id,
      now: Date.now(),
      onChange: (emitted) => changes.push(emitted.length),
      onError: (error) => {
        throw error;
      },
    });
    const first = actor.status();
    expect(actor.status()).toBe(first);
    const before = changes.length;
    expect(first.state).toContain('checkingAddress');

    addressChecked.resolve();
    for (let i = 0; i < 20 && changes.length === before; i++)
      await new Promise((resolve) => setImmediate(resolve));
    expect(changes.length).toBeGreaterThan(before);

    const next = actor.status();
    expect(next).not.toBe(first);
    expect(next.state).not.toBe(first.state);
    expect(next.state).toContain('creating');
    expect(actor.status()).toBe(next);
    actor.stop();
  });
});
