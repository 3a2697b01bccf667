// The order machine's actors as XState logic, built from the one list in order-types.ts (orderActorTypes): the
// placeholders `setup({ actors })` declares, and the runtime's async functions wrapped for `machine.provide()`.

import { fromPromise, type PromiseActorLogic } from 'xstate';
import { orderActorNames } from './order-types.ts';
import type { OrderActorFunctions, OrderActorName, OrderActorTypes } from './order-types.ts';

/** One promise actor per name, typed with its input and output. */
export type OrderActorLogic = {
  [K in OrderActorName]: PromiseActorLogic<OrderActorTypes[K]['output'], OrderActorTypes[K]['input']>;
};

type AnyActorFunction = (input: unknown, signal: AbortSignal) => Promise<unknown>;

function actorLogic(functionOf: (name: OrderActorName) => AnyActorFunction): OrderActorLogic {
  return Object.fromEntries(
    orderActorNames.map((name) => {
      const call = functionOf(name);
      return [name, fromPromise<unknown, unknown>(({ input, signal }) => call(input, signal))];
    }),
  ) as OrderActorLogic;
}

/** What `setup` declares: every actor fails until the runtime provides it. */
export const placeholderOrderActors: OrderActorLogic = actorLogic(
  (name) => () =>
    Promise.reject(
      new Error(`actor "${name}" must be provided by the runtime (machine.provide({ actors }))`),
    ),
);

/**
 * The runtime's functions as actors: each is given the call's input and an AbortSignal that fires when the machine
 * leaves the state that made the call (e.g. a CANCEL while quoting).
 */
export function orderActorsOf(functions: OrderActorFunctions): OrderActorLogic {
  return actorLogic((name) => functions[name] as AnyActorFunction);
}
