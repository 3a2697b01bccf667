// The one-timer deadline queue (src/worker/deadline-queue.ts): due keys run earliest first, a key has one deadline,
// and however many keys wait, a single Node timer is armed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineQueue } from '../../../src/worker/deadline-queue.ts';
import { reduceHeap } from '../../../src/process/heap-reducer.ts';

describe('DeadlineQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs each key at its deadline, earliest first, with one timer for all of them', () => {
    const due: string[] = [];
    const queue = new DeadlineQueue<string>((key) => due.push(key), Date.now);
    queue.schedule('c', 1_000_300);
    queue.schedule('a', 1_000_100);
    queue.schedule('b', 1_000_200);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(99);
    expect(due).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(due).toEqual(['a']);
    vi.advanceTimersByTime(200);
    expect(due).toEqual(['a', 'b', 'c']);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('moves a key scheduled again, and forgets a cancelled one', () => {
    const due: string[] = [];
    const queue = new DeadlineQueue<string>((key) => due.push(key), Date.now);
    queue.schedule('a', 1_000_100);
    queue.schedule('b', 1_000_200);
    queue.schedule('a', 1_000_300);
    queue.cancel('b');
    expect(queue.size).toBe(1);
    vi.advanceTimersByTime(250);
    expect(due).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(due).toEqual(['a']);
  });

  it('keeps its heap ordered through many random schedules, moves and cancels', () => {
    const due: Array<[number, number]> = [];
    const queue = new DeadlineQueue<number>((key) => due.push([key, Date.now()]), Date.now);
    const expected = new Map<number, number>();
    let seed = 7;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    for (let i = 0; i < 5_000; i++) {
      const key = Math.floor(random() * 500);
      if (random() < 0.2) {
        queue.cancel(key);
        expected.delete(key);
      } else {
        const at = 1_000_000 + Math.floor(random() * 10_000);
        queue.schedule(key, at);
        expected.set(key, at);
      }
    }
    expect(queue.size).toBe(expected.size);
    vi.advanceTimersByTime(10_000);
    expect(due).toHaveLength(expected.size);
    for (const [key, at] of due) expect(at).toBe(expected.get(key));
    const times = due.map(([, at]) => at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('runs a key scheduled again from its own callback in a later round, not in a loop', () => {
    let runs = 0;
    const queue = new DeadlineQueue<string>((key) => {
      runs++;
      if (runs < 3) queue.schedule(key, Date.now());
    }, Date.now);
    queue.schedule('a', 1_000_010);
    vi.advanceTimersByTime(10);
    expect(runs).toBe(1);
    vi.advanceTimersByTime(1);
    expect(runs).toBe(2);
    vi.advanceTimersByTime(10);
    expect(runs).toBe(3);
    expect(queue.size).toBe(0);
  });

  it('keeps every deadline, their order and its one timer when compacted, in storage sized for what is left', async () => {
    const due: Array<[number, number]> = [];
    const queue = new DeadlineQueue<number>((key) => due.push([key, Date.now()]), Date.now);
    const count = 100_000;
    for (let i = 0; i < count; i++) queue.schedule(i, 1_000_000 + ((i * 7_919) % 50_000));
    // Two deadlines in three cancelled (partitions taken away): a third stays, above a quarter of the table.
    for (let i = 0; i < count; i++) if (i % 3 !== 0) queue.cancel(i);
    const kept = queue.size;
    expect(kept).toBe(Math.ceil(count / 3));
    const heapUsed = async (): Promise<number> => {
      await reduceHeap();
      return process.memoryUsage().heapUsed;
    };
    const before = await heapUsed();
    queue.compact();
    const after = await heapUsed();
    // The index's table for 131,072 entries and the arrays' 100k slots, against what 33,334 need: about 3 MiB.
    expect((before - after) / 2 ** 20).toBeGreaterThan(2);
    expect(queue.size).toBe(kept);
    expect(queue.deadlineOf(3)).toBe(1_000_000 + ((3 * 7_919) % 50_000));
    expect(queue.has(4)).toBe(false);
    queue.schedule(3, 1_000_000 + 60_000);
    queue.cancel(0);
    queue.cancel(6);
    queue.schedule(count, 1_000_000);
    vi.advanceTimersByTime(60_000);
    expect(due).toHaveLength(kept - 1);
    expect(due[0]).toEqual([count, 1_000_000]);
    expect(due.at(-1)).toEqual([3, 1_060_000]);
    const times = due.map(([, at]) => at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(vi.getTimerCount()).toBe(0);
  });

  it('disarms its timer when cleared', () => {
    const queue = new DeadlineQueue<string>(() => {}, Date.now);
    queue.schedule('a', 1_000_100);
    queue.clear();
    expect(vi.getTimerCount()).toBe(0);
    expect(queue.has('a')).toBe(false);
  });
});
