// The CeFi listing reconciler: every round it walks GET /orders/?status=<code> (CeFi orders only, cursor pages) for
// each CeFi mode this replica holds a key for and each status in which an order is still open, and hands every row to
// the order it names, if this replica drives it (OrderHost.deliverListing). A row is never believed: the same status
// as the one confirmed stands for the routine poll, another status makes the order GET itself. Terminal statuses are
// not listed (only a GET of the order confirms an end). Walks run one page at a time at the budget's normal priority
// (ahead of per-order polls, behind creates and deposits); a walk that fails stops there and the next round starts it
// again. With a share (src/redis/listing-share.ts) the replicas of a deployment make one walk per interval between
// them: the listing names every order of the key, whichever replica drives it, so each replica walking it for its
// own orders multiplied its cost by the replicas. The replica that finds the last walk older than the interval
// claims and makes the next one, recording its rows; the others take their own orders' rows from it. Without Redis,
// each replica walks on its own as before.
import {
  exchangeStatusCodes,
  terminalExchangeStatuses,
  type ExchangeStatus,
  type TradingMode,
} from '../../machines/domain.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import type { RequestPriority } from '../exchange/request-budget.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { ListingShare, SharedRow } from '../redis/listing-share.ts';
import type { ListingOutcome } from './ports.ts';

/** GET /orders/ lists CeFi orders only: DeFi orders keep their per-order polls. */
export const listedModes = ['cefi', 'cefi_fixed'] as const satisfies readonly TradingMode[];
export type ListedMode = (typeof listedModes)[number];

/** The statuses walked: every known one in which an order is still open (an unknown status is polled per order). */
export const openStatuses: readonly ExchangeStatus[] = (
  Object.keys(exchangeStatusCodes) as ExchangeStatus[]
).filter((status) => !terminalExchangeStatuses.includes(status));

/** The orders a listing row may concern: this replica's (OrderHost). */
export interface ListingTarget {
  /** A promise when the order must be woken first (its lease taken up again from Redis). */
  deliverListing(row: {
    uniqueReference: string;
    status: string;
    at: number;
  }): ListingOutcome | Promise<ListingOutcome>;
  /** True when this replica drives an open exchange order of `mode` (else its walks are skipped). */
  drivesOpenOrders(mode: TradingMode): boolean;
  /** The unique references of the open exchange orders of `mode` this replica drives (rows of a shared walk). */
  openReferences(mode: TradingMode): string[];
}

/** What the listing needs of a share of walks between replicas (ListingShare). */
export type WalkShare = Pick<
  ListingShare,
  'latest' | 'claim' | 'keep' | 'record' | 'complete' | 'release' | 'rowsOf'
>;

/** What a round reports for metrics; label values are modes and outcomes only. */
export interface ListingMetrics {
  pageFetched(mode: ListedMode): void;
  rowsListed(outcome: ListingOutcome, count: number): void;
  walkFailed(mode: ListedMode): void;
}

export interface CefiListingOptions {
  source: Pick<ExchangeClient, 'listOrders'>;
  target: ListingTarget;
  /** The CeFi modes the worker holds a key for (keys are per mode). */
  modes: readonly ListedMode[];
  /** Between the starts of two rounds (a round that overruns is followed at once by the next). */
  intervalMs: number;
  now: () => number;
  logger: Logger;
  metrics?: ListingMetrics;
  /** A walk longer than this stops (and is counted failed): a cursor that never ends must not hold the loop. */
  maxPagesPerWalk?: number;
  /**
   * One walk per interval between the replicas sharing it (src/redis/listing-share.ts); without it this replica
   * walks every round. Rounds then come every `shareCheckMs` (default 2 s, at most the interval): a look at the
   * latest walk, a walk when it is due, the rows of a walk another replica made once it has ended.
   */
  share?: WalkShare;
  shareCheckMs?: number;
}

export interface ListingRoundSummary {
  pages: number;
  rows: number;
  outcomes: Record<ListingOutcome, number>;
  failedWalks: number;
  skippedModes: ListedMode[];
  /** Rows taken from a walk another replica made (shared), and modes whose walk another replica is making. */
  sharedRows: number;
  walkedElsewhere: ListedMode[];
  durationMs: number;
}

const defaultMaxPagesPerWalk = 10_000;
/**
 * A page confirms up to a page size of orders, a poll one: when polls queue for the budget (a restore after an outage,
 * more orders than the key carries), the listing goes first, so the orders it confirms never join the queue. One page
 * is in flight at a time, so it never takes more than one request slot from quotes, which share this priority.
 */
const listingPriority: RequestPriority = 'normal';
/** The first round after start: partitions are being restored meanwhile (a round without open orders costs nothing). */
const firstRoundDelayMs = 5_000;
/** After a round that found no open CeFi order to walk: the next look (a look with nothing to walk costs nothing). */
const idleRecheckMs = 2_000;
/** With a share: between two looks at the latest walk (one GET per mode). */
const defaultShareCheckMs = 2_000;
/**
 * A shared walk's rows are handed over this many at a time, as a page's are (together, so the wakes of resting
 * orders that a row concerns share their wait for Redis), not a replica's whole share of the listing at once.
 */
