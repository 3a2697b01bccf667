// Where a command is handled: on its order's home partition, whichever partition its producer's partitioner chose.
// The home is where the order's record lives, else the partition the Java client's default partitioner gives its
// order_id (the canonical partition: two creates of one order from two partitioners meet there). A command that
// arrived elsewhere is forwarded to its home: a copy with the same key, value and headers plus `forwarded-from` (where
// it first arrived) and `forward-hops`, written in the transaction that commits its arrival offset (exactly once).
// A forwarded copy is forwarded again only to a home a record or a claim names (never to the canonical partition by
// default: it was sent where it landed on purpose), and at most MAX_FORWARD_HOPS times in all, so no loop exists.
// Pure: the host carries the route out. docs/decisions/partitioner-independent-commands.md argues the rule.
import type { OrderCommand } from '../contract/commands.ts';

/** Header naming where a forwarded command first arrived: `<topic>:<partition>:<offset>`. */
export const FORWARDED_FROM_HEADER = 'forwarded-from';
/** Header counting the forwards a copy went through (1 on the first copy). */
export const FORWARD_HOPS_HEADER = 'forward-hops';
/** Forwards one command may go through: to the canonical partition, then once more to a home a claim names. */
export const MAX_FORWARD_HOPS = 2;

/** Where a command first arrived, as a forwarded copy carries it. */
export interface FirstArrival {
  topic: string;
  partition: number;
  offset: string;
}

/** What a message's headers say of its forwarding: none (a producer's own message), or its first arrival and hops. */
export interface Forwarding {
  from: FirstArrival;
  hops: number;
}

/**
 * The forwarding a message's headers record, undefined for a message a producer wrote. A header that does not read
 * as ours (a producer's own header of that name) counts as none: it only ever stops a forward, never starts one.
 */
export function forwardingOf(headers: Readonly<Record<string, string>> | undefined): Forwarding | undefined {
  const from = headers?.[FORWARDED_FROM_HEADER];
  const hops = Number(headers?.[FORWARD_HOPS_HEADER]);
  if (from === undefined || !Number.isSafeInteger(hops) || hops < 1) return undefined;
  const match = /^(.+):(\d{1,9}):(\d{1,19})$/.exec(from);
  if (!match) return undefined;
  return {
    from: { topic: match[1] as string, partition: Number(match[2]), offset: match[3] as string },
    hops,
  };
}

/** The headers of the copy forwarded from this arrival: the message's own, then where it first arrived and hops. */
export function forwardedHeaders(
  headers: Readonly<Record<string, string>> | undefined,
  arrival: FirstArrival,
): Record<string, string> {
  const previous = forwardingOf(headers);
  const from = previous?.from ?? arrival;
  return {
    ...headers,
    [FORWARDED_FROM_HEADER]: `${from.topic}:${from.partition}:${from.offset}`,
    [FORWARD_HOPS_HEADER]: String((previous?.hops ?? 0) + 1),
  };
}

/** How a command arrived, as routing needs it. */
export interface RouteArrival {
  partition: number;
  /** Forwards it went through (0: as its producer wrote it). */
  hops: number;
  /** The canonical partition of its order_id; undefined while the partition count is unknown (then never used). */
  canonical: number | undefined;
}

export type Route =
  | { kind: 'here' }
  | { kind: 'forward'; partition: number }
  /** Its home is elsewhere, but it went through MAX_FORWARD_HOPS forwards already. */
  | { kind: 'unroutable'; home: number };

/** Towards a home a record or a claim names: here, forwarded, or unroutable once the hops are spent. */
export function towardsHome(arrival: Pick<RouteArrival, 'partition' | 'hops'>, home: number): Route {
  if (home === arrival.partition) return { kind: 'here' };
  return arrival.hops < MAX_FORWARD_HOPS
    ? { kind: 'forward', partition: home }
    : { kind: 'unroutable', home };
}

/**
 * Where a parsed command goes, from the partition its order's record lives on (undefined: no record known here).
 * No record: a producer's command goes to the canonical partition (where an order.create claims its home in Redis,
 * which may still name another: see towardsHome); a forwarded copy, and a webhook hint (consumed at once when its
 * order is unknown), stay where they are.
 */
export function routeCommand(
  command: Pick<OrderCommand, 'type'>,
  arrival: RouteArrival,
  recordPartition: number | undefined,
): Route {
  if (recordPartition !== undefined) return towardsHome(arrival, recordPartition);
  if (arrival.hops > 0 || command.type === 'order.webhook_hint' || arrival.canonical === undefined)
    return { kind: 'here' };
  return towardsHome(arrival, arrival.canonical);
}
