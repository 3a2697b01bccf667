// The CeFi listing reconciler's walk against a fake of the client's listOrders: every open status of every CeFi mode
// with a key, every page to the end, the filter on every page, a walk stopped at its first error (the others go on),
// rows handed to the host, which alone knows which orders are this replica's.
import { describe, expect, it, vi } from 'vitest';
import { exchangeStatusCodes } from '../../../machines/domain.ts';
import { ExchangeError } from '../../../src/exchange/errors.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import {
  CefiListing,
  openStatuses,
  type ListedMode,
  type ListingMetrics,
} from '../../../src/worker/cefi-listing.ts';
import type { ListingOutcome } from '../../../src/worker/ports.ts';
import { fakeExchange, fakeHost } from '../../support/listing-fakes.ts';

function recordingMetrics() {
  const pages: string[] = [];
  const rows: Partial<Record<ListingOutcome, number>> = {};
  const failed: string[] = [];
  const metrics: ListingMetrics = {
    pageFetched: (mode) => void pages.push(mode),
    rowsListed: (outcome, count) => void (rows[outcome] = (rows[outcome] ?? 0) + count),
    walkFailed: (mode) => void failed.push(mode),
  };
  return { metrics, pages, rows, failed };
}

const logger = createLogger({ level: 'silent', workerId: 'test' });

function listing(
  exchange: ReturnType<typeof fakeExchange>,
  host: ReturnType<typeof fakeHost>,
  modes: ListedMode[] = ['cefi', 'cefi_fixed'],
  extra: { metrics?: ListingMetrics; maxPagesPerWalk?: number } = {},
) {
  return new CefiListing({
    source: exchange.source,
    target: host.target,
    modes,
    intervalMs: 30_000,
    now: exchange.now,
    logger,
    ...extra,
  });
}

