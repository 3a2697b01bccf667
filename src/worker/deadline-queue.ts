// One timer for many deadlines: an indexed binary min-heap of (key, at) with a single Node timer armed for the
// earliest. Passivated orders (and idle checks) are counted in the hundred thousands; a setTimeout each would cost
// a Timeout object and a closure per order. A key has at most one deadline: scheduling it again moves it.

export interface DeadlineClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

/** setTimeout overflows above 2^31-1 ms: a later deadline is re-armed when the capped timer fires. */
const maxTimerDelayMs = 2_147_483_647;

const globalClock = (now: () => number): DeadlineClock => ({
  now,
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, ms);
    // Nothing the queue waits for keeps the process alive on its own (shutdown does not wait for a poll).
    timer.unref();
    return timer;
  },
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
});

export class DeadlineQueue<Key> {
  private keys: Key[] = [];
  private ats: number[] = [];
  private index = new Map<Key, number>();
  private readonly clock: DeadlineClock;
  private readonly onDue: (key: Key) => void;
  private timer: unknown;
  private armedAt = Number.POSITIVE_INFINITY;

  /** `onDue` runs once per key whose deadline has passed, the earliest first; a throw is the caller's bug. */
  constructor(onDue: (key: Key) => void, clock: DeadlineClock | (() => number) = Date.now) {
    this.onDue = onDue;
    this.clock = typeof clock === 'function' ? globalClock(clock) : clock;
  }

  get size(): number {
    return this.keys.length;
  }

  has(key: Key): boolean {
    return this.index.has(key);
  }

  deadlineOf(key: Key): number | undefined {
    const i = this.index.get(key);
    return i === undefined ? undefined : this.ats[i];
  }

  /** Sets (or moves) the key's deadline (epoch ms). */
  schedule(key: Key, at: number): void {
    const i = this.index.get(key);
    if (i === undefined) {
      this.keys.push(key);
      this.ats.push(at);
      this.index.set(key, this.keys.length - 1);
      this.up(this.keys.length - 1);
    } else {
      const before = this.ats[i] ?? at;
      this.ats[i] = at;
      if (at < before) this.up(i);
      else this.down(i);
    }
    this.arm();
  }

  /** Forgets the key's deadline, if it has one. */
  cancel(key: Key): void {
    const i = this.index.get(key);
    if (i === undefined) return;
    this.removeAt(i);
    this.arm();
  }

  /** Runs every deadline that has passed now (the timer does this on its own). */
  runDue(): void {
    const now = this.clock.now();
    // Taken out first: a key that onDue schedules again, even in the past, waits for the next round.
    const due: Key[] = [];
    for (;;) {
      const at = this.ats[0];
      const key = this.keys[0];
      if (at === undefined || key === undefined || at > now) break;
      this.removeAt(0);
      due.push(key);
    }
    for (const key of due) this.onDue(key);
    this.arm();
  }

  /**
   * Copies the heap and its index into storage sized for what they hold now. V8 shrinks a Map's table only once it
   * is less than a quarter full, and an array's backing store not at all when it is popped: a queue that held the
   * deadlines of every partition's orders and keeps a third of them (partitions moved to other replicas) would
   * keep storage for all (3 MiB more than it needs at 100k deadlines of which a third stay). The deadlines and the
   * timer are unchanged.
   */
  compact(): void {
    this.keys = this.keys.slice();
    this.ats = this.ats.slice();
    this.index = new Map(this.index);
  }

  /** Forgets every deadline and disarms the timer. */
  clear(): void {
    this.keys.length = 0;
    this.ats.length = 0;
    this.index.clear();
    this.disarm();
  }

  private arm(): void {
    const earliest = this.ats[0];
    if (earliest === undefined) {
      this.disarm();
      return;
    }
    if (this.timer !== undefined && this.armedAt <= earliest) return;
    this.disarm();
    const delay = Math.min(maxTimerDelayMs, Math.max(0, earliest - this.clock.now()));
    this.armedAt = earliest;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.armedAt = Number.POSITIVE_INFINITY;
      this.runDue();
    }, delay);
  }

  private disarm(): void {
    if (this.timer === undefined) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }

  private removeAt(i: number): void {
    const last = this.keys.length - 1;
    const key = this.keys[i];
    if (key !== undefined) this.index.delete(key);
    if (i !== last) {
      this.move(last, i);
      this.keys.pop();
      this.ats.pop();
      this.up(i);
      this.down(i);
    } else {
      this.keys.pop();
      this.ats.pop();
    }
  }

  /** Puts the entry at `from` into slot `to` (overwriting it). */
  private move(from: number, to: number): void {
    const key = this.keys[from] as Key;
    this.keys[to] = key;
    this.ats[to] = this.ats[from] as number;
    this.index.set(key, to);
  }

  private swap(a: number, b: number): void {
    const key = this.keys[a] as Key;
    const at = this.ats[a] as number;
    this.move(b, a);
    this.keys[b] = key;
    this.ats[b] = at;
    this.index.set(key, b);
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.ats[parent] as number) <= (this.ats[i] as number)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n && (this.ats[left] as number) < (this.ats[smallest] as number)) smallest = left;
      if (right < n && (this.ats[right] as number) < (this.ats[smallest] as number)) smallest = right;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }
}
