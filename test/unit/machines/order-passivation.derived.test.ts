// What may rest and what a resting order may leave unwritten are the machine's own: the states it tags `restable`
// (each region where its restore router leads back), and context fields the compiler checks against OrderContext.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AnyStateNode } from 'xstate';
import { orderMachine } from '../../../machines/order-machine.ts';
import {
  contextFields,
  passiveUntil,
  restableStates,
  unwrittenContextFields,
} from '../../../machines/order-passivation.ts';
import type { PersistedOrder } from '../../../machines/order-persistence.ts';
import type { OrderContext } from '../../../machines/order-types.ts';
import { OrderHarness, exchangeOrder, ok, orderInput } from './order-harness.ts';

/** The leaf states of a region of the machine, by their name below it (`submitting.waiting`). */
function leavesOf(node: AnyStateNode, prefix = ''): string[] {
  const children = Object.values(node.states);
  if (children.length === 0) return [prefix.slice(0, -1)];
  return children.flatMap((child) => leavesOf(child, `${prefix}${child.key}.`));
}

/** A stored open order in these leaf states, with a context its restore routers lead back to them with. */
function storedIn(base: PersistedOrder, deposit: string, exchange: string): PersistedOrder {
  const at = base.context.now;
  const pending = { txHash: '0xabc', acceptedAt: at } as unknown as NonNullable<OrderContext['deposit']>;
  const recorded = { txHash: '0xabc', alreadyRecorded: false } as unknown as NonNullable<
    OrderContext['depositRecorded']
  >;
  const depositFields: Partial<Record<string, Partial<OrderContext>>> = {
    awaiting: { deposit: null, depositRecorded: null, depositRetryAt: null },
    submitted: { deposit: pending, depositRecorded: recorded, depositRetryAt: null },
    'submitting.waiting': { deposit: pending, depositRecorded: null, depositRetryAt: at + 5_000 },
    'submitting.calling': { deposit: pending, depositRecorded: null, depositRetryAt: null },
  };
  const [depositState, depositSub] = deposit.split('.');
  return {
    ...base,
    stateValue: {
      open: { deposit: depositSub ? { [depositState!]: depositSub } : deposit, exchange },
    },
    context: {
      ...base.context,
      ...depositFields[deposit],
      pollStartedAt: exchange === 'polling' ? at : null,
    },
  };
}

describe('passivation derived from the machine', () => {
  it('rests exactly in the states the machine tags restable', () => {
    expect([...restableStates].sort()).toEqual([
      'open.deposit.awaiting',
      'open.deposit.submitted',
      'open.deposit.submitting.waiting',
      'open.exchange.monitoring',
    ]);
  });

  it("lets an open order rest in a pair of its regions' states if and only if both are tagged restable", async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
    });
    const base = h.persisted();
    const open = orderMachine.root.states['open']!;
    const deposits = leavesOf(open.states['deposit']!).filter((leaf) => leaf !== 'resuming');
    const exchanges = leavesOf(open.states['exchange']!).filter((leaf) => leaf !== 'resuming');
    expect(deposits.length).toBeGreaterThan(2);
    expect(exchanges).toEqual(['monitoring', 'polling']);
    for (const deposit of deposits)
      for (const exchange of exchanges) {
        const restable =
          restableStates.has(`open.deposit.${deposit}`) && restableStates.has(`open.exchange.${exchange}`);
        expect(passiveUntil(storedIn(base, deposit, exchange)) !== null, `${deposit} / ${exchange}`).toBe(
          restable,
        );
      }
  });

  it("lists only fields of the machine's context as fields a resting order may leave unwritten", () => {
    for (const fields of Object.values(unwrittenContextFields))
      expectTypeOf(fields).toEqualTypeOf<ReadonlySet<keyof OrderContext>>();
    // A field the context does not have (a rename) does not compile.
    // @ts-expect-error 'pollStartedAtt' is not a field of OrderContext
    expect(contextFields('pollStartedAtt').size).toBe(1);
    expect([...unwrittenContextFields.pollStart]).toContain('pollStartedAt');
  });
});