describe('CeFi listing reconciler', () => {
  it('walks each open status code of each CeFi mode, ahead of per-order polls, never a terminal one', async () => {
    const exchange = fakeExchange({});
    await listing(exchange, fakeHost({})).round();
    const walked = exchange.requests.map((r) => `${r.mode}:${String(r.params.status)}`);
    const codes = openStatuses.map((status) => exchangeStatusCodes[status]);
    expect(codes).toEqual([11, 12, 13, 14, 15]);
    expect(walked).toEqual([
      ...codes.map((code) => `cefi:${code}`),
      ...codes.map((code) => `cefi_fixed:${code}`),
    ]);
    // Per-order polls are 'low': a page (up to a page size of confirmations) goes before them.
    expect(exchange.requests.every((r) => r.priority === 'normal')).toBe(true);
    for (const terminal of ['COMPLETED', 'REFUNDED', 'CANCELED'] as const)
      expect(codes).not.toContain(exchangeStatusCodes[terminal]);
  });

  it('follows pagination.next to the end, keeping the status filter on every page', async () => {
    const rows = Array.from({ length: 5 }, (_, i) => ({ reference: `R${i}`, status: 'INITIAL' }));
    const exchange = fakeExchange({ cefi: rows });
    const host = fakeHost(Object.fromEntries(rows.map((row) => [row.reference, 'INITIAL'])));
    const summary = await listing(exchange, host, ['cefi']).round();
    const initial = exchange.requests.filter((r) => r.params.status === 11);
    expect(initial.map((r) => r.params.cursor)).toEqual([undefined, '11:2', '11:4']);
    expect(host.delivered.map((row) => row.uniqueReference)).toEqual(['R0', 'R1', 'R2', 'R3', 'R4']);
    expect(summary.outcomes.confirmed).toBe(5);
    expect(summary.pages).toBe(3 + (openStatuses.length - 1));
  });

  it('hands every row to the host, which keeps only its own orders, and counts what each did', async () => {
    const exchange = fakeExchange({
      cefi: [
        { reference: 'MINE-SAME', status: 'INITIAL' },
        { reference: 'OTHER-REPLICA', status: 'INITIAL' },
        { reference: 'MINE-MOVED', status: 'PAID' },
      ],
    });
    const host = fakeHost({ 'MINE-SAME': 'INITIAL', 'MINE-MOVED': 'INITIAL' });
    const recorded = recordingMetrics();
    const summary = await listing(exchange, host, ['cefi'], { metrics: recorded.metrics }).round();
    expect(summary.outcomes).toEqual({ confirmed: 1, differed: 1, ignored: 0, not_here: 1 });
    expect(recorded.rows).toEqual({ confirmed: 1, differed: 1, not_here: 1 });
    expect(recorded.pages).toEqual(openStatuses.map(() => 'cefi'));
    const moved = host.delivered.find((row) => row.uniqueReference === 'MINE-MOVED');
    expect(moved?.status).toBe('PAID');
  });

  it('stamps each row with the time its page request left', async () => {
    const exchange = fakeExchange({ cefi: [{ reference: 'A', status: 'INITIAL' }] });
    const host = fakeHost({ A: 'INITIAL' });
    await listing(exchange, host, ['cefi']).round();
    // The fake's clock moves on as the page is answered: the stamp is from before.
    expect(host.delivered[0]?.at).toBe(1_000);
  });

  it('stops a walk at its first error and goes on with the next status; the next round walks it again', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => ({ reference: `R${i}`, status: 'INITIAL' }));
    const exchange = fakeExchange({ cefi: [...rows, { reference: 'P0', status: 'PAID' }] });
    exchange.failAt.set(
      'cefi:11:2',
      new ExchangeError({
        code: 'throttled',
        action: 'throttled',
        message: 'Request was throttled.',
        endpoint: 'GET /orders/',
        httpStatus: 429,
      }),
    );
    const host = fakeHost({
      ...Object.fromEntries(rows.map((r): [string, string] => [r.reference, 'INITIAL'])),
      P0: 'PAID',
    });
    const recorded = recordingMetrics();
    const reconciler = listing(exchange, host, ['cefi'], { metrics: recorded.metrics });
    const first = await reconciler.round();
    expect(first.failedWalks).toBe(1);
    expect(recorded.failed).toEqual(['cefi']);
    expect(host.delivered.map((row) => row.uniqueReference)).toEqual(['R0', 'R1', 'P0']);
    // No page after the failed one was asked for.
    expect(exchange.requests.filter((r) => r.params.status === 11).map((r) => r.params.cursor)).toEqual([
      undefined,
      '11:2',
    ]);

    exchange.failAt.clear();
    host.delivered.length = 0;
    const second = await reconciler.round();
    expect(second.failedWalks).toBe(0);
    expect(host.delivered.map((row) => row.uniqueReference)).toEqual([
      'R0',
      'R1',
      'R2',
      'R3',
      'R4',
      'R5',
      'P0',
    ]);
  });

  it('stops a walk whose cursor never ends', async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ reference: `R${i}`, status: 'INITIAL' }));
    const exchange = fakeExchange({ cefi: rows });
    const summary = await listing(exchange, fakeHost({}), ['cefi'], { maxPagesPerWalk: 3 }).round();
    expect(summary.failedWalks).toBe(1);
    expect(exchange.requests.filter((r) => r.params.status === 11)).toHaveLength(3);
  });

  it('skips a mode in which this replica drives no open order', async () => {
    const exchange = fakeExchange({ cefi: [{ reference: 'A', status: 'INITIAL' }] });
    const summary = await listing(exchange, fakeHost({}, ['cefi_fixed'])).round();
    expect(summary.skippedModes).toEqual(['cefi']);
    expect(exchange.requests.every((r) => r.mode === 'cefi_fixed')).toBe(true);
  });

  it('looks again soon after a round with nothing to walk, so orders restored meanwhile wait no whole interval', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const exchange = fakeExchange({ cefi: [{ reference: 'A', status: 'INITIAL' }] });
      const drives: ListedMode[] = [];
      const host = fakeHost({ A: 'INITIAL' }, drives);
      const reconciler = listing(exchange, host, ['cefi']);
      reconciler.start();
      // The first round (5 s after start) finds no open order: the restore is still under way.
      await vi.advanceTimersByTimeAsync(5_000);
      expect(exchange.requests).toEqual([]);
      // The restore brings the orders: the next look, 2 s later, walks them (not 30 s later).
      drives.push('cefi');
      await vi.advanceTimersByTimeAsync(2_000);
      expect(exchange.requests.length).toBeGreaterThan(0);
      expect(host.delivered.map((row) => row.uniqueReference)).toContain('A');
      // A round that walked something is followed by the next one an interval after its start.
      const after = exchange.requests.length;
      await vi.advanceTimersByTimeAsync(29_000);
      expect(exchange.requests.length).toBe(after);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(exchange.requests.length).toBeGreaterThan(after);
      await reconciler.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('lists nothing for DeFi, and does not start without a CeFi key or with the interval at 0', async () => {
    const exchange = fakeExchange({});
    const idle = listing(exchange, fakeHost({}), []);
    idle.start();
    const off = new CefiListing({
      source: exchange.source,
      target: fakeHost({}).target,
      modes: ['cefi'],
      intervalMs: 0,
      now: exchange.now,
      logger,
    });
    off.start();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await idle.stop();
    await off.stop();
    expect(exchange.requests).toEqual([]);
    await listing(exchange, fakeHost({})).round();
    expect(exchange.requests.some((r) => r.mode === 'defi')).toBe(false);
  });
});
