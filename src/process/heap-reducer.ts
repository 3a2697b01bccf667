// Gives back the memory a restore used once it is over. Reading a partition's state topic parses every record: the
// heap grows to about twice what the resting orders keep, and V8 keeps the pages its ordinary collections free in a
// pool for reuse, resident, until it runs a memory-reducing collection. Its memory reducer starts one only when the
// allocation rate has been low for some time (measured here: 500 MiB of pooled pages still resident 15 s after a
// restore of 100k orders, RSS 11.9 KiB per resting order of which 3.2 KiB live heap). A restore is a burst that
// ends at a known moment, so the replica asks for that collection itself, once, when its restores are done (and
// when partitions were taken away: their records are garbage then).
//
// V8 offers it to embedders as the `gc` extension's last-resort flavor (a compacting full collection that also
// empties the page pool). The extension is exposed for this module's context only: `--expose-gc` set before the
// function is made in a new context, and unset again, so no other code sees a global `gc`.
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from '../telemetry/logger.ts';

type GcOptions = { type: 'major'; execution: 'async'; flavor: 'last-resort' };
type Collect = (options: GcOptions) => Promise<void> | void;

let collect: Collect | undefined;

function collector(): Collect {
  if (collect) return collect;
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') {
    collect = exposed as Collect;
    return collect;
  }
  v8.setFlagsFromString('--expose-gc');
  try {
    collect = vm.runInNewContext('gc') as Collect;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  return collect;
}

/** More rounds after the first while a round still gives back this share of the committed heap. */
const worthAnotherRound = 0.1;
const maxRounds = 4;

/**
 * A memory-reducing collection: compacts the heap and releases V8's pooled pages. Resolves when it is done. One
 * collection evacuates only a bounded share of the heap's fragmented pages: a replica that first held every
 * partition's orders and then kept a third of them had 215-275 MiB committed for 147 MiB live after one. So it
 * collects again while a round still gives back a tenth of the committed heap (at most four rounds).
 */
export async function reduceHeap(): Promise<void> {
  for (let round = 0; round < maxRounds; round++) {
    const before = process.memoryUsage().heapTotal;
    await collector()({ type: 'major', execution: 'async', flavor: 'last-resort' });
    if (process.memoryUsage().heapTotal > before * (1 - worthAnotherRound)) return;
  }
}

export interface HeapReducerOptions {
  logger: Logger;
  /** Wait this long after the last request, so the restore's last garbage is unreachable and requests coalesce. */
  delayMs?: number;
  /** At most one reduction in this long (a rebalance storm restores often; each reduction pauses the loop). 10 s. */
  minIntervalMs?: number;
  now?: () => number;
  /** True while the burst's follow-up work still runs (e.g. the routes a restore publishes): the reduction waits. */
  busy?: () => boolean;
  /** The collection itself (tests pass a fake). */
  reduce?: () => Promise<void>;
  /** Told of every reduction done, with its reason (metrics: the replica is at rest again). */
  onReduced?: (reason: string) => void;
}

/** Runs a memory-reducing collection after bursts (restores), debounced and at most once per interval. */
export class HeapReducer {
  private readonly logger: Logger;
  private readonly delayMs: number;
  private readonly minIntervalMs: number;
  private readonly now: () => number;
  private readonly reduce: () => Promise<void>;
  private readonly busy: () => boolean;
  private readonly onReduced: ((reason: string) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The reason of the first request the pending reduction stands for. */
  private pendingReason: string | undefined;
  private lastRun = -Infinity;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(opts: HeapReducerOptions) {
    this.logger = opts.logger.child({ component: 'heap-reducer' });
    this.delayMs = opts.delayMs ?? 1_000;
    this.minIntervalMs = opts.minIntervalMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    this.reduce = opts.reduce ?? reduceHeap;
    this.busy = opts.busy ?? (() => false);
    this.onReduced = opts.onReduced;
  }

  /**
   * Asks for a reduction after a burst: runs `delayMs` after the last request, no sooner than the interval allows.
   * Requests that come before it runs share it, under the first one's reason: partitions taken away while a restore's
   * reduction waits (replicas starting together rebalance) make it no less the restore's.
   */
  request(reason: string): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.pendingReason ??= reason;
    const wait = Math.max(this.delayMs, this.lastRun + this.minIntervalMs - this.now());
    this.timer = setTimeout(() => {
      const pending = this.pendingReason ?? reason;
      this.pendingReason = undefined;
      void this.run(pending);
    }, wait);
    this.timer.unref();
  }

  /** Runs a reduction now (after start-up, before the replica reports ready); resolves when it is done. */
  async reduceNow(reason: string): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pendingReason = undefined;
    if (this.running) await this.running.catch(() => {});
    await this.run(reason, false);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async run(reason: string, waitWhileBusy = true): Promise<void> {
    if (this.stopped) return;
    this.timer = undefined;
    if (this.running || (waitWhileBusy && this.busy())) {
      this.request(reason);
      return;
    }
    const before = process.memoryUsage();
    const started = this.now();
    this.lastRun = started;
    this.running = this.reduce();
    try {
      await this.running;
      this.onReduced?.(reason);
      const after = process.memoryUsage();
      const mib = (bytes: number): number => Math.round(bytes / 104_857.6) / 10;
      this.logger.info(
        {
          reason,
          ms: this.now() - started,
          rssMiB: { before: mib(before.rss), after: mib(after.rss) },
          heapUsedMiB: { before: mib(before.heapUsed), after: mib(after.heapUsed) },
          heapTotalMiB: { before: mib(before.heapTotal), after: mib(after.heapTotal) },
        },
        'heap reduced',
      );
    } catch (error) {
      this.logger.warn({ reason, err: { message: (error as Error).message } }, 'heap reduction failed');
    } finally {
      this.running = undefined;
    }
  }
}
