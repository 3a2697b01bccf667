// Every order's current state, as summaries kept from the state topic's records (src/kafka/order-state-store.ts
// hands each accepted record over; the inspector and the console read the topic themselves): what the read API,
// `inspect list` and the console answer from. Newest record by (fence, rev) wins, as in the store; a tombstone
// forgets the order. Lists are filtered and sorted on demand (oldest `since` first, then order id) and paged by a
// cursor, so a page is stable while orders change around it.
import { encodeCursor, type ListQuery, type phaseFilters } from './list-query.ts';
import { summarizeOrder, type OrderSummary, type SummaryRecord } from './order-summary.ts';

interface Held {
  summary: OrderSummary;
  rev: number;
  /** `since` in epoch ms, for filters and sorting. */
  sinceMs: number;
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

function newer(candidate: { fence: number; rev: number }, held: Held | undefined): boolean {
  if (!held) return true;
  if (candidate.fence !== held.summary.fence) return candidate.fence > held.summary.fence;
  return candidate.rev >= held.rev;
}

function sinceOf(summary: OrderSummary): number {
  const ms = Date.parse(summary.since);
  return Number.isFinite(ms) ? ms : 0;
}

function matchesState(summary: OrderSummary, state: string | undefined): boolean {
  if (state === undefined) return true;
  switch (state as (typeof phaseFilters)[number]) {
    case 'open':
      return summary.phase !== 'finished';
    case 'active':
      return summary.phase === 'open';
    case 'parked':
      return summary.phase === 'parked';
    case 'finished':
      return summary.phase === 'finished';
    default:
      return summary.state === state;
  }
}

function sameText(a: string | null, b: string): boolean {
  return a !== null && a.toLowerCase() === b;
}

export class FleetView {
  readonly #orders = new Map<string, Held>();
  readonly #byReference = new Map<string, string>();

  /** Takes a record (the store's newest, or one read from the topic); an older one than held is ignored. */
  apply(record: SummaryRecord): void {
    const held = this.#orders.get(record.order_id);
    if (!newer(record, held)) return;
    const full = summarizeOrder(record);
    const summary =
      full.phase === 'finished'
        ? { ...full, intent: finishedIntent, deadlines: noDeadlines, trace_origin: null }
        : full;
    if (held?.summary.unique_reference && held.summary.unique_reference !== summary.unique_reference)
      this.#byReference.delete(held.summary.unique_reference);
    this.#orders.set(record.order_id, { summary, rev: record.rev, sinceMs: sinceOf(summary) });
    if (summary.unique_reference) this.#byReference.set(summary.unique_reference, record.order_id);
  }

  /** The order left the state topic (its tombstone). */
  forget(orderId: string): void {
    const held = this.#orders.get(orderId);
    if (!held) return;
    this.#orders.delete(orderId);
    const reference = held.summary.unique_reference;
    if (reference && this.#byReference.get(reference) === orderId) this.#byReference.delete(reference);
  }

  get size(): number {
    return this.#orders.size;
  }

  get(orderId: string): OrderSummary | undefined {
    return this.#orders.get(orderId)?.summary;
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
    for (const { summary } of this.#orders.values()) {
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
    const selected: Held[] = [];
    const [afterSince, afterId] = query.cursor ?? [];
    const afterMs = afterSince === undefined ? undefined : Date.parse(afterSince);
    for (const held of this.#orders.values()) {
      const { summary } = held;
      if (held.sinceMs > before) continue;
      if (query.mode !== undefined && summary.mode !== query.mode) continue;
      if (!matchesState(summary, query.state)) continue;
      if (
        afterMs !== undefined &&
        (held.sinceMs < afterMs || (held.sinceMs === afterMs && summary.order_id <= (afterId ?? '')))
      )
        continue;
      selected.push(held);
    }
    selected.sort((a, b) =>
      a.sinceMs !== b.sinceMs
        ? a.sinceMs - b.sinceMs
        : a.summary.order_id < b.summary.order_id
          ? -1
          : a.summary.order_id > b.summary.order_id
            ? 1
            : 0,
    );
    const page = selected.slice(0, query.limit);
    const last = page.at(-1);
    return {
      orders: page.map((held) => held.summary),
      next_cursor:
        selected.length > query.limit && last
          ? encodeCursor(new Date(last.sinceMs).toISOString(), last.summary.order_id)
          : null,
    };
  }

  /** The gauges' counts over the orders `include` selects (e.g. those of the partitions this replica owns). */
  counts(
    now: number,
    stalledMs: number,
    include: (summary: OrderSummary) => boolean = () => true,
  ): FleetCounts {
    let parked = 0;
    let oldest = Number.POSITIVE_INFINITY;
    let stalled = 0;
    for (const { summary, sinceMs } of this.#orders.values()) {
      if (summary.phase === 'finished' || !include(summary)) continue;
      if (summary.phase === 'parked') {
        parked++;
        oldest = Math.min(oldest, sinceMs);
      } else if (now - sinceMs >= stalledMs) stalled++;
    }
    return {
      parked,
      oldestParkedSeconds: parked === 0 ? 0 : Math.max(0, (now - oldest) / 1000),
      stalled,
    };
  }
}
