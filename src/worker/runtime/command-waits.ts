// The bound on every wait of a command handler (commandWaitBoundMs): past it the command fails as retryable, with
// nothing of it written and its offset not committed, so the consumer delivers it again and the handler returns in
// time for kafkajs to heartbeat and rejoin its group. What the command waited for (a lease, a reload) goes on.
import { WorkerError } from '../../errors.ts';
import { commandWaitBoundOf, defaultKafkaSessionTimeoutMs, withTimeout } from '../../timeouts.ts';

/** A command handler waited longer than its bound: the command is delivered again. */
export function commandWaitExceeded(what: string, boundMs: number): WorkerError {
  return new WorkerError(
    'command_wait_exceeded',
    `a command waited longer than ${boundMs} ms for ${what}; it will be delivered again`,
    { retryable: true },
  );
}

export class CommandWaits {
  readonly boundMs: number;

  constructor(boundMs: number | undefined) {
    this.boundMs = boundMs ?? commandWaitBoundOf(defaultKafkaSessionTimeoutMs);
  }

  /** When a wait that starts now must end (performance.now() clock). */
  deadline(): number {
    return performance.now() + this.boundMs;
  }

  /** What a lease wait of a command is given: it gives up between attempts past the deadline (acquireLease). */
  forLease(): { deadline: number; boundMs: number } {
    return { deadline: this.deadline(), boundMs: this.boundMs };
  }

  /** A wait for something outside the handler, bounded: past the bound it rejects with commandWaitExceeded. */
  bounded<T>(wait: Promise<T> | T, what: string): Promise<T> {
    if (!(wait instanceof Promise)) return Promise.resolve(wait);
    return withTimeout(wait, this.boundMs, () => commandWaitExceeded(what, this.boundMs));
  }
}
