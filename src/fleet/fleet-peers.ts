// The read API across replicas. Each replica's read view holds the orders of the partitions it owns (fleet-view.ts);
// for the rest it asks their owners, found in the fleet's members (src/redis/fleet-members.ts), which every replica
// announces: its address and its caught-up partitions. An order of another partition goes to that partition's owner
// (the state store knows on which partition every order lives); an id this replica cannot place (a reference, or no
// order at all) goes to every owner; a list is asked of every owner and merged page by page, cursor and order as one
// replica gives them. A partition nobody announces (a rebalance under way, a replica gone) or an owner that does not
// answer makes the answer 503 with Retry-After, never a list or a 404 that silently leaves its orders out. Requests
// passed on carry `x-fleet-forwarded` and are answered from the receiver's own view only.
import { z } from 'zod';
import type { FleetMember } from '../redis/fleet-members.ts';
import type { Logger } from '../telemetry/logger.ts';
import { compareListOrder, encodeCursor } from './list-query.ts';
import type { OrderPage } from './fleet-view.ts';
import { msOf, type OrderSummary } from './order-summary.ts';

/** The header of a request one replica passes to another: answer it from your own view. */
export const forwardedHeader = 'x-fleet-forwarded';

export interface PeerReply {
  status: number;
  body: unknown;
}

/** An answer to give (a peer's, or a merge of them), or why there is none yet (answered 503). */
export type FleetRead =
  { kind: 'answer'; status: number; body: Record<string, unknown> } | { kind: 'unavailable'; detail: string };

export interface FleetPeersDeps {
  workerId: string;
  members: {
    current(now: number): Promise<FleetMember[]>;
    announce(member: FleetMember): Promise<void>;
    withdraw(workerId: string): Promise<void>;
  };
  /** The partitions this replica owns and holds whole. */
  ownedPartitions(): number[];
  /** The state topic's partitions (undefined before the topics are known). */
  partitionCount(): number | undefined;
  /** The partition an order id lives on, when this replica knows the order. */
  partitionOf(orderId: string): number | undefined;
  /** This replica's read API address for the others (undefined until it listens). */
  url(): string | undefined;
  /** GET `pathAndQuery` of a member's read API, with the caller's Authorization and the forwarded header. */
  ask(url: string, pathAndQuery: string, authorization: string | undefined): Promise<PeerReply>;
  logger: Logger;
  now: () => number;
  /** How often a replica announces itself when nothing changed (default 5 s). */
  announceEveryMs?: number;
}

const orderReply = z.object({ order: z.object({ order_id: z.string() }).loose() }).loose();
const pageReply = z
  .object({
    orders: z.array(
      z.object({ order_id: z.string(), since: z.string(), partition: z.number().int() }).loose(),
    ),
    next_cursor: z.string().nullable(),
  })
  .loose();

type Key = [sinceMs: number, orderId: string];

function keyOf(order: { since: string; order_id: string }): Key {
  return [msOf(order.since), order.order_id];
}

function compareKeys(a: Key, b: Key): number {
  return compareListOrder(a[0], a[1], b[0], b[1]);
}

/** A source's page of a list: its orders kept here, and where it stopped when it had more. */
interface SourcePage {
  orders: OrderSummary[];
  /** The key of its last order when it has more after it (its next_cursor), else null. */
  moreAfter: Key | null;
}

/**
 * One page from several sources, as one replica holding them all would give it. A source with more stopped at its
 * last order: nothing after the earliest such stop is known, so the page ends there at the latest.
 */
export function mergePages(sources: SourcePage[], limit: number): OrderPage {
  let bound: Key | null = null;
  for (const source of sources)
    if (source.moreAfter && (bound === null || compareKeys(source.moreAfter, bound) < 0))
      bound = source.moreAfter;
  const candidates = sources
    .flatMap((source) => source.orders.map((order) => ({ order, key: keyOf(order) })))
    .filter((entry) => bound === null || compareKeys(entry.key, bound) <= 0)
    .sort((a, b) => compareKeys(a.key, b.key));
  const page = candidates.slice(0, limit);
  const more = candidates.length > limit || bound !== null;
  const last = page.at(-1)?.key ?? bound;
  return {
    orders: page.map((entry) => entry.order),
    next_cursor: more && last ? encodeCursor(new Date(last[0]).toISOString(), last[1]) : null,
  };
}

