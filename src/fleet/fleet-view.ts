// Orders' current state, as summaries of the state topic's records: what the read API, `inspect list` and the
// console answer from. In the worker it holds the orders of the partitions this replica owns, fed by the state store
// (src/kafka/order-state-store.ts hands over each accepted record of an owned partition and says which partitions it
// released), and shares the store's records of open orders instead of copying them (`sharesRecords`): about 0.1 KiB
// per order over what the store holds anyway. The read API asks the other replicas for theirs (fleet-peers.ts). The
// inspector and the console read the whole topic into a view of their own. Newest record by (fence, rev) wins, as in
// the store; a tombstone forgets the order. Lists are filtered and sorted on demand (oldest `since` first, then order
// id) and paged by a cursor, so a page is stable while orders change around it.
import { compareListOrder, encodeCursor, type ListQuery, type phaseFilters } from './list-query.ts';
import {
  canonicalIsoOf,
  msOf,
  openSinceAtOrBefore,
  phaseOfRecord,
  placeOf,
  summarizeOrder,
  type OrderSummary,
  type SummaryRecord,
} from './order-summary.ts';

/**
 * What the view keeps of an order as its summary: a finished order always (its record, compacted in the store, no
 * longer has the machine it is summarized from), an open one when the view holds copies (the inspector, the console).
 */
class Kept {
  readonly summary: OrderSummary;
  readonly rev: number;
  /** `since` in epoch ms, for filters and sorting. */
  readonly sinceMs: number;

  constructor(summary: OrderSummary, rev: number) {
    this.summary = summary;
    this.rev = rev;
    this.sinceMs = msOf(summary.since);
  }
}

/** An open order's record itself (the store's own object, when the view shares it), or what is kept of it. */
type Held = SummaryRecord | Kept;

/** What lists filter and sort by, of either kind of entry. */
interface Placed {
  held: Held;
  orderId: string;
  mode: string;
  partition: number;
  state: string;
  phase: OrderSummary['phase'];
  sinceMs: number;
}

function placed(held: Held): Placed {
  if (held instanceof Kept) {
    const { summary } = held;
    return {
      held,
      orderId: summary.order_id,
      mode: summary.mode,
      partition: summary.partition,
      state: summary.state,
      phase: summary.phase,
      sinceMs: held.sinceMs,
    };
  }
  const place = placeOf(held);
  return {
    held,
    orderId: held.order_id,
    mode: held.mode,
    partition: held.partition,
    state: place.state,
    phase: place.phase,
    sinceMs: place.sinceMs,
  };
}

export interface OrderPage {
  orders: OrderSummary[];
  /** The cursor of the next page, or null on the last one. */
  next_cursor: string | null;
}

/** Counts for the fleet's gauges: parked orders, the oldest parked age, open orders unmoved for `stalledMs`. */
export interface FleetCounts {
  parked: number;
  oldestParkedSeconds: number;
  stalled: number;
}

/** What a finished order keeps in the view: its outcome and identity, not its request (its events have it all). */
const finishedIntent: OrderSummary['intent'] = Object.freeze({
  deposit_currency: null,
  withdraw_currency: null,
  deposit_amount: null,
  withdraw_amount: null,
  withdraw_address: null,
  withdraw_address_extra_id: null,
  refund_address: null,
  deposit_address: null,
});
const noDeadlines: OrderSummary['deadlines'] = Object.freeze({
  payment_deadline: null,
  next_poll_at: null,
  retry_at: null,
});

function fenceOf(held: Held): number {
  return held instanceof Kept ? held.summary.fence : held.fence;
}

function newer(candidate: { fence: number; rev: number }, held: Held | undefined): boolean {
  if (!held) return true;
  const fence = fenceOf(held);
  if (candidate.fence !== fence) return candidate.fence > fence;
  return candidate.rev >= held.rev;
}

function summaryOf(held: Held): OrderSummary {
  return held instanceof Kept ? held.summary : summarizeOrder(held);
}

function referenceOf(held: Held): string | null {
  return held instanceof Kept ? held.summary.unique_reference : held.unique_reference;
}

function matchesState(order: Placed, state: string | undefined): boolean {
  if (state === undefined) return true;
  switch (state as (typeof phaseFilters)[number]) {
    case 'open':
      return order.phase !== 'finished';
    case 'active':
      return order.phase === 'open';
    case 'parked':
      return order.phase === 'parked';
    case 'finished':
      return order.phase === 'finished';
    default:
      return order.state === state;
  }
}

function sameText(a: string | null, b: string): boolean {
  return a !== null && a.toLowerCase() === b;
}

export interface FleetViewOptions {
  /**
   * The records given to `apply` stay held, unchanged, by whoever gave them (the worker's state store): an open
   * order is kept as that record, not copied, and summarized when it is read. Without it (the inspector, the console,
   * which parse records for the view alone) every order is summarized when applied, and its record let go.
   */
  sharesRecords?: boolean;
}

export class FleetView {
  readonly #orders = new Map<string, Held>();
  readonly #byReference = new Map<string, string>();
  readonly #sharesRecords: boolean;

  constructor(opts: FleetViewOptions = {}) {
    this.#sharesRecords = opts.sharesRecords ?? false;
  }

