import { describe, expect, it } from 'vitest';
import { concurrencyGate } from '../../../src/worker/concurrency-gate.ts';

describe('concurrencyGate', () => {
  it('starts a task at once while fewer than max run, the rest in order as they end, never more than max', async () => {
    const gate = concurrencyGate(2);
    const started: number[] = [];
    const finish: Array<() => void> = [];
    let running = 0;
    let most = 0;
    const results = Array.from({ length: 5 }, (_, i) =>
      gate(async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => finish.push(resolve));
        running--;
        return i * 10;
      }),
    );
    // Synchronously, in the caller's turn: the first two.
    expect(started).toEqual([0, 1]);
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    finish[1]!();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    finish[0]!();
    finish[2]!();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    finish[3]!();
    finish[4]!();
    expect(await Promise.all(results)).toEqual([0, 10, 20, 30, 40]);
    expect(most).toBe(2);
    // A failed task frees its slot and rejects its caller only.
    await expect(gate(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await gate(() => Promise.resolve('next'))).toBe('next');
  });
});
