// What the order host waits for before another life of an order acts, and how long at most. An order's actor can
// be stopped while one of its exchange calls is out (its lease was lost, a write of it failed, its partition moved):
// stopping the actor does not recall a request that has left, since one that may have a side effect is not abandoned
// once sent (src/exchange/transport.ts). The next life of the order - restored here, or by another replica once the
// lease is let go - must not start a second such call beside it.
import { createOrderTimeoutMs } from '../exchange/client.ts';

/**
 * Time beyond a call's own timeout for its answer to be read and its promise chain to settle on a busy event loop:
 * the call's timer fires `timeout` after the request left, which is before the actor stopped.
 */
export const callsSettleMarginMs = 5_000;

/**
 * The longest an order's exchange call can still be out once its actor stopped: the longest call that may move
 * money (POST /orders/, `createTimeoutMs`) plus callsSettleMarginMs. A lease is released, and a reload acts, only once
 * the order's calls ended or this bound passed.
 */
export function callsSettleTimeoutOf(createTimeoutMs: number): number {
  return createTimeoutMs + callsSettleMarginMs;
}

/** The bound for the exchange client's own create timeout (createOrderTimeoutMs). */
export const defaultCallsSettleTimeoutMs = callsSettleTimeoutOf(createOrderTimeoutMs);

/** What the host does about an order's write that failed (not refused): load it again, or halt it. */
export type AfterFailedWrite = 'reload' | 'halt';

/**
 * Counts the writes of each order that failed in a row (a success forgets them). The first failure reloads the order
 * from its last durable record, so whatever the failed write carried (a command, a machine step) is applied again. A
 * second one before any write of the order succeeded is not transient (the broker refused the same record for its
 * size again, say): the order is halted (order.parked internal_error) instead of being reloaded in a loop. Only
 * orders whose writes failed are held here.
 */
export class WriteFailures {
  readonly #failed = new Map<string, number>();

  /** A write of the order failed: what to do about it. */
  failed(orderId: string): AfterFailedWrite {
    const count = (this.#failed.get(orderId) ?? 0) + 1;
    this.#failed.set(orderId, count);
    return count > 1 ? 'halt' : 'reload';
  }

  /** A write of the order committed (or the order left this replica): its failures are forgotten. */
  forget(orderId: string): void {
    if (this.#failed.size > 0) this.#failed.delete(orderId);
  }
}
