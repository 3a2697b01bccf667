// The one order store both API versions read and write. Status changes happen only through `moveTo`, which
// refuses to go back, stamps the transaction hashes a real exchange would have by then, and tells listeners
// (the webhook dispatcher) once per change. Time-driven moves (payment-window lapse, the automatic schedule)
// are applied by `sweep(now)` in time order, so a clock jump replays every step that fell due.
import { randomBytes } from 'node:crypto';
import { mintTransactionHash, type AddressCase } from '../addresses/address-formats.ts';
import type { TradingMode } from '../config.ts';
import { cancelableStatuses, pathBetween, terminalStatuses, type OrderStatus } from './order-lifecycle.ts';
import type { PairRecord } from './world.ts';

export type Side = 'BUY' | 'SELL';

export interface Order {
  /** Creation sequence, the cursor key of the v2 list. */
  seq: number;
  uniqueReference: string;
  createdAt: number;
  modifiedAt: number;
  mode: TradingMode;
  partnerId: string | undefined;
  v1User: string | undefined;
  side: Side;
  status: OrderStatus;
  history: { status: OrderStatus; at: number }[];
  pair: PairRecord;
  depositAmount: bigint;
  withdrawAmount: bigint;
  /**
   * The amounts as the request gave them (undefined: not given), before the exchange stored them (round_amounts):
   * the sandbox's own record of what was asked, so a test can tell which request made which order.
   */
  requested: { depositAmount: bigint | undefined; withdrawAmount: bigint | undefined };
  rate: bigint;
  depositAddress: string;
  depositAddressExtraId: string;
  withdrawAddress: string;
  withdrawAddressExtraId: string;
  refundAddress: string;
  refundAddressExtraId: string;
  paymentWindowMinutes: number;
  fixedRateDeadline: number;
  depositTransaction: string;
  depositTransactionAt: number | undefined;
  withdrawTransaction: string;
  refundTransaction: string;
  referralCode: { code: string; at: number } | undefined;
  rateId: string | undefined;
  isLimitOrder: boolean;
  limitTtlSeconds: number | undefined;
  userProvided: 'deposit' | 'withdraw';
  /** Set when the normalise_address_case fault rewrote the addresses at creation; repeats compare normalised. */
  addressCase: AddressCase | undefined;
  /** Per-order override of the automatic schedule. */
  schedule: AutoSchedule | undefined;
}

export interface AutoSchedule {
  enabled: boolean;
  stepMs: number;
  outcome: 'completed' | 'refunded' | 'canceled';
}

export type NewOrder = Omit<
  Order,
  | 'seq'
  | 'uniqueReference'
  | 'modifiedAt'
  | 'status'
  | 'history'
  | 'depositTransaction'
  | 'depositTransactionAt'
  | 'withdrawTransaction'
  | 'refundTransaction'
  | 'schedule'
>;

export type StatusListener = (order: Order, previous: OrderStatus) => void;

export class TransitionRefused extends Error {
  readonly from: OrderStatus;
  readonly to: OrderStatus;
  constructor(from: OrderStatus, to: OrderStatus) {
    super(`order cannot move from ${from} to ${to}: a status never goes back`);
    this.from = from;
    this.to = to;
  }
}

const REFERENCE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function mintReference(): string {
  return [...randomBytes(10)].map((b) => REFERENCE_ALPHABET[b % REFERENCE_ALPHABET.length]).join('');
}

export class OrderStore {
  readonly #orders = new Map<string, Order>();
  /** Every order by its seq (index seq - 1): the v2 list walks it from a cursor instead of sorting every order. */
  readonly #bySeq: Order[] = [];
  /**
   * Each order's next time-driven move (when, and to which status), as worked out after its last change (no entry:
   * none due), and the same moves by time, soonest first: the ticker sweeps every 100 ms and a list request sweeps
   * first, so a sweep takes only what is due from the heap, rather than looking at every order (at 45k orders working
   * out every schedule kept a core busy; looking at every order still cost a list page of 50k orders as much as the
   * page). An order's heap entry stands only while `#dueAt` still holds that very move; one re-planned since is
   * skipped. Every change to what a move depends on (status, history, schedule) goes through `#plan`.
   */
  #dueAt = new Map<string, DueMove>();
  readonly #due = new DueHeap();
  readonly #depositHashes = new Map<string, string>();
  readonly #listeners: StatusListener[] = [];
  #seq = 0;
  #schedule: AutoSchedule;

