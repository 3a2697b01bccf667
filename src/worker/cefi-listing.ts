// The CeFi listing reconciler: every round it walks GET /orders/?status=<code> (CeFi orders only, cursor pages) for
// each CeFi mode this replica holds a key for and each status in which an order is still open, and hands every row to
// the order it names, if this replica drives it (OrderHost.deliverListing). A row is never believed: the same status
// as the one confirmed stands for the routine poll, another status makes the order GET itself. Terminal statuses are
// not listed (only a GET of the order confirms an end). Walks run one page at a time at the budget's normal priority
// (ahead of per-order polls, behind creates and deposits); a walk that fails stops there and the next round starts it
// again.
import {
  exchangeStatusCodes,
  terminalExchangeStatuses,
  type ExchangeStatus,
  type TradingMode,
} from '../../machines/domain.ts';
import type { ExchangeClient } from '../exchange/client.ts';
import type { RequestPriority } from '../exchange/request-budget.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { ListingOutcome } from './order-host.ts';

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
}

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
}

export interface ListingRoundSummary {
  pages: number;
  rows: number;
  outcomes: Record<ListingOutcome, number>;
  failedWalks: number;
  skippedModes: ListedMode[];
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

export class CefiListing {
  readonly #opts: CefiListingOptions;
  readonly #logger: Logger;
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;

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
        this.#schedule(
          idle
            ? Math.min(this.#opts.intervalMs, idleRecheckMs)
            : Math.max(0, startedAt + this.#opts.intervalMs - this.#opts.now()),
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
      durationMs: 0,
    };
    for (const mode of this.#opts.modes) {
      if (!this.#opts.target.drivesOpenOrders(mode)) {
        summary.skippedModes.push(mode);
        continue;
      }
      for (const status of openStatuses) {
        if (this.#stop.signal.aborted) break;
        await this.#walk(mode, status, summary);
      }
    }
    for (const [outcome, count] of Object.entries(summary.outcomes))
      if (count > 0) this.#opts.metrics?.rowsListed(outcome as ListingOutcome, count);
    summary.durationMs = this.#opts.now() - startedAt;
    this.#logger.debug(summary, 'listing round done');
    return summary;
  }

  /** GET /orders/?status=<code>, following pagination.next to the end; stops at the first failure. */
  async #walk(mode: ListedMode, status: ExchangeStatus, summary: ListingRoundSummary): Promise<void> {
    const { source, target, now, metrics } = this.#opts;
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
      // A page's rows together: a resting order's wake waits for Redis, and the page's wakes share the wait.
      const outcomes = await Promise.all(
        result.results.map(async (order) =>
          target.deliverListing({ uniqueReference: order.uniqueReference, status: order.status, at }),
        ),
      );
      for (const outcome of outcomes) {
        summary.rows++;
        summary.outcomes[outcome]++;
      }
      if (!result.next) return;
      cursor = result.next;
    }
  }
}
