// When the worker stops taking commands and when it takes them again. Two causes, each with its own hysteresis:
// too many exchange calls in progress (the exchange is slow or the budget is spent: resume below 80 % of
// MAX_INFLIGHT_EXCHANGE_CALLS) and too many orders held (MAX_ACTIVE_ORDERS: resume below 90 % of it). A pause
// for one cause ends when that cause has eased, whatever the other's band: a replica holding between 90 % and
// 100 % of its maximum orders once stayed paused for good after any burst of calls, since its resting orders do
// not go away (measured: creation stopped at 45,090 of 50,000 orders).
export interface BackpressureLimits {
  maxActiveOrders: number;
  maxInflightExchangeCalls: number;
}

export class Backpressure {
  readonly #limits: BackpressureLimits;
  #forOrders = false;
  #forCalls = false;

  constructor(limits: BackpressureLimits) {
    this.#limits = limits;
  }

  /** Whether consumption should be paused now, given the orders held and the exchange calls in progress. */
  paused(active: number, inflight: number): boolean {
    const { maxActiveOrders, maxInflightExchangeCalls } = this.#limits;
    if (active >= maxActiveOrders) this.#forOrders = true;
    else if (active < maxActiveOrders * 0.9) this.#forOrders = false;
    if (inflight >= maxInflightExchangeCalls) this.#forCalls = true;
    else if (inflight < Math.max(1, Math.floor(maxInflightExchangeCalls * 0.8))) this.#forCalls = false;
    return this.#forOrders || this.#forCalls;
  }
}
