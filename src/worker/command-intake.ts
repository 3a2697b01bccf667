// What the order host does with a command, decided purely from the command as parsed, the partition it arrived on,
// the order's latest record and the order's state on this replica: skip it (a duplicate, a hint that cannot poll
// now), reject it (with the reason published in command.rejected), create the order, deliver an event to its
// machine, or abandon a halted order. No I/O here: the host carries the decision out.
import { createHash } from 'node:crypto';
import type {
  OrderCommand,
  OrderCreateCommand,
  OrderSettleCommand,
  ParsedCommand,
} from '../contract/commands.ts';
import type { RejectionReason } from '../contract/events.ts';
import type { OrderRecord } from '../kafka/order-state-store.ts';
import { routeCommand, type Route, type RouteArrival } from './command-routing.ts';
import type { OrderActorEvent, OrderActorHandle } from './machine-binding.ts';

/** JSON with object keys sorted at every depth (undefined members dropped), so equal content hashes equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const contentHashPrefix = 'v2:';

/** The content of a command (all but its command_id), canonicalised at every depth and hashed. */
export function commandContentHash(command: OrderCommand): string {
  const { command_id: _ignored, ...content } = command;
  return contentHashPrefix + createHash('sha256').update(canonicalJson(content)).digest('hex').slice(0, 32);
}

/**
 * Hashes stored before "v2:" (f4cae36 and earlier) covered top-level fields only. They are still honoured for the
 * orders that carry them, so a redelivered command of such an order is recognised after an upgrade.
 */
