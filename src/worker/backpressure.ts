// When the worker stops taking commands, when it holds new orders back, and when it takes them again. Two causes,
// each with its own hysteresis and its own remedy (docs/decisions/order-limit-holds-creates.md):
// - too many exchange calls in progress (the exchange is slow or the budget is spent): consumption pauses, every
//   command included, and resumes below 80 % of MAX_INFLIGHT_EXCHANGE_CALLS. This protects the exchange.
// - too many live orders (MAX_ACTIVE_ORDERS; orders at rest hold neither an actor nor a timer and do not count):
//   only an order.create is held back (its partition waits for room, in order, heartbeating), until below 90 % of
//   it; the commands of orders already here go on. Pausing everything for this cause once stopped the deposits of
//   the very orders that held the room, and the orders at rest kept a replica near its maximum paused for good.
export interface BackpressureLimits {
  maxActiveOrders: number;
  maxInflightExchangeCalls: number;
}

export interface BackpressureVerdict {
  /** Consumption pauses (the exchange is slow or its budget spent): no command is taken. */
  pauseConsumption: boolean;
  /** New orders wait (the replica holds its maximum of live orders): only an order.create is held back. */
  holdCreates: boolean;
}

export class Backpressure {
  readonly #limits: BackpressureLimits;
  #forOrders = false;
  #forCalls = false;

  constructor(limits: BackpressureLimits) {
    this.#limits = limits;
  }

  /** The verdict now, given the live orders (not those at rest) and the exchange calls in progress. */
  verdict(live: number, inflight: number): BackpressureVerdict {
    const { maxActiveOrders, maxInflightExchangeCalls } = this.#limits;
    if (live >= maxActiveOrders) this.#forOrders = true;
    else if (live < maxActiveOrders * 0.9) this.#forOrders = false;
    if (inflight >= maxInflightExchangeCalls) this.#forCalls = true;
    else if (inflight < Math.max(1, Math.floor(maxInflightExchangeCalls * 0.8))) this.#forCalls = false;
    return { pauseConsumption: this.#forCalls, holdCreates: this.#forOrders };
  }
}
