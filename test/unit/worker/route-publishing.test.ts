import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { RoutePublishing, type RouteIndex } from '../../../src/worker/route-publishing.ts';

const logger = createLogger({ level: 'silent' });

function harness(opts: { claimedElsewhere?: Set<string>; maxInFlight?: number } = {}) {
  const puts: Array<[reference: string, orderId: string, partition: number]> = [];
  const reasserted: string[] = [];
  const forgotten: string[] = [];
  const pending: Array<() => void> = [];
  let slowPuts = false;
  const index: RouteIndex = {
    put: async (reference, orderId, partition) => {
      puts.push([reference, orderId, partition]);
      if (slowPuts) await new Promise<void>((resolve) => pending.push(resolve));
    },
    locate: (reference) =>
      Promise.resolve(
        reference === 'known'
          ? { orderId: 'o-known', partition: 3 }
          : reference === 'unplaced'
            ? { orderId: 'o-unplaced' }
            : null,
      ),
    forget: (reference) => {
      forgotten.push(reference);
      return Promise.resolve();
    },
  };
  const doubts = { count: 0 };
  const publishing = new RoutePublishing({
    index,
    claims: {
      reassert: (reference) => {
        reasserted.push(reference);
        return Promise.resolve(!(opts.claimedElsewhere?.has(reference) ?? false));
      },
    },
    logger,
    onClaimedElsewhere: () => doubts.count++,
    ...(opts.maxInFlight === undefined ? {} : { maxInFlight: opts.maxInFlight }),
  });
  return {
    publishing,
    puts,
    reasserted,
    forgotten,
    doubts,
    slow: () => (slowPuts = true),
    finishPuts: () => pending.splice(0).forEach((resolve) => resolve()),
  };
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('route publishing', () => {
  it('publishes a route and claims its exchange order again at once when no restore runs', async () => {
    const h = harness();
    h.publishing.routes.record('ref-1', 'o-1', 2);
    await vi.advanceTimersByTimeAsync(0);
    expect(h.puts).toEqual([['ref-1', 'o-1', 2]]);
    expect(h.reasserted).toEqual(['ref-1']);
    expect(h.doubts.count).toBe(0);
    expect(h.publishing.busy).toBe(false);
  });

  it('holds routes while a partition is restored and publishes them, in order, once it is over', async () => {
    const h = harness();
    let restoring = true;
    h.publishing.holdWhile(() => restoring);
    h.publishing.routes.record('ref-1', 'o-1', 0);
    h.publishing.routes.record('ref-2', 'o-2', 1);
    await vi.advanceTimersByTimeAsync(500);
    expect(h.puts).toEqual([]);
    expect(h.publishing.busy).toBe(true);
    restoring = false;
    // A route recorded after the restore still queues behind the held ones.
    h.publishing.routes.record('ref-3', 'o-3', 1);
    await vi.advanceTimersByTimeAsync(100);
    expect(h.puts.map(([reference]) => reference)).toEqual(['ref-1', 'ref-2', 'ref-3']);
    expect(h.publishing.busy).toBe(false);
  });

  it('counts and logs an exchange order that another order claims', async () => {
    const h = harness({ claimedElsewhere: new Set(['ref-taken']) });
    h.publishing.routes.record('ref-taken', 'o-1', 0);
    h.publishing.routes.record('ref-mine', 'o-2', 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(h.reasserted).toEqual(['ref-taken', 'ref-mine']);
    expect(h.doubts.count).toBe(1);
  });

  it('keeps a bounded number of route writes in flight, the rest queued (and busy until they end)', async () => {
    const h = harness({ maxInFlight: 2 });
    h.slow();
    for (let i = 0; i < 5; i++) h.publishing.routes.record(`ref-${i}`, `o-${i}`, 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(h.puts).toHaveLength(2);
    expect(h.publishing.busy).toBe(true);
    for (let round = 0; round < 3; round++) {
      h.finishPuts();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(h.puts).toHaveLength(5);
    expect(h.publishing.busy).toBe(false);
  });

  it('locates only routes that name a partition, and forgets a route best effort', async () => {
    const h = harness();
    await expect(h.publishing.routes.locate('known')).resolves.toEqual({ orderId: 'o-known', partition: 3 });
    await expect(h.publishing.routes.locate('unplaced')).resolves.toBeUndefined();
    await expect(h.publishing.routes.locate('missing')).resolves.toBeUndefined();
    h.publishing.routes.forget('known');
    expect(h.forgotten).toEqual(['known']);
  });
});