function legacyContentHash(command: OrderCommand): string {
  const { command_id: _ignored, ...content } = command;
  const canonical = JSON.stringify(content, Object.keys(content).sort());
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

/** Whether a stored content hash (either version) names this command's content. */
export function sameCommandContent(stored: string, command: OrderCommand): boolean {
  return stored.startsWith(contentHashPrefix)
    ? stored === commandContentHash(command)
    : stored === legacyContentHash(command);
}

/** The machine event a command becomes (order.create starts a machine instead). */
export function toActorEvent(command: OrderCommand, at: number): OrderActorEvent | null {
  switch (command.type) {
    case 'order.submit_deposit':
      return { type: 'SUBMIT_DEPOSIT', txHash: command.tx_hash, at };
    case 'order.cancel':
      return { type: 'CANCEL', at };
    case 'order.webhook_hint':
      return command.status === undefined
        ? { type: 'WEBHOOK_HINT', at }
        : { type: 'WEBHOOK_HINT', status: command.status, at };
    case 'order.settle':
      return command.resolution === 'adopt'
        ? { type: 'SETTLE', resolution: 'adopt', uniqueReference: command.unique_reference, at }
        : { type: 'SETTLE', resolution: 'abandon', at };
    default:
      return null;
  }
}

/** The fields of command.rejected that say what was refused and why. */
export interface Rejection {
  command_id: string | null;
  command_type: string | null;
  reason: RejectionReason;
  message: string;
  /** The parsed command's [command_id, content hash], remembered so the same command again is a no-op. */
  remember?: [string, string];
}

/**
 * The refusal of a command whose order lives on another partition than the one it reached, after it went through
 * every forward it may (see command-routing.ts): only a home that moved under it twice gets here.
 */
export function unroutable(command: OrderCommand, hash: string, home: number, arrivedOn: number): Rejection {
  return {
    command_id: command.command_id,
    command_type: command.type,
    reason: 'unroutable',
    message: `order ${command.order_id} lives on partition ${home}; this command reached partition ${arrivedOn} after its forwards and is not forwarded again`,
    remember: [command.command_id, hash],
  };
}

/** An order.create of an order that ran its course and left the state topic after its retention (its home says so). */
export function retired(command: OrderCreateCommand, hash: string): Rejection {
  return {
    command_id: command.command_id,
    command_type: command.type,
    reason: 'order_exists',
    message: `order ${command.order_id} already ran its course and its record was removed after FINISHED_ORDER_RETENTION_MS; it is not started again (a replayed create?)`,
    remember: [command.command_id, hash],
  };
}

export type Decision =
  /** Nothing to do but commit the command's offset. */
  | { kind: 'skip'; outcome: 'duplicate' | 'consumed' }
  | { kind: 'reject'; orderId: string | null; rejection: Rejection }
  /** Its order lives on another partition (or will: the canonical one): a copy goes there (command-routing.ts). */
  | { kind: 'forward'; orderId: string; partition: number }
  | { kind: 'create'; command: OrderCreateCommand; hash: string }
  | { kind: 'deliver'; command: OrderCommand; event: OrderActorEvent; hash: string }
  /** An order halted by a bug has no machine to decide: the operator's order.settle abandon ends it. */
  | { kind: 'abandon'; command: OrderSettleCommand; hash: string };

/** The order as this replica drives it, if it does. */
export interface OrderHere {
  /** Its actor stopped on an unmodelled error; only order.settle abandon is possible. */
  halted: boolean;
  actor: Pick<OrderActorHandle, 'can' | 'status'> | undefined;
}

/** How a command arrived: its partition, its forwards and its order's canonical partition (command-routing.ts). */
export interface Arrival extends Partial<Omit<RouteArrival, 'partition'>> {
  partition: number;
  now: number;
}

/** A route that leaves this partition, as a decision (undefined: the command is handled here). */
export function awayDecision(
  command: OrderCommand,
  hash: string,
  arrivedOn: number,
  route: Route,
): Decision | undefined {
  if (route.kind === 'here') return undefined;
  if (route.kind === 'forward')
    return { kind: 'forward', orderId: command.order_id, partition: route.partition };
  return {
    kind: 'reject',
    orderId: command.order_id,
    rejection: unroutable(command, hash, route.home, arrivedOn),
  };
}

/**
 * Decides what a command does. `record` is the order's latest record (undefined: no such order); `here` is how
 * this replica drives it (undefined: not at all); `now` stamps the machine event.
 */
export function decide(
  parsed: ParsedCommand,
  arrival: Arrival,
  record: OrderRecord | undefined,
  here: OrderHere | undefined,
): Decision {
  if (!parsed.ok)
    return {
      kind: 'reject',
      orderId: parsed.orderId,
      rejection: {
        command_id: parsed.commandId,
        command_type: parsed.commandType,
        reason: parsed.reason,
        message: parsed.message,
      },
    };
  const command = parsed.command;
  const hash = commandContentHash(command);
  const reject = (reason: RejectionReason, message: string): Decision => ({
    kind: 'reject',
    orderId: command.order_id,
    rejection: {
      command_id: command.command_id,
      command_type: command.type,
      reason,
      message,
      remember: [command.command_id, hash],
    },
  });
  // Its key is right but its producer's partitioner chose another partition than its order's home: forwarded.
  const away = awayDecision(
    command,
    hash,
    arrival.partition,
    routeCommand(
      command,
      { partition: arrival.partition, hops: arrival.hops ?? 0, canonical: arrival.canonical },
      record?.partition,
    ),
  );
  if (away) return away;

  if (command.type === 'order.create') {
    if (!record) return { kind: 'create', command, hash };
    // The same order.create again (redelivery, replay, retrying producer): nothing to do.
    if (sameCommandContent(record.create_hash, command)) return { kind: 'skip', outcome: 'duplicate' };
    return reject('order_exists', `order ${command.order_id} already exists with different content`);
  }

  // A webhook hint is routed by whichever replica the webhook reached, on a route it found (or kept) for the order:
  // one whose order has left (tombstoned after its retention) is consumed like a hint for a finished order, not
  // answered with an order.rejected event as a trading service's command would be.
  if (!record && command.type === 'order.webhook_hint') return { kind: 'skip', outcome: 'consumed' };
  if (!record) return reject('unknown_order', `no order ${command.order_id} exists`);
  const seen = record.commands.find(([id]) => id === command.command_id);
  if (seen) {
    if (sameCommandContent(seen[1], command)) return { kind: 'skip', outcome: 'duplicate' };
    return reject(
      'duplicate_conflict',
      `command_id ${command.command_id} was already used with different content`,
    );
  }
  if (here?.halted && command.type === 'order.settle' && command.resolution === 'abandon')
    return { kind: 'abandon', command, hash };
  const actor = here?.actor;
  // The same deposit hash again (under a new command_id): already accepted, nothing more to do.
  if (command.type === 'order.submit_deposit' && actor?.status().depositTxHash === command.tx_hash)
    return { kind: 'skip', outcome: 'duplicate' };
  const event = toActorEvent(command, arrival.now);
  if (actor && event && actor.can(event)) return { kind: 'deliver', command, event, hash };
  // A webhook hint for an order that cannot poll now is simply consumed: it never changes state by itself.
  if (command.type === 'order.webhook_hint') return { kind: 'skip', outcome: 'consumed' };
  return reject(
    'not_allowed',
    !actor || !event
      ? `${command.type} is not allowed: order ${command.order_id} is ${record.terminal ? 'finished' : here?.halted ? 'halted by an internal error (see order.parked; only order.settle abandon is possible)' : 'not active on this replica'}`
      : `${command.type} is not allowed while the order is in state ${actor.status().state}`,
  );
}
