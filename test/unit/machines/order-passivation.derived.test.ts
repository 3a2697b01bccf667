// What may rest and what a resting order may leave unwritten are the machine's own: the states it tags `restable`
// (each region where its restore router leads back), and context fields the compiler checks against OrderContext.
import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AnyStateNode } from 'xstate';
import { orderMachine } from '../../../machines/order-machine.ts';
import {
  contextFields,
  passiveUntil,
  pollDeferrableUntil,
  restableStates,
  restingPlan,
  restsInStates,
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

/** The active leaves a state value names, by dotted path, as the restore read them before (the reference). */
function activeLeaves(value: unknown, prefix: string): string[] | null {
  if (typeof value === 'string') return [prefix + value];
  if (typeof value !== 'object' || value === null) return null;
  const leaves: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const below = activeLeaves(child, `${prefix}${key}.`);
    if (below === null) return null;
    leaves.push(...below);
  }
  return leaves;
}

function restsByLeafList(value: unknown, deposit: string, exchange: string): boolean {
  const leaves = activeLeaves(value, '');
  return (
    leaves !== null &&
    leaves.length > 0 &&
    leaves.every((leaf) => restableStates.has(leaf)) &&
    leaves.includes(`open.deposit.${deposit}`) &&
    leaves.includes(`open.exchange.${exchange}`)
  );
}

describe('passivation derived from the machine', () => {
  it('reads a stored state value as the list of its active leaves would, for any value', () => {
    // Names the machine uses (and some it does not), so that generated values often are, or nearly are, states.
    const names = fc.constantFrom(
      'open',
      'deposit',
      'exchange',
      'awaiting',
      'submitted',
      'submitting',
      'waiting',
      'calling',
      'monitoring',
      'polling',
      'resuming',
      'creating',
      'parked',
      'x',
    );
    const stateValue = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        names,
        fc.dictionary(names, tie('value'), { maxKeys: 3 }),
        fc.constantFrom(null, 1, []),
      ),
    })).value;
    const restable = fc.record({
      deposit: fc.constantFrom('awaiting', 'submitted', 'submitting.waiting', 'submitting.calling'),
      exchange: fc.constantFrom('monitoring', 'polling'),
    });
    const openValue = restable.map(({ deposit, exchange }) => {
      const [state, sub] = deposit.split('.');
      return { open: { deposit: sub ? { [state!]: sub } : deposit, exchange } };
    });
    fc.assert(
      fc.property(
        fc.oneof(stateValue, openValue),
        restable,
        (value, { deposit, exchange }) =>
          restsInStates(value, deposit, exchange) === restsByLeafList(value, deposit, exchange),
      ),
      { numRuns: 3_000 },
    );
    expect(
      restsInStates({ open: { deposit: 'awaiting', exchange: 'monitoring' } }, 'awaiting', 'monitoring'),
    ).toBe(true);
  });

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
        const stored = storedIn(base, deposit, exchange);
        expect(passiveUntil(stored) !== null, `${deposit} / ${exchange}`).toBe(restable);
        // What the restore asks (one reading of the state) is what the two questions answer apart.
        const wakeAt = passiveUntil(stored);
        expect(restingPlan(stored)).toEqual(
          wakeAt === null ? null : { wakeAt, pollDeferrableUntil: pollDeferrableUntil(stored) },
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
