// The demo's orders: one per path an order can take, each with the command that starts it, how the demo drives
// the exchange sandbox afterwards (as the user and the exchange would), and the outcome it must reach. Every order
// has its own deposit amount, so its exchange order and exchange calls can be recognised on the exchange's side.
import { addresses } from '../../test/support/addresses.ts';

export type Drive = 'completed' | 'refunded' | 'none';

export interface Scenario {
  label: string;
  title: string;
  mode: 'defi' | 'cefi' | 'cefi_fixed';
  /** Deposit amount; unique per order. */
  amount: string;
  /** Fields of order.create beyond type, ids and mode; null = a bad command instead. */
  create: Record<string, unknown> | null;
  /** The sandbox schedule the demo sets once the exchange order exists. */
  drive: Drive;
  /** The user broadcasts a deposit (order.submit_deposit) once the order exists. */
  deposit?: boolean;
  /** POST /orders/ loses its answer once (the sandbox's lost_response fault): the creation is in doubt. */
  createInDoubt?: boolean;
  expect: { type: string; field?: [string, string] };
  /** Exchange orders this order must leave on the exchange. */
  exchangeOrders: 0 | 1;
}

const cefi = { deposit_currency: 'ETH', withdraw_currency: 'BTC', withdraw_address: addresses.btc };

export const scenarios: Scenario[] = [
  {
    label: 'in-doubt',
    title: 'CeFi order whose creation is in doubt (answer lost), settles',
    mode: 'cefi',
    amount: '1.6789',
    create: cefi,
    drive: 'completed',
    createInDoubt: true,
    expect: { type: 'order.completed' },
    exchangeOrders: 1,
  },
  {
    label: 'defi',
    title: 'DeFi order, deposit submitted, completed',
    mode: 'defi',
    amount: '101.7',
    create: { deposit_currency: 'USDT', withdraw_currency: 'ETH', withdraw_address: addresses.eth },
    drive: 'completed',
    deposit: true,
    expect: { type: 'order.completed' },
    exchangeOrders: 1,
  },
  {
    label: 'cefi-refund',
    title: 'CeFi order refunded by the exchange',
    mode: 'cefi',
    amount: '1.2345',
    create: cefi,
    drive: 'refunded',
    expect: { type: 'order.refunded' },
    exchangeOrders: 1,
  },
  {
    label: 'fixed',
    title: 'CeFi fixed-rate order, completed',
    mode: 'cefi_fixed',
    amount: '0.0123',
    create: { deposit_currency: 'BTC', withdraw_currency: 'ETH', withdraw_address: addresses.eth2 },
    drive: 'completed',
    expect: { type: 'order.completed' },
    exchangeOrders: 1,
  },
  {
    label: 'unpaid',
    title: 'CeFi order never paid: the payment window lapses',
    mode: 'cefi',
    amount: '1.3456',
    create: cefi,
    drive: 'none',
    expect: { type: 'order.canceled', field: ['reason', 'payment_window_lapsed'] },
    exchangeOrders: 1,
  },
  {
    label: 'limit',
    title: 'CeFi limit order (10 min), completed',
    mode: 'cefi',
    amount: '1.4567',
    create: { ...cefi, limit_order: { ttl_seconds: 600 } },
    drive: 'completed',
    expect: { type: 'order.completed' },
    exchangeOrders: 1,
  },
  {
    label: 'screened',
    title: 'CeFi order refused by compliance pre-screening',
    mode: 'cefi',
    amount: '1.5678',
    create: { ...cefi, pre_screening: { ip: '203.0.113.66' } },
    drive: 'none',
    expect: { type: 'order.failed', field: ['reason', 'compliance_rejected'] },
    exchangeOrders: 0,
  },
  {
    label: 'bad',
    title: 'a malformed order.create (no currencies, no amount)',
    mode: 'defi',
    amount: '0',
    create: null,
    drive: 'none',
    expect: { type: 'command.rejected', field: ['reason', 'malformed'] },
    exchangeOrders: 0,
  },
];

export function createCommandOf(scenario: Scenario, orderId: string): Record<string, unknown> {
  const base = {
    type: 'order.create',
    command_id: `${orderId}-create`,
    order_id: orderId,
    mode: scenario.mode,
  };
  return scenario.create === null ? base : { ...base, ...scenario.create, deposit_amount: scenario.amount };
}
