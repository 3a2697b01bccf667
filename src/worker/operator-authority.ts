// Who may send an operator command (order.settle): only a holder of an operator key. The order host screens every
// parsed command through here before deciding it: an operator command whose signature does not verify (none, an
// unknown key, another command's, too old) becomes a refusal (`command.rejected`, reason `unauthorized`) and never
// reaches the order; one that verifies carries the operator's identity, which the order's history records
// (`order.operator_command`, before whatever the command causes). Without keys, operator commands are refused,
// unless OPERATOR_COMMANDS_UNSIGNED=true (development only), when they are recorded as sent by "unsigned".
import type { OrderCommand, ParsedCommand } from '../contract/commands.ts';
import {
  operatorCommandTypes,
  operatorVerifier,
  type OperatorIdentity,
} from '../contract/operator-signature.ts';
import type { EventPayload } from './order-journal.ts';

export interface OperatorAuthorityOptions {
  keys: ReadonlyArray<{ keyId: string; spki: string }>;
  allowUnsigned: boolean;
  maxAgeMs: number;
  /** Told of every refusal (a log line and a metric at the composition root). */
  onRefused?: (refusal: { orderId: string | null; keyId: string | null; problem: string }) => void;
}

export interface Screened {
  parsed: ParsedCommand;
  /** Set for an operator command that passed: who sent it. */
  operator: OperatorIdentity | null;
}

export class OperatorAuthority {
  readonly #verify: ReturnType<typeof operatorVerifier>;
  readonly #opts: OperatorAuthorityOptions;

  constructor(opts: OperatorAuthorityOptions) {
    this.#opts = opts;
    this.#verify = operatorVerifier(opts.keys, { maxAgeMs: opts.maxAgeMs });
  }

  screen(
    parsed: ParsedCommand,
    message: { key: string | null; value: Buffer | null; headers?: Record<string, string> },
    now: number,
  ): Screened {
    if (!parsed.ok || !operatorCommandTypes.includes(parsed.command.type)) return { parsed, operator: null };
    const headers = message.headers ?? {};
    if (this.#opts.keys.length === 0 && this.#opts.allowUnsigned)
      return { parsed, operator: { key_id: 'unsigned', signed_at: new Date(now).toISOString() } };
    const verdict =
      this.#opts.keys.length === 0
        ? {
            ok: false as const,
            problem:
              'no operator keys are configured (OPERATOR_PUBLIC_KEYS): operator commands are refused; see docs/operations.md, "Operator commands"',
          }
        : this.#verify({ key: message.key, value: message.value, headers }, now);
    if (verdict.ok) return { parsed, operator: verdict.operator };
    const { command } = parsed;
    this.#opts.onRefused?.({
      orderId: command.order_id,
      keyId: headers['operator-key-id']?.slice(0, 64) ?? null,
      problem: verdict.problem,
    });
    return {
      parsed: {
        ok: false,
        reason: 'unauthorized',
        message: `${command.type} is an operator command: ${verdict.problem}`,
        orderId: command.order_id,
        commandId: command.command_id,
        commandType: command.type,
      },
      operator: null,
    };
  }
}

/** The event that records an operator's command in the order's history, before what it causes. */
export function operatorCommandEvent(command: OrderCommand, operator: OperatorIdentity): EventPayload {
  return {
    type: 'order.operator_command',
    command_id: command.command_id,
    command_type: command.type,
    resolution: command.type === 'order.settle' ? command.resolution : null,
    unique_reference:
      command.type === 'order.settle' && command.resolution === 'adopt' ? command.unique_reference : null,
    note: command.type === 'order.settle' ? (command.note ?? null) : null,
    operator,
  };
}

/** The screening, or the command as parsed when no authority is configured (the order host's unit tests). */
export function screenOperator(
  authority: OperatorAuthority | undefined,
  parsed: ParsedCommand,
  message: { key: string | null; value: Buffer | null; headers?: Record<string, string> },
  now: number,
): Screened {
  return authority ? authority.screen(parsed, message, now) : { parsed, operator: null };
}

/** The operator event of a command that passed the screening, if it is an operator's. */
export function operatorEvents(command: OrderCommand, operator: OperatorIdentity | null): EventPayload[] {
  return operator ? [operatorCommandEvent(command, operator)] : [];
}
