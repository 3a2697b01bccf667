// The orders of the state partitions a replica does not own, held as numbers rather than objects. A replica reads
// every partition (see order-state-store.ts) but drives only its own; of another partition's order it needs only
// what two durable backstops ask when Redis has forgotten (homes, reference claims): on which partition the order
// lives (a command that arrived on another partition is forwarded there) and whether an order there already
// records an exchange order (a reference is never claimed by a second order). Its (fence, rev) keep a record from an
// older lease holder from replacing a newer one, and whether it is finished keeps the view `get` gives as before.
//
// Each order is a row of typed arrays, found by a 53-bit hash of its id; its reference is held as a 53-bit hash in a
// second table. About 60 bytes of columns per order (about 0.08 KiB with the tables' free rows) against about 240
// as a Map entry keyed by the id string, an object and a reference string with its own Map entry (measured at 100k
// orders on 6 partitions, 3 replicas: the stubs were 0.05 of one replica's memory for all orders). Two ids (or two
// references) with the same 53-bit hash are taken for one: with 100k orders held, a new id meets an existing hash
// with probability about 1e-11, and the worst it does is forward a new order's create to another partition than its
// canonical one (where it is created all the same, one order) or refuse a reference as taken (an order parked, never
// a duplicate exchange order).

/** Two 32-bit string hashes (FNV-1a and a multiply-xorshift one) as one integer in [1, 2^53). */
export function hash53(text: string): number {
  let a = 0x811c9dc5;
  let b = 0x9e3779b9 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  b = Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  b ^= b >>> 16;
  const value = (a >>> 0) * 0x200000 + (b >>> 11);
  return value === 0 ? 1 : value;
}

/** Where a 53-bit key starts probing in a table of 2^bits rows (Fibonacci hashing of both halves). */
function home(key: number, bits: number): number {
  const high = Math.floor(key / 0x200000);
  return Math.imul((high ^ (key % 0x200000)) >>> 0, 0x9e3779b1) >>> (32 - bits);
}

type Column = Float64Array | Int32Array | Uint32Array;

/** The smallest table: 2^10 rows. */
const minBits = 10;

/**
 * Open addressing with linear probing over typed arrays: a key column (0 is an empty row) and value columns moved
 * with it. Grows at 3/4 full; removal shifts the rows after it back, so no deleted markers pile up, and halves the
 * table once it is less than 1/8 full: a replica that held every partition's orders here before its first
 * assignment and then owned them all (a lone replica) kept columns sized for all of them (about 10 MiB at 100k).
 */
class Rows<C extends Record<string, Column>> {
  private bits: number;
  keys: Float64Array;
  columns: C;
  size = 0;

  private readonly make: (capacity: number) => C;

  constructor(make: (capacity: number) => C) {
    this.make = make;
    this.bits = minBits;
    this.keys = new Float64Array(1 << this.bits);
    this.columns = make(1 << this.bits);
  }

  /** The row holding `key`, or -1. */
  find(key: number): number {
    const mask = this.keys.length - 1;
    for (let i = home(key, this.bits); ; i = (i + 1) & mask) {
      const k = this.keys[i]!;
      if (k === key) return i;
      if (k === 0) return -1;
    }
  }

  /** The row holding `key`, a new one if it had none (its columns then read 0). */
  row(key: number): number {
    if ((this.size + 1) * 4 > this.keys.length * 3) this.grow();
    const mask = this.keys.length - 1;
    for (let i = home(key, this.bits); ; i = (i + 1) & mask) {
      const k = this.keys[i]!;
      if (k === key) return i;
      if (k === 0) {
        this.keys[i] = key;
        this.size++;
        return i;
      }
    }
  }