const sharedRowsAtOnce = 100;

/** A walk this replica makes for the replicas sharing it. */
interface Sharing {
  share: WalkShare;
  walk: string;
  token: string;
  startedAt: number;
  /** When the claim was last renewed. */
  keptAt: number;
  /** False once recording failed or the claim was lost: the walk goes on for this replica alone. */
  recording: boolean;
}

export class CefiListing {
  readonly #opts: CefiListingOptions;
  readonly #logger: Logger;
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  /** Per mode, the shared walk whose rows this replica has taken (or made). */
  readonly #taken = new Map<ListedMode, string>();
  /** Per mode, when this replica last walked on its own because the share failed. */
  readonly #walkedAlone = new Map<ListedMode, number>();
  #shareFailedAt = 0;

  constructor(opts: CefiListingOptions) {
    this.#opts = opts;
    this.#logger = opts.logger.child({ component: 'cefi-listing' });
  }

  /**
   * Rounds every intervalMs from now on, the first one soon (orders restored at start are confirmed by it rather than
   * each by its own overdue poll); nothing when no CeFi mode has a key.
   */
  start(): void {
    if (this.#opts.modes.length === 0 || this.#opts.intervalMs <= 0 || this.#stop.signal.aborted) return;
    this.#schedule(Math.min(this.#opts.intervalMs, firstRoundDelayMs));
  }

  /** No new round; the one under way stops at its next page and is awaited. */
  async stop(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(() => {
      const startedAt = this.#opts.now();
      const running = this.round().catch((error: unknown) => {
        this.#logger.warn({ err: { message: (error as Error).message } }, 'listing round failed');
        return undefined;
      });
      this.#running = running;
      void running.then((summary) => {
        if (this.#stop.signal.aborted) return;
        // A round with nothing to walk (no open CeFi order here yet: partitions still being restored, or just taken
        // over) is followed by another soon, not after a whole interval: orders a restore brings are confirmed by the
        // listing before their fallback polls come due, each with its own GET.
        const idle = summary !== undefined && summary.skippedModes.length === this.#opts.modes.length;
        const every = this.#opts.share
          ? Math.min(this.#opts.intervalMs, this.#opts.shareCheckMs ?? defaultShareCheckMs)
          : this.#opts.intervalMs;
        this.#schedule(
          idle ? Math.min(every, idleRecheckMs) : Math.max(0, startedAt + every - this.#opts.now()),
        );
      });
    }, delayMs);
    this.#timer.unref();
  }

  /** One round: every open status of every listed mode this replica has open orders of, each walk to its end. */
  async round(): Promise<ListingRoundSummary> {
    const startedAt = this.#opts.now();
    const summary: ListingRoundSummary = {
      pages: 0,
      rows: 0,
      outcomes: { confirmed: 0, differed: 0, ignored: 0, not_here: 0 },
      failedWalks: 0,
      skippedModes: [],
      sharedRows: 0,
      walkedElsewhere: [],
      durationMs: 0,
    };
    for (const mode of this.#opts.modes) {
      if (!this.#opts.target.drivesOpenOrders(mode)) {
        summary.skippedModes.push(mode);
        continue;
      }
      if (this.#opts.share) {
        if (await this.#shared(this.#opts.share, mode, summary)) continue;
        // Redis failed: this replica walks on its own, once an interval as without a share (rounds come more often).
        const last = this.#walkedAlone.get(mode);
        if (last !== undefined && this.#opts.now() - last < this.#opts.intervalMs) continue;
        this.#walkedAlone.set(mode, this.#opts.now());
      }
      await this.#walkAll(mode, summary);
    }
    for (const [outcome, count] of Object.entries(summary.outcomes))
      if (count > 0) this.#opts.metrics?.rowsListed(outcome as ListingOutcome, count);
    summary.durationMs = this.#opts.now() - startedAt;
    this.#logger.debug(summary, 'listing round done');
    return summary;
  }

  /** Every open status of the mode, walked to its end; each page's rows recorded to `sharing` when given. */
  async #walkAll(mode: ListedMode, summary: ListingRoundSummary, sharing?: Sharing): Promise<void> {
    for (const status of openStatuses) {
      if (this.#stop.signal.aborted) break;
      await this.#walk(mode, status, summary, sharing);
    }
  }

  /**
   * The mode's round with the share: the rows of a walk another replica ended since this replica last looked, and a
   * walk of its own when the last one started an interval ago or more and no replica is making one (else nothing: a
   * walk is under way elsewhere, or the last one is recent). False when Redis failed before any walk was made here:
   * the caller walks on its own.
   */
  async #shared(share: WalkShare, mode: ListedMode, summary: ListingRoundSummary): Promise<boolean> {
    const { now, target, intervalMs } = this.#opts;
    let sharing: Sharing;
    try {
      const latest = await share.latest(mode);
      // Any walk ended since: its rows are true as of their `at` (a walk longer than the interval included), and the
      // machine ignores a row older than what it confirmed since.
      if (latest !== null && this.#taken.get(mode) !== latest.walk) {
        const rows = await share.rowsOf(mode, latest.walk, target.openReferences(mode));
        this.#taken.set(mode, latest.walk);
        summary.sharedRows += rows.length;
        for (let i = 0; i < rows.length; i += sharedRowsAtOnce)
          await this.#deliver(rows.slice(i, i + sharedRowsAtOnce), summary);
      }
      if (latest !== null && now() - latest.startedAt < intervalMs) return true;
      const claim = await share.claim(mode);
      if (claim === null) {
        summary.walkedElsewhere.push(mode);
        return true;
      }
      sharing = { share, ...claim, startedAt: now(), keptAt: now(), recording: true };
    } catch (error) {
      this.#shareFailed(error);
      return false;
    }
    await this.#walkAll(mode, summary, sharing);
    this.#taken.set(mode, sharing.walk);
    try {
      // A walk stopped by this replica's shutdown is not offered as this interval's: another replica makes one.
      if (sharing.recording && !this.#stop.signal.aborted)
        await share.complete(mode, sharing.walk, sharing.startedAt, sharing.token);
      else await share.release(mode, sharing.token);
    } catch (error) {
      this.#shareFailed(error);
    }
    return true;
  }

  #shareFailed(error: unknown): void {
    // Once a minute at most: while Redis is down, every round says it.
    if (this.#opts.now() - this.#shareFailedAt < 60_000) return;
    this.#shareFailedAt = this.#opts.now();
    this.#logger.warn(
      { err: { message: (error as Error).message, code: (error as { code?: string }).code } },
      'listing walks are not shared (Redis); this replica walks on its own meanwhile',
    );
  }

  /** Hands a page's rows to their orders (those this replica drives), together, and counts the outcomes. */
  async #deliver(rows: readonly SharedRow[], summary: ListingRoundSummary): Promise<void> {
    // A page's rows together: a resting order's wake waits for Redis, and the page's wakes share the wait.
    const outcomes = await Promise.all(rows.map(async (row) => this.#opts.target.deliverListing(row)));
    for (const outcome of outcomes) {
      summary.rows++;
      summary.outcomes[outcome]++;
    }
  }

  /** Records a page's rows for the other replicas; a failure ends the recording, not the walk. */
  async #record(sharing: Sharing, mode: ListedMode, rows: SharedRow[]): Promise<void> {
    if (!sharing.recording) return;
    try {
      await sharing.share.record(mode, sharing.walk, rows);
      // The claim lasts an interval: renewed well before, so a long walk is not taken for an abandoned one.
      if (this.#opts.now() - sharing.keptAt > this.#opts.intervalMs / 3) {
        sharing.keptAt = this.#opts.now();
        if (!(await sharing.share.keep(mode, sharing.token))) sharing.recording = false;
      }
    } catch (error) {
      sharing.recording = false;
      this.#shareFailed(error);
    }
  }

  /** GET /orders/?status=<code>, following pagination.next to the end; stops at the first failure. */
  async #walk(
    mode: ListedMode,
    status: ExchangeStatus,
    summary: ListingRoundSummary,
    sharing?: Sharing,
  ): Promise<void> {
    const { source, now, metrics } = this.#opts;
    const maxPages = this.#opts.maxPagesPerWalk ?? defaultMaxPagesPerWalk;
    const code = exchangeStatusCodes[status];
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      if (this.#stop.signal.aborted) return;
      if (page >= maxPages) {
        summary.failedWalks++;
        metrics?.walkFailed(mode);
        this.#logger.warn({ mode, status, pages: page }, 'listing walk still had pages; stopped');
        return;
      }
      // The page shows the orders as they were at the latest when its request left: stamped as it leaves.
      let at = now();
      let result: Awaited<ReturnType<CefiListingOptions['source']['listOrders']>>;
      try {
        result = await source.listOrders(
          mode,
          // The filter goes with every page: a cursor that is not a URL would not carry it.
          cursor === undefined ? { status: code } : { status: code, cursor },
          { priority: listingPriority, signal: this.#stop.signal, beforeSend: () => void (at = now()) },
        );
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        summary.failedWalks++;
        metrics?.walkFailed(mode);
        this.#logger.warn(
          {
            mode,
            status,
            page,
            err: { message: (error as Error).message, code: (error as { code?: string }).code },
          },
          'listing walk failed; the next round walks it again',
        );
        return;
      }
      summary.pages++;
      metrics?.pageFetched(mode);
      const rows = result.results.map((order) => ({
        uniqueReference: order.uniqueReference,
        status: order.status,
        at,
      }));
      await Promise.all([this.#deliver(rows, summary), sharing && this.#record(sharing, mode, rows)]);
      if (!result.next) return;
      cursor = result.next;
    }
  }
}
