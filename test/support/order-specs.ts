// Ready-made order.create commands for tests and benchmarks: one valid shape per trading mode against the
// sandbox's demo world, with amounts made unique per order (each order is then recognisable on the exchange, and no
// two share an actionable-quote cooldown).
import { addresses } from './addresses.ts';

export const modeSpecs = [
  {
    mode: 'defi',
    deposit_currency: 'USDT',
    withdraw_currency: 'ETH',
    withdraw_address: addresses.eth,
    base: 100,
  },
  {
    mode: 'cefi',
    deposit_currency: 'ETH',
    withdraw_currency: 'BTC',
    withdraw_address: addresses.btc,
    base: 1,
  },
  {
    mode: 'cefi_fixed',
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    withdraw_address: addresses.eth2,
    base: 0.01,
  },
] as const;

export interface PlannedOrder {
  orderId: string;
  amount: string;
  command: Record<string, unknown>;
}

/** `count` orders cycling through the three modes; `variant` keeps amounts of different runs apart. */
export function planOrders(
  count: number,
  opts: { variant: number; orderId: (index: number) => string },
): PlannedOrder[] {
  return Array.from({ length: count }, (_, i) => {
    const { base, ...fields } = modeSpecs[i % modeSpecs.length] ?? modeSpecs[0];
    const orderId = opts.orderId(i);
    const amount = (base * (1 + opts.variant / 100) + i / 1000).toFixed(6);
    return {
      orderId,
      amount,
      command: {
        type: 'order.create',
        command_id: `${orderId}-create`,
        order_id: orderId,
        ...fields,
        deposit_amount: amount,
      },
    };
  });
}

/** One order.create command of the given mode and deposit amount, for an order of its own. */
export function orderCreateCommand(
  mode: (typeof modeSpecs)[number]['mode'],
  amount: string,
  orderId: string,
): Record<string, unknown> {
  const spec = modeSpecs.find((s) => s.mode === mode) ?? modeSpecs[0];
  const { base: _base, ...fields } = spec;
  return {
    type: 'order.create',
    command_id: `${orderId}-c`,
    order_id: orderId,
    ...fields,
    deposit_amount: amount,
  };
}
