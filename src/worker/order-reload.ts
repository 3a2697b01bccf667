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
