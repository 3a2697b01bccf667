// The one-timer deadline queue (src/worker/deadline-queue.ts): due keys run earliest first, a key has one deadline,
// and however many keys wait, a single Node timer is armed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineQueue } from '../../../src/worker/deadline-queue.ts';

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

  it('disarms its timer when cleared', () => {
    const queue = new DeadlineQueue<string>(() => {}, Date.now);
    queue.schedule('a', 1_000_100);
    queue.clear();
    expect(vi.getTimerCount()).toBe(0);
    expect(queue.has('a')).toBe(false);
  });
});
