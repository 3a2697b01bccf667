import { afterEach, describe, expect, it, vi } from 'vitest';
import { HeapReducer, reduceHeap } from '../../../src/process/heap-reducer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

const logger = createLogger({ level: 'silent', workerId: 'test' });

/** A reducer on fake timers whose collection is a spy (`reduce` rejects when `fails`). */
function fakeReducer(opts: {
  delayMs?: number;
  minIntervalMs?: number;
  busy?: () => boolean;
  fails?: boolean;
}) {
  vi.useFakeTimers();
  const { fails, ...options } = opts;
  const reduce = vi.fn(() => (fails ? Promise.reject(new Error('no')) : Promise.resolve()));
  const reduced: string[] = [];
  const reducer = new HeapReducer({
    logger,
    ...options,
    reduce,
    now: () => Date.now(),
    onReduced: (reason) => void reduced.push(reason),
  });
  return { reduce, reducer, reduced };
}

describe('HeapReducer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs once, delayMs after the last of several requests', async () => {
    const { reduce, reducer } = fakeReducer({ delayMs: 1_000 });
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(600);
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(600);
    expect(reduce).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(500);
    expect(reduce).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(reduce).toHaveBeenCalledTimes(1);
  });

  it('waits while the burst is still busy, then runs', async () => {
    let busy = true;
    const { reduce, reducer } = fakeReducer({ delayMs: 1_000, busy: () => busy });
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(reduce).not.toHaveBeenCalled();
    busy = false;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reduce).toHaveBeenCalledTimes(1);
  });

  it('runs at most once per minIntervalMs', async () => {
    const { reduce, reducer } = fakeReducer({ delayMs: 1_000, minIntervalMs: 60_000 });
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reduce).toHaveBeenCalledTimes(1);
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(30_000);
    expect(reduce).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(reduce).toHaveBeenCalledTimes(2);
  });

  it('tells of each reduction done, with its reason (the replica at rest again)', async () => {
    const { reducer, reduced } = fakeReducer({ delayMs: 1_000, minIntervalMs: 0, busy: () => false });
    await reducer.reduceNow('start');
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(999);
    expect(reduced).toEqual(['start']);
    await vi.advanceTimersByTimeAsync(1);
    expect(reduced).toEqual(['start', 'restore']);
  });

  it("runs requests made before it as one, under the first one's reason: a restore's reduction stays the restore's when partitions are taken away meanwhile", async () => {
    const { reduce, reducer, reduced } = fakeReducer({ delayMs: 1_000, minIntervalMs: 0, busy: () => false });
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(500);
    reducer.request('revoke');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reduce).toHaveBeenCalledTimes(1);
    expect(reduced).toEqual(['restore']);
    // A later request is a reduction of its own, under its own reason.
    reducer.request('revoke');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reduced).toEqual(['restore', 'revoke']);
  });

  it('does nothing once stopped, and a failed reduction is only logged', async () => {
    const { reduce, reducer, reduced } = fakeReducer({ delayMs: 100, minIntervalMs: 0, fails: true });
    reducer.request('restore');
    await vi.advanceTimersByTimeAsync(100);
    expect(reduce).toHaveBeenCalledTimes(1);
    expect(reduced).toEqual([]);
    reducer.request('restore');
    reducer.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reduce).toHaveBeenCalledTimes(1);
  });

  it('runs reduceNow at once, whatever the burst still does', async () => {
    const { reduce, reducer } = fakeReducer({ delayMs: 1_000, minIntervalMs: 10_000, busy: () => true });
    await reducer.reduceNow('start');
    expect(reduce).toHaveBeenCalledTimes(1);
  });
});

describe('reduceHeap (V8)', () => {
  it('gives back the pages a burst of garbage left in the heap, without a global gc', async () => {
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    // A burst: 200 MB of short-lived objects, of which a little stays reachable.
    const kept: object[] = [];
    for (let i = 0; i < 400_000; i++) {
      const garbage = JSON.parse(JSON.stringify({ id: `o${i}`, text: 'x'.repeat(400) + i })) as object;
      if (i % 100 === 0) kept.push(garbage);
    }
    const before = process.memoryUsage().heapTotal;
    await reduceHeap();
    const after = process.memoryUsage().heapTotal;
    expect(kept).toHaveLength(4_000);
    // An ordinary collection leaves the heap's committed size where the burst grew it; this one shrinks it.
    expect(after).toBeLessThan(before / 2);
    // The extension was not left exposed to other code.
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it('compacts a heap whose survivors are scattered over its pages (a replica keeping a third of what it read)', async () => {
    // Every record read whole, then two in three replaced by a small stub: the survivors sit on every page.
    const held: object[] = [];
    for (let i = 0; i < 60_000; i++)
      held.push(
        JSON.parse(JSON.stringify({ id: `o${i}`, machine: { pad: 'x'.repeat(1_500) + i } })) as object,
      );
    for (let i = 0; i < held.length; i++) if (i % 3 !== 0) held[i] = { id: i };
    await reduceHeap();
    const { heapUsed, heapTotal } = process.memoryUsage();
    expect(held).toHaveLength(60_000);
    // One collection left 1.36 times the live heap committed here; the rounds after it 1.06 times.
    expect(heapTotal).toBeLessThan(heapUsed * 1.2);
  });
});
