// Liveness fails while a command handler is stuck: past a little more than the consumer's session timeout, the
// group has evicted the replica and only a restart brings its consumption back.
import { describe, expect, it } from 'vitest';
import { WorkerHealth, stuckHandlerAfterOf, type WorkerHealthDeps } from '../../../src/worker/health.ts';

function healthWith(commands: WorkerHealthDeps['commands'], crashedForGood?: string): WorkerHealth {
  return new WorkerHealth({
    consumer: {
      crashedForGood,
      joined: true,
      allRestored: () => true,
      restoredPartitions: new Set<number>(),
      assigned: [],
    },
    kafka: { reachable: () => Promise.resolve(true) },
    checks: { redis: () => Promise.resolve(true), exchange: () => Promise.resolve(true) },
    ...(commands ? { commands } : {}),
    now: () => 0,
  });
}

describe('stuckHandlerAfterOf', () => {
  it('counts a handler as stuck a little past the session timeout, never before it', () => {
    expect(stuckHandlerAfterOf(15_000)).toBe(20_000);
    expect(stuckHandlerAfterOf(60_000)).toBe(75_000);
    expect(stuckHandlerAfterOf(6_000)).toBe(11_000);
    for (const session of [6_000, 10_000, 15_000, 30_000, 45_000, 300_000])
      expect(stuckHandlerAfterOf(session)).toBeGreaterThan(session);
  });
});

describe('liveness with a command handler running', () => {
  it('stays alive while the handler is idle or within the bound', () => {
    let running: number | undefined;
    const health = healthWith({ runningForMs: () => running, stuckAfterMs: 20_000 });
    expect(health.liveness()).toEqual({ alive: true });
    running = 19_999;
    expect(health.liveness()).toEqual({ alive: true });
    running = 20_000;
    expect(health.liveness()).toEqual({ alive: true });
  });

  it('is not alive once the handler runs past the bound, and alive again when it returns', () => {
    let running: number | undefined = 20_001;
    const health = healthWith({ runningForMs: () => running, stuckAfterMs: 20_000 });
    expect(health.liveness()).toEqual({
      alive: false,
      detail: 'command handler running for 20001 ms (> 20000 ms)',
    });
    running = undefined;
    expect(health.liveness()).toEqual({ alive: true });
  });

  it('reports a crashed consumer first, and is alive without the handler check', () => {
    expect(
      healthWith({ runningForMs: () => 90_000, stuckAfterMs: 20_000 }, 'not retriable').liveness(),
    ).toEqual({ alive: false, detail: 'command consumer crashed: not retriable' });
    expect(healthWith(undefined).liveness()).toEqual({ alive: true });
  });
});