  remove(row: number): void {
    const mask = this.keys.length - 1;
    let hole = row;
    for (let i = (row + 1) & mask; this.keys[i] !== 0; i = (i + 1) & mask) {
      // A row may fill the hole when its home is not within (hole, i]: probing for it passes the hole.
      const start = home(this.keys[i]!, this.bits);
      const between = hole <= i ? start > hole && start <= i : start > hole || start <= i;
      if (between) continue;
      this.move(i, hole);
      hole = i;
    }
    this.keys[hole] = 0;
    for (const column of Object.values(this.columns)) column[hole] = 0;
    this.size--;
    if (this.bits > minBits && this.size * 8 < this.keys.length) this.resize(this.bits - 1);
  }

  private move(from: number, to: number): void {
    this.keys[to] = this.keys[from]!;
    copyRow(this.columns, from, this.columns, to);
  }

  private grow(): void {
    this.resize(this.bits + 1);
  }

  /** Moves every row into a table of 2^bits rows. */
  private resize(bits: number): void {
    const keys = this.keys;
    const columns = this.columns;
    this.bits = bits;
    this.keys = new Float64Array(1 << this.bits);
    this.columns = this.make(1 << this.bits);
    this.size = 0;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === 0) continue;
      copyRow(columns, i, this.columns, this.row(keys[i]!));
    }
  }
}

function copyRow<C extends Record<string, Column>>(source: C, from: number, target: C, to: number): void {
  for (const name in source) target[name]![to] = source[name]![from]!;
}

/** What is held of an order of a partition this replica does not own. */
export interface ForeignEntry {
  partition: number;
  fence: number;
  rev: number;
  terminal: boolean;
}

export class ForeignOrders {
  private readonly orders = new Rows((n) => ({
    reference: new Float64Array(n),
    /** partition * 2 + 1 when finished */
    place: new Int32Array(n),
    fence: new Uint32Array(n),
    rev: new Uint32Array(n),
  }));
  /** reference hash -> how many orders held here record it (one, unless the exchange repeated a reference) */
  private readonly references = new Rows((n) => ({ orders: new Uint32Array(n) }));

  get size(): number {
    return this.orders.size;
  }

  get(orderId: string): ForeignEntry | undefined {
    const row = this.orders.find(hash53(orderId));
    if (row < 0) return undefined;
    const { place, fence, rev } = this.orders.columns;
    return {
      partition: place[row]! >> 1,
      fence: fence[row]!,
      rev: rev[row]!,
      terminal: (place[row]! & 1) === 1,
    };
  }

  set(orderId: string, entry: ForeignEntry, uniqueReference: string | null): void {
    const id = hash53(orderId);
    const row = this.orders.row(id);
    const columns = this.orders.columns;
    columns.place[row] = entry.partition * 2 + (entry.terminal ? 1 : 0);
    // Past 2^32 - 1 (never seen: one per lease and one per write of one order) they stay at it.
    columns.fence[row] = Math.min(entry.fence, 0xffffffff);
    columns.rev[row] = Math.min(entry.rev, 0xffffffff);
    if (uniqueReference === null || columns.reference[row] !== 0) return;
    const reference = hash53(uniqueReference);
    columns.reference[row] = reference;
    const at = this.references.row(reference);
    this.references.columns.orders[at]!++;
  }

  /** True when an order held here records this exchange order. */
  hasReference(uniqueReference: string): boolean {
    return this.references.find(hash53(uniqueReference)) >= 0;
  }

  delete(orderId: string): boolean {
    const id = hash53(orderId);
    const row = this.orders.find(id);
    if (row < 0) return false;
    const reference = this.orders.columns.reference[row]!;
    this.orders.remove(row);
    const at = reference === 0 ? -1 : this.references.find(reference);
    if (at >= 0 && --this.references.columns.orders[at]! === 0) this.references.remove(at);
    return true;
  }

  /** True when an order of this partition is held here. */
  holds(partition: number): boolean {
    const { keys } = this.orders;
    const { place } = this.orders.columns;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== 0 && place[i]! >> 1 === partition) return true;
    return false;
  }
}