  constructor(schedule: AutoSchedule) {
    this.#schedule = schedule;
  }

  onStatusChange(listener: StatusListener): void {
    this.#listeners.push(listener);
  }

  create(input: NewOrder): Order {
    let reference = mintReference();
    while (this.#orders.has(reference)) reference = mintReference();
    const order: Order = {
      ...input,
      seq: ++this.#seq,
      uniqueReference: reference,
      modifiedAt: input.createdAt,
      status: 'INITIAL',
      history: [{ status: 'INITIAL', at: input.createdAt }],
      depositTransaction: '',
      depositTransactionAt: undefined,
      withdrawTransaction: '',
      refundTransaction: '',
      schedule: undefined,
    };
    this.#orders.set(reference, order);
    this.#bySeq.push(order);
    this.#plan(order);
    return order;
  }

  get(reference: string): Order | undefined {
    return this.#orders.get(reference);
  }

  all(): Order[] {
    return [...this.#orders.values()];
  }

  /** Newest first, the exchange's list order. */
  newestFirst(filter: (order: Order) => boolean): Order[] {
    return this.all()
      .filter(filter)
      .sort((a, b) => b.seq - a.seq);
  }

  /** The order already holding this deposit hash, if any (hashes are unique across the exchange). */
  depositHashOwner(hash: string): string | undefined {
    return this.#depositHashes.get(hash.toLowerCase());
  }

  recordDepositTransaction(order: Order, hash: string, at: number): void {
    order.depositTransaction = hash;
    order.depositTransactionAt = at;
    order.modifiedAt = at;
    this.#depositHashes.set(hash.toLowerCase(), order.uniqueReference);
  }

  /** Walks the order forward to `target`, one status change (and one notification) per step. */
  advance(order: Order, target: OrderStatus, at: number): OrderStatus[] {
    const path = pathBetween(order.status, target);
    if (!path) throw new TransitionRefused(order.status, target);
    for (const status of path) this.#moveTo(order, status, at);
    return path;
  }

  setDefaultSchedule(schedule: AutoSchedule): void {
    this.#schedule = schedule;
    this.#dueAt = new Map();
    this.#due.clear();
    for (const order of this.#orders.values()) this.#plan(order);
  }

  defaultSchedule(): AutoSchedule {
    return this.#schedule;
  }

  setOrderSchedule(order: Order, schedule: AutoSchedule | undefined): void {
    order.schedule = schedule;
    this.#plan(order);
  }

  /** Applies every time-driven move due at `now`, in time order per order. */
  sweep(now: number): void {
    for (let next = this.#due.peek(); next !== undefined && next.move.at <= now; next = this.#due.peek()) {
      this.#due.pop();
      // An entry of an order whose schedule was worked out again since (it moved, its schedule changed): stale.
      if (this.#dueAt.get(next.order.uniqueReference) === next.move) this.sweepOrder(next.order, now);
    }
  }

  /** Works out the order's next time-driven move after a change, and files it by its time. */
  #plan(order: Order): void {
    const move = this.#nextDue(order);
    if (move === undefined) {
      this.#dueAt.delete(order.uniqueReference);
      return;
    }
    this.#dueAt.set(order.uniqueReference, move);
    this.#due.push({ move, seq: order.seq, order });
  }

  /**
   * Up to `limit` orders passing `filter`, newest first, created before `beforeSeq` (exclusive): walked down from
   * there, not sorted out of every order.
   */
  olderThan(beforeSeq: number, filter: (order: Order) => boolean, limit: number): Order[] {
    const found: Order[] = [];
    for (let i = Math.min(beforeSeq - 1, this.#bySeq.length) - 1; i >= 0 && found.length < limit; i--) {
      const order = this.#bySeq[i]!;
      if (filter(order)) found.push(order);
    }
    return found;
  }

  /** Up to `limit` orders passing `filter` created after `afterSeq` (the closest ones), newest first. */
  newerThan(afterSeq: number, filter: (order: Order) => boolean, limit: number): Order[] {
    const found: Order[] = [];
    for (let i = Math.max(0, afterSeq); i < this.#bySeq.length && found.length < limit; i++) {
      const order = this.#bySeq[i]!;
      if (filter(order)) found.push(order);
    }
    return found.reverse();
  }

  sweepOrder(order: Order, now: number): void {
    for (let guard = 0; guard < 16; guard++) {
      // Planned after the order's last change (each move below plans the next).
      const due = this.#dueAt.get(order.uniqueReference);
      if (!due || due.at > now) return;
      this.#moveTo(order, due.status, due.at);
    }
  }

  #nextDue(order: Order): DueMove | undefined {
    if (terminalStatuses.includes(order.status)) return undefined;
    const lastChange = order.history[order.history.length - 1]?.at ?? order.createdAt;
    const lapse = cancelableStatuses.includes(order.status)
      ? { at: order.createdAt + order.paymentWindowMinutes * 60_000, status: 'CANCELED' as const }
      : undefined;
    const schedule = order.schedule ?? this.#schedule;
    let step: DueMove | undefined;
    if (schedule.enabled) {
      const target =
        schedule.outcome === 'completed'
          ? 'COMPLETED'
          : schedule.outcome === 'refunded'
            ? 'REFUNDED'
            : 'CANCELED';
      const next = pathBetween(order.status, target)?.[0];
      if (next) step = { at: lastChange + schedule.stepMs, status: next };
    }
    if (step && lapse) return step.at < lapse.at ? step : lapse;
    return step ?? lapse;
  }

  #moveTo(order: Order, status: OrderStatus, at: number): void {
    const previous = order.status;
    const format = order.pair.from.addressFormat;
    if (status === 'UNCONFIRMED PAYMENT' && order.depositTransaction === '') {
      this.recordDepositTransaction(order, mintTransactionHash(format), at);
    }
    if (status === 'RELEASED' && order.withdrawTransaction === '') {
      order.withdrawTransaction = mintTransactionHash(order.pair.to.addressFormat);
    }
    if (status === 'REFUNDED' && order.refundTransaction === '') {
      order.refundTransaction = mintTransactionHash(format);
    }
    order.status = status;
    order.modifiedAt = at;
    order.history.push({ status, at });
    this.#plan(order);
    for (const listener of this.#listeners) listener(order, previous);
  }
}

interface DueMove {
  at: number;
  status: OrderStatus;
}

interface DueEntry {
  move: DueMove;
  /** Ties go by creation, so moves due at one time are applied in the order the orders were created. */
  seq: number;
  order: Order;
}

/** A binary min-heap of due moves by (at, seq). */
class DueHeap {
  #items: DueEntry[] = [];

  peek(): DueEntry | undefined {
    return this.#items[0];
  }

  clear(): void {
    this.#items = [];
  }

  push(entry: DueEntry): void {
    const items = this.#items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): DueEntry | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    for (let i = 0; ;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < items.length && before(items[left]!, items[least]!)) least = left;
      if (right < items.length && before(items[right]!, items[least]!)) least = right;
      if (least === i) break;
      [items[i], items[least]] = [items[least]!, items[i]!];
      i = least;
    }
    return top;
  }
}

function before(a: DueEntry, b: DueEntry): boolean {
  return a.move.at < b.move.at || (a.move.at === b.move.at && a.seq < b.seq);
}