export class FleetPeers {
  readonly #deps: FleetPeersDeps;
  #timer: NodeJS.Timeout | undefined;
  #announced = { partitions: '', at: 0 };
  #warnedAt = 0;
  #ticking = false;

  constructor(deps: FleetPeersDeps) {
    this.#deps = deps;
  }

  /** Announces this replica now and whenever its partitions change (checked every second), else every 5 s. */
  start(): void {
    this.#timer ??= setInterval(() => void this.tick(), 1_000);
    this.#timer.unref();
    void this.tick();
  }

  /** Stops announcing and withdraws this replica (a clean shutdown): nobody asks it from now on. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#deps.members.withdraw(this.#deps.workerId).catch(() => {});
  }

  /** One announcement when due; exposed for tests. */
  async tick(): Promise<void> {
    const url = this.#deps.url();
    if (url === undefined || this.#ticking) return;
    const partitions = [...this.#deps.ownedPartitions()].sort((a, b) => a - b);
    const now = this.#deps.now();
    const key = partitions.join(',');
    // A replica that owns nothing and never announced has nothing to tell (and, starting, may not reach Redis yet).
    if (key === '' && this.#announced.at === 0) return;
    if (
      key === this.#announced.partitions &&
      now - this.#announced.at < (this.#deps.announceEveryMs ?? 5_000)
    )
      return;
    this.#ticking = true;
    try {
      await this.#deps.members.announce({ worker_id: this.#deps.workerId, url, partitions, at: now });
      this.#announced = { partitions: key, at: now };
    } catch (error) {
      if (now - this.#warnedAt > 30_000) {
        this.#warnedAt = now;
        this.#deps.logger.warn(
          { err: { message: (error as Error).message } },
          'fleet membership not announced: other replicas cannot pass this one read API requests',
        );
      }
    } finally {
      this.#ticking = false;
    }
  }

  /**
   * For each partition this replica does not own, the member announcing it (the newest announcement wins while
   * one hands a partition over to another), and the partitions nobody announces.
   */
  async owners(): Promise<{ byPartition: Map<number, FleetMember>; missing: number[] }> {
    const own = new Set(this.#deps.ownedPartitions());
    const members = (await this.#deps.members.current(this.#deps.now())).filter(
      (member) => member.worker_id !== this.#deps.workerId,
    );
    const byPartition = new Map<number, FleetMember>();
    for (const member of members)
      for (const partition of member.partitions) {
        if (own.has(partition)) continue;
        const held = byPartition.get(partition);
        if (!held || member.at > held.at) byPartition.set(partition, member);
      }
    const count = this.#deps.partitionCount();
    const missing: number[] = [];
    if (count === undefined) missing.push(-1);
    else
      for (let partition = 0; partition < count; partition++)
        if (!own.has(partition) && !byPartition.has(partition)) missing.push(partition);
    return { byPartition, missing };
  }

  /** An order (by id or reference) not in this replica's view, from the replica that owns it. */
  async find(id: string, authorization: string | undefined): Promise<FleetRead> {
    const { byPartition, missing } = await this.owners();
    const path = `/orders/${encodeURIComponent(id)}`;
    const partition = this.#deps.partitionOf(id);
    if (partition !== undefined) {
      const owner = byPartition.get(partition);
      if (!owner) return unavailable(missing.includes(-1) ? [-1] : [partition]);
      return this.relay(owner, await this.askOrder(owner, path, authorization));
    }
    // Not placed here: a unique_reference, or no order at all. Every owner is asked; one of them may hold it.
    const distinct = [...new Map([...byPartition.values()].map((m) => [m.worker_id, m])).values()];
    const replies = await Promise.all(distinct.map((member) => this.askOrder(member, path, authorization)));
    const found = replies.findIndex((reply) => reply?.status === 200);
    if (found >= 0) return this.relay(distinct[found]!, replies[found]);
    if (missing.length > 0) return unavailable(missing);
    const silent = distinct.filter((_, i) => replies[i]?.status !== 404);
    if (silent.length > 0) return unanswered(silent);
    return { kind: 'answer', status: 404, body: notFound(id) };
  }

  /** A page of the whole fleet's orders: this replica's page merged with every owner's. */
  async list(
    search: string,
    limit: number,
    local: OrderPage,
    authorization: string | undefined,
  ): Promise<FleetRead> {
    const { byPartition, missing } = await this.owners();
    if (missing.length > 0) return unavailable(missing);
    const members = new Map<string, { member: FleetMember; partitions: Set<number> }>();
    for (const [partition, member] of byPartition) {
      const entry = members.get(member.worker_id) ?? { member, partitions: new Set<number>() };
      entry.partitions.add(partition);
      members.set(member.worker_id, entry);
    }
    const asked = [...members.values()];
    const replies = await Promise.all(
      asked.map(async ({ member }) => {
        const reply = await this.ask(member, `/orders${search}`, authorization);
        const page = reply?.status === 200 ? pageReply.safeParse(reply.body) : undefined;
        return page?.success ? page.data : undefined;
      }),
    );
    const silent = asked.filter((_, i) => replies[i] === undefined).map((entry) => entry.member);
    if (silent.length > 0) return unanswered(silent);
    const sources: SourcePage[] = [{ orders: local.orders, moreAfter: lastIfMore(local) }];
    for (const [i, reply] of replies.entries()) {
      const partitions = asked[i]!.partitions;
      sources.push({
        // Only the partitions it is asked for: while a partition changes hands, both may still hold it.
        orders: reply!.orders.filter((order) => partitions.has(order.partition)) as unknown as OrderSummary[],
        moreAfter: lastIfMore(reply!),
      });
    }
    return { kind: 'answer', status: 200, body: { ...mergePages(sources, limit) } };
  }

  private relay(member: FleetMember, reply: PeerReply | undefined): FleetRead {
    if (!reply) return unanswered([member]);
    if (reply.status === 404 && typeof reply.body === 'object' && reply.body !== null)
      return { kind: 'answer', status: 404, body: { ...(reply.body as Record<string, unknown>) } };
    return { kind: 'answer', status: 200, body: { ...(reply.body as Record<string, unknown>) } };
  }

  /** A member's answer for one order: a 200 with an order or a 404; anything else counts as no answer. */
  private async askOrder(
    member: FleetMember,
    path: string,
    authorization: string | undefined,
  ): Promise<PeerReply | undefined> {
    const reply = await this.ask(member, path, authorization);
    if (!reply) return undefined;
    if (reply.status === 404) return reply;
    return reply.status === 200 && orderReply.safeParse(reply.body).success ? reply : undefined;
  }

  private async ask(
    member: FleetMember,
    pathAndQuery: string,
    authorization: string | undefined,
  ): Promise<PeerReply | undefined> {
    try {
      return await this.#deps.ask(member.url, pathAndQuery, authorization);
    } catch (error) {
      this.#deps.logger.warn(
        { peer: member.worker_id, err: { message: (error as Error).message } },
        'a replica did not answer a read API request passed to it',
      );
      return undefined;
    }
  }
}

function lastIfMore(page: {
  orders: Array<{ since: string; order_id: string }>;
  next_cursor: string | null;
}): Key | null {
  const last = page.orders.at(-1);
  return page.next_cursor !== null && last ? keyOf(last) : null;
}

function notFound(id: string): Record<string, unknown> {
  return { detail: `no order with order_id or unique_reference "${id.slice(0, 128)}" in the state topic` };
}

function unavailable(partitions: number[]): FleetRead {
  return {
    kind: 'unavailable',
    detail: partitions.includes(-1)
      ? 'this replica does not know the state topic yet; retry'
      : `no replica answers for state partition(s) ${partitions.join(', ')} right now (a rebalance, or a replica gone); retry`,
  };
}

function unanswered(members: FleetMember[]): FleetRead {
  return {
    kind: 'unavailable',
    detail: `replica(s) ${members.map((m) => m.worker_id).join(', ')} did not answer; retry`,
  };
}

/** GET of a member's read API with undici's fetch, bounded by `timeoutMs`. */
export function httpAsk(
  workerId: string,
  timeoutMs = 3_000,
): (url: string, pathAndQuery: string, authorization: string | undefined) => Promise<PeerReply> {
  return async (url, pathAndQuery, authorization) => {
    const response = await fetch(`${url}${pathAndQuery}`, {
      headers: { ...(authorization ? { authorization } : {}), [forwardedHeader]: workerId },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, body };
  };
}
