// How busy the replica's main thread is: the event loop's utilisation (the share of time it ran callbacks rather
// than waited for I/O) over the last sampling interval, from Node's own accounting. Above `saturatedAt` the replica
// is saturated: work it may put off (a resting order's routine poll, within the interface document's 60 s) waits,
// so that commands, webhook hints and creations keep the thread.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

export interface EventLoopLoadOptions {
  /** How often the utilisation is sampled; the figure covers the last interval. Default 1 s. */
  intervalMs?: number;
  /** Utilisation (0-1) from which the replica counts as saturated. Default 0.8 (queues grow quickly above it). */
  saturatedAt?: number;
}

export class EventLoopLoad {
  readonly #saturatedAt: number;
  readonly #timer: NodeJS.Timeout;
  #last: EventLoopUtilization;
  #utilization = 0;

  constructor(opts: EventLoopLoadOptions = {}) {
    this.#saturatedAt = opts.saturatedAt ?? 0.8;
    this.#last = performance.eventLoopUtilization();
    this.#timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      this.#utilization = performance.eventLoopUtilization(now, this.#last).utilization;
      this.#last = now;
    }, opts.intervalMs ?? 1_000);
    this.#timer.unref();
  }

  /** The event loop's utilisation over the last interval (0-1). */
  get utilization(): number {
    return this.#utilization;
  }

  saturated(): boolean {
    return this.#utilization >= this.#saturatedAt;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
