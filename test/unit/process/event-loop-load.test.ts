// The replica's load gauge against Node's own event-loop accounting: a thread kept busy reads saturated, an idle one
// does not.
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventLoopLoad } from '../../../src/process/event-loop-load.ts';

let load: EventLoopLoad | undefined;
afterEach(() => load?.stop());

/** Keeps the event loop busy for `ms`, yielding to timers every 20 ms (as a saturated replica does). */
async function busyFor(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const slice = Date.now() + 20;
    while (Date.now() < slice);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('EventLoopLoad', () => {
  it('reads saturated while the event loop is busy nearly all the time, and not once it idles', async () => {
    load = new EventLoopLoad({ intervalMs: 200 });
    await busyFor(700);
    expect(load.utilization).toBeGreaterThan(0.9);
    expect(load.saturated()).toBe(true);
    await sleep(700);
    expect(load.utilization).toBeLessThan(0.2);
    expect(load.saturated()).toBe(false);
  });
});