  /** Takes a record (the store's newest, or one read from the topic); an older one than held is ignored. */
  apply(record: SummaryRecord): void {
    const held = this.#orders.get(record.order_id);
    if (!newer(record, held)) return;
    let entry: Held;
    if (record.terminal) {
      const full = summarizeOrder(record);
      entry = new Kept(
        { ...full, intent: finishedIntent, deadlines: noDeadlines, trace_origin: null },
        record.rev,
      );
    } else entry = this.#sharesRecords ? record : new Kept(summarizeOrder(record), record.rev);
    const before = held && referenceOf(held);
    const reference = referenceOf(entry);
    if (before && before !== reference) this.#byReference.delete(before);
    this.#orders.set(record.order_id, entry);
    if (reference) this.#byReference.set(reference, record.order_id);
  }

  /** The order left the state topic (its tombstone). */
  forget(orderId: string): void {
    const held = this.#orders.get(orderId);
    if (!held) return;
    this.#orders.delete(orderId);
    const reference = referenceOf(held);
    if (reference && this.#byReference.get(reference) === orderId) this.#byReference.delete(reference);
  }

  /** Lets go of the orders of these partitions (no longer this replica's: their new owner answers for them). */
  release(partitions: Iterable<number>): void {
    const gone = new Set(partitions);
    if (gone.size === 0) return;
    for (const [orderId, held] of this.#orders)
      if (gone.has(held instanceof Kept ? held.summary.partition : held.partition)) this.forget(orderId);
  }

  get size(): number {
    return this.#orders.size;
  }

  get(orderId: string): OrderSummary | undefined {
    const held = this.#orders.get(orderId);
    return held && summaryOf(held);
  }

  /** By order id, else by the exchange's unique_reference. */
  find(id: string): OrderSummary | undefined {
    return this.get(id) ?? this.get(this.#byReference.get(id) ?? '');
  }

  /**
   * Orders an operator may mean by `text`: its order id or unique_reference exactly, else every order with that
   * withdraw, refund or deposit address (case-insensitively; at most `limit`).
   */
  search(text: string, limit = 50): OrderSummary[] {
    const needle = text.trim();
    if (needle === '') return [];
    const exact = this.find(needle);
    if (exact) return [exact];
    const lower = needle.toLowerCase();
    const found: OrderSummary[] = [];
    for (const held of this.#orders.values()) {
      const summary = summaryOf(held);
      const { intent } = summary;
      if (
        sameText(intent.withdraw_address, lower) ||
        sameText(intent.refund_address, lower) ||
        sameText(intent.deposit_address, lower)
      )
        found.push(summary);
      if (found.length >= limit) break;
    }
    return found;
  }

  /** One page of the orders the query selects, oldest `since` first. */
  list(query: ListQuery, now: number): OrderPage {
    const before = query.older_than === undefined ? Number.POSITIVE_INFINITY : now - query.older_than;
    const selected: Placed[] = [];
    const [afterSince, afterId] = query.cursor ?? [];
    const afterMs = afterSince === undefined ? undefined : Date.parse(afterSince);
    for (const held of this.#orders.values()) {
      const order = placed(held);
      if (order.sinceMs > before) continue;
      if (query.mode !== undefined && order.mode !== query.mode) continue;
      if (!matchesState(order, query.state)) continue;
      // Only orders after the cursor's place (with an unreadable cursor time, NaN, none is before it).
      if (
        afterMs !== undefined &&
        compareListOrder(order.sinceMs, order.orderId, afterMs, afterId ?? '') <= 0
      )
        continue;
      selected.push(order);
    }
    selected.sort((a, b) => compareListOrder(a.sinceMs, a.orderId, b.sinceMs, b.orderId));
    const page = selected.slice(0, query.limit);
    const last = page.at(-1);
    return {
      orders: page.map((order) => summaryOf(order.held)),
      next_cursor:
        selected.length > query.limit && last
          ? encodeCursor(new Date(last.sinceMs).toISOString(), last.orderId)
          : null,
    };
  }

  /** The gauges' counts over the orders `include` selects (e.g. those of the partitions this replica owns). */
  counts(
    now: number,
    stalledMs: number,
    include: (order: Pick<OrderSummary, 'partition'>) => boolean = () => true,
  ): FleetCounts {
    let parked = 0;
    let oldest = Number.POSITIVE_INFINITY;
    let stalled = 0;
    // Stalled: `now - since >= stalledMs`. A shared record is read in place, without a summary or an allocation
    // (every scrape counts every open order this replica owns).
    const stalledAt = now - stalledMs;
    const stalledAtIso = canonicalIsoOf(stalledAt);
    for (const held of this.#orders.values()) {
      if (held instanceof Kept) {
        const { summary } = held;
        if (summary.phase === 'finished' || !include(summary)) continue;
        if (summary.phase === 'parked') {
          parked++;
          oldest = Math.min(oldest, held.sinceMs);
        } else if (now - held.sinceMs >= stalledMs) stalled++;
        continue;
      }
      if (!include(held)) continue;
      const phase = phaseOfRecord(held);
      if (phase === 'finished') continue;
      if (phase === 'parked') {
        parked++;
        oldest = Math.min(oldest, placeOf(held).sinceMs);
      } else if (openSinceAtOrBefore(held, stalledAt, stalledAtIso)) stalled++;
    }
    return {
      parked,
      oldestParkedSeconds: parked === 0 ? 0 : Math.max(0, (now - oldest) / 1000),
      stalled,
    };
  }
}
