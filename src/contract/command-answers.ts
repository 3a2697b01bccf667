// Which events answer which command: an event that answers a command carries that command's `command_id` in its
// envelope. A command is open from the moment it is accepted until one of the events that close it is published
// (or the order finishes); an event answers the latest open command that lists it. command.rejected answers any
// command and names it in its own `command_id` field, and so does order.operator_command for the operator command
// it records (the host writes it before the command's outcome). Events no command causes (a status the exchange
// moved to, a lapsed payment window, a KYC notice) carry none.
import type { OrderDomainEventType } from '../../machines/order-events.ts';

/** The events that may answer a command: the machine's, and the host's record of an accepted operator command. */
export type AnsweringEventType = OrderDomainEventType | 'order.operator_command';

export interface CommandAnswer {
  /** Events that answer the command while it is open. */
  readonly answeredBy: readonly AnsweringEventType[];
  /** Of those, the ones after which the command is answered for good. */
  readonly closedBy: readonly AnsweringEventType[];
  /** For the contract document: what the answer means. */
  readonly description: string;
}

/** The commands a trading service or an operator sends, and the events that answer each. */
export const commandAnswers = {
  'order.create': {
    answeredBy: ['order.quoted', 'order.created', 'order.parked', 'order.failed'],
    closedBy: ['order.created', 'order.failed'],
    description:
      'order.quoted (DeFi and fixed-rate quotes) then order.created; or order.failed when the order cannot be created; or order.parked when the create outcome cannot be established (a later order.created or order.failed still answers it)',
  },
  'order.submit_deposit': {
    answeredBy: ['order.deposit_submitted', 'order.deposit_rejected'],
    closedBy: ['order.deposit_submitted', 'order.deposit_rejected'],
    description: 'order.deposit_submitted once the exchange recorded the hash, or order.deposit_rejected',
  },
  'order.cancel': {
    answeredBy: ['order.canceled'],
    closedBy: ['order.canceled'],
    description: 'order.canceled (reason command)',
  },
  'order.settle': {
    answeredBy: ['order.operator_command', 'order.created', 'order.settle_refused', 'order.failed'],
    closedBy: ['order.created', 'order.settle_refused', 'order.failed'],
    description:
      'first order.operator_command (the operator key that signed it), then adopt: order.created (the adopted exchange order) or order.settle_refused; abandon: order.failed (reason abandoned_by_operator). Without a valid operator signature: command.rejected (reason unauthorized) only',
  },
} as const satisfies Record<string, CommandAnswer>;

export type AnsweredCommandType = keyof typeof commandAnswers;

/** An open command as an order remembers it: [command type, command_id]. */
export type OpenCommand = [type: string, commandId: string];

export function isAnsweredCommand(type: string): type is AnsweredCommandType {
  return Object.hasOwn(commandAnswers, type);
}

/** The open commands once this one is accepted (it replaces an open one of its type). */
export function opened(open: OpenCommand[], type: string, commandId: string): OpenCommand[] {
  if (!isAnsweredCommand(type)) return [...open];
  return [...open.filter(([openType]) => openType !== type), [type, commandId]];
}

/**
 * The command an event answers among the open ones (the latest that lists it), and the open commands after it: the
 * ones the event closes are gone. An order that finished has none open (its host clears them).
 */
export function answerOf(
  open: OpenCommand[],
  eventType: string,
): { commandId: string | undefined; open: OpenCommand[] } {
  const lists = (type: string, which: 'answeredBy' | 'closedBy'): boolean =>
    isAnsweredCommand(type) && (commandAnswers[type][which] as readonly string[]).includes(eventType);
  const answered = open.findLast(([type]) => lists(type, 'answeredBy'));
  if (!answered) return { commandId: undefined, open };
  return { commandId: answered[1], open: open.filter(([type]) => !lists(type, 'closedBy')) };
}
