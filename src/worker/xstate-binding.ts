// Binds the pure order machine to the host: provides the runtime's actor implementations, maps the order.create
// command onto the machine's input, forwards emitted domain events, and stores/restores the persisted form.
import { createActor, type AnyActorRef } from 'xstate';
import { provideOrderActors } from '../../machines/order-machine.ts';
import {
  confirmedByListing,
  confirmedByPoll,
  onlyConfirms,
  onlyStartsAPoll,
  onlyStartsAQuote,
  onlyWaitsForHints,
  pollDueAtRest,
  restingPlan,
  sameJson,
} from '../../machines/order-passivation.ts';
import {
  isPersistedOrder,
  restoreInput,
  toPersisted,
  type PersistedOrder,
} from '../../machines/order-persistence.ts';
import { unrecordedDepositOf } from '../../machines/order-deposits.ts';
import { camelKeys } from '../../machines/order-request.ts';
import { pollIntervalOf } from '../../machines/order-context.ts';
import type {
  OrderActorFunctions,
  OrderConfigInput,
  OrderCreateInput,
  OrderInput,
} from '../../machines/order-types.ts';
import type { OrderCreateCommand } from '../contract/commands.ts';
import type {
  MachineBinding,
  OrderActorHandle,
  OrderActorStatus,
  RestingOrder,
  StartOrderOptions,
} from './machine-binding.ts';

/** The machine's input for an order.create: its fields in camelCase, the clock and the tunables. */
export function createOrderInput(
  command: OrderCreateCommand,
  now: number,
  config: OrderConfigInput,
): OrderCreateInput {
  const { type: _type, command_id: _commandId, ...fields } = command;
  return { ...camelKeys(fields), now, config };
}

function restingOf(persisted: PersistedOrder): RestingOrder | null {
  const plan = restingPlan(persisted);
  return plan === null
    ? null
    : {
        wakeAt: plan.wakeAt,
        stateValue: persisted.stateValue,
        confirmedAt: persisted.context.confirmedAt ?? null,
        pollDeferrableUntil: plan.pollDeferrableUntil,
      };
}

export function createXStateBinding(opts: {
  actors: OrderActorFunctions;
  orderConfig: OrderConfigInput;
}): MachineBinding {
  const { actors } = opts;
  const machine = provideOrderActors(actors);

  const start = (input: OrderInput, start: StartOrderOptions): OrderActorHandle => {
    const actor = createActor(machine, { input, ...(start.clock ? { clock: start.clock } : {}) });
    actor.on('*', (event) => start.onChange([event]));
    actor.subscribe({ next: () => start.onChange([]), error: (error) => start.onError(error) });
    actor.start();
    // The host asks for the status many times per transition (about 19 times per created order); a snapshot never
    // changes, so its status is computed once, when first asked for.
    let statusOf: { snapshot: unknown; status: Readonly<OrderActorStatus> } | undefined;
    const handle: OrderActorHandle = {
      can: (event) => actor.getSnapshot().can(event),
      send: (event) => actor.send(event),
      status: () => {
        const snapshot = actor.getSnapshot();
        if (statusOf?.snapshot === snapshot) return statusOf.status;
        const context = snapshot.context;
        const status: Readonly<OrderActorStatus> = {
          state: JSON.stringify(snapshot.value),
          terminal: snapshot.status === 'done',
          uniqueReference: context.order?.uniqueReference ?? null,
          depositTxHash: context.deposit?.txHash ?? context.depositRecorded?.txHash ?? null,
          lastConfirmedAt: context.nextPollAt === null ? null : context.nextPollAt - pollIntervalOf(context),
          lastStatus: context.lastStatus,
          confirmedAt: context.confirmedAt ?? null,
          hintDueAt: context.hintDueAt ?? null,
        };
        statusOf = { snapshot, status };
        return status;
      },
      persisted: () => toPersisted(actor.getSnapshot()),
      stop: () => (actor as AnyActorRef).stop(),
    };
    return handle;
  };

  return {
    create: (command, startOpts) =>
      start(createOrderInput(command, startOpts.now, opts.orderConfig), startOpts),
    restore: (persisted, startOpts) => {
      if (!isPersistedOrder(persisted))
        throw new Error(
          `order ${startOpts.orderId}: stored machine state is not a persisted order of a supported version`,
        );
      return start(restoreInput(persisted, startOpts.now), startOpts);
    },
    unwritten: (written, next) =>
      isPersistedOrder(next) &&
      (sameJson(written, next) ||
        onlyStartsAPoll(written, next) ||
        onlyWaitsForHints(written, next) ||
        onlyStartsAQuote(written, next)),
    confirmsOnly: (written, next) => isPersistedOrder(next) && onlyConfirms(written, next),
    resting: (persisted) => (isPersistedOrder(persisted) ? restingOf(persisted) : null),
    pollDueAtRest: (persisted, now) => (isPersistedOrder(persisted) ? pollDueAtRest(persisted, now) : null),
    confirmedByPoll: (persisted, answer) => {
      const confirmed = isPersistedOrder(persisted) ? confirmedByPoll(persisted, answer) : null;
      const resting = confirmed === null ? null : restingOf(confirmed);
      return resting === null ? null : { machine: confirmed, resting };
    },
    restingAfterListing: (persisted, listing) => {
      const confirmed = isPersistedOrder(persisted) ? confirmedByListing(persisted, listing) : null;
      return confirmed === null ? null : restingOf(confirmed);
    },
    unrecordedDeposit: (persisted) =>
      isPersistedOrder(persisted) ? unrecordedDepositOf(persisted.context, persisted.context.order) : null,
  };
}
