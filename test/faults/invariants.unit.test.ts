// The invariant checker against crafted histories: a clean run passes, and each invariant fails on a history
// that breaks exactly it (so a green fault run means the checks ran, not that they cannot fail).
import { describe, expect, it } from 'vitest';
import {
  checkInvariants,
  checkedInvariants,
  formatViolations,
  invariantNames,
  type AcceptedOrder,
  type ExchangeOrderRecord,
  type RunHistory,
} from '../support/invariants.ts';
import type { PublishedEvent } from '../support/kafka-helpers.ts';

const address = '0x52908400098527886E0F7030069857D2E4169EE7';

function create(orderId: string, amount: string): AcceptedOrder {
  return {
    orderId,
    create: {
      type: 'order.create',
      command_id: `${orderId}-c`,
      order_id: orderId,
      mode: 'defi',
      deposit_currency: 'USDT',
      withdraw_currency: 'ETH',
      withdraw_address: address,
      deposit_amount: amount,
    },
  };
}

function exchangeOrder(reference: string, amount: string): ExchangeOrderRecord {
  return {
    uniqueReference: reference,
    mode: 'defi',
    depositCurrency: 'USDT',
    withdrawCurrency: 'ETH',
    // The exchange may answer the address in another case; it is the same address.
    withdrawAddress: address.toLowerCase(),
    depositAmount: `${amount}0000`,
    withdrawAmount: '0.05000000',
  };
}

let offset = 0;
function event(
  orderId: string,
  seq: number,
  type: string,
  fields: Record<string, unknown> = {},
): PublishedEvent {
  return {
    headers: {},
    type,
    event_id: `${orderId}:${seq}`,
    order_id: orderId,
    seq,
    occurred_at: '2026-11-23T00:00:00.000Z',
    partition: 0,
    offset: String(offset++),
    key: orderId,
    ...fields,
  };
}

function completed(orderId: string, reference: string): PublishedEvent[] {
  return [
    event(orderId, 1, 'order.quoted', { rate_id: `r-${orderId}` }),
    event(orderId, 2, 'order.created', { unique_reference: reference }),
    event(orderId, 3, 'order.status_changed', { unique_reference: reference, status: 'COMPLETED' }),
    event(orderId, 4, 'order.completed', { unique_reference: reference }),
  ];
}

function cleanRun(): RunHistory {
  return {
    orders: [create('a', '100.1'), create('b', '100.2')],
    events: [...completed('a', 'REFA'), ...completed('b', 'REFB')],
    exchangeOrders: [exchangeOrder('REFA', '100.1'), exchangeOrder('REFB', '100.2')],
    states: [
      { orderId: 'a', seq: 4, terminal: true, uniqueReference: 'REFA' },
      { orderId: 'b', seq: 4, terminal: true, uniqueReference: 'REFB' },
    ],
    throttleRefusals: [{ rule: 'same-chain', at: 0 }],
    texts: [{ source: 'log of w1', text: '{"msg":"order created","key":"fp:1234"}\n' }],
    secrets: ['sandbox-demo-defi-key'],
    deposits: [],
  };
}

function broken(history: RunHistory): string[] {
  return [...new Set(checkInvariants(history).map((v) => v.invariant))];
}

describe('invariant checker', () => {
  it('passes a clean run and says it checked every invariant', () => {
    const history = cleanRun();
    expect(formatViolations(checkInvariants(history))).toBe('');
    expect(checkedInvariants(history)).toEqual([...invariantNames]);
  });

  it('ignores a record read twice by the reader (same partition and offset)', () => {
    const history = cleanRun();
    history.events.push({ ...history.events[1]! });
    expect(checkInvariants(history)).toEqual([]);
  });

  it('accepts an order that ends parked, and one parked then settled by adoption', () => {
    const history = cleanRun();
    history.orders.push(create('p', '100.3'), create('s', '100.4'));
    history.events.push(
      event('p', 1, 'order.quoted'),
      event('p', 2, 'order.parked', { reason: 'create_outcome_unknown' }),
      event('s', 1, 'order.quoted'),
      event('s', 2, 'order.parked', { reason: 'create_outcome_unknown' }),
      event('s', 3, 'order.created', { unique_reference: 'REFS' }),
      event('s', 4, 'order.completed', { unique_reference: 'REFS' }),
    );
    history.exchangeOrders.push(exchangeOrder('REFS', '100.4'));
    delete history.states;
    expect(checkInvariants(history)).toEqual([]);
  });

  it('one_ending: an order with no ending, and one with two terminal events', () => {
    const history = cleanRun();
    history.events = history.events.filter((e) => !(e.order_id === 'a' && e.seq === 4));
    history.events.push(event('b', 5, 'order.failed', { reason: 'x' }));
    delete history.states;
    const violations = checkInvariants(history).filter((v) => v.invariant === 'one_ending');
    expect(violations.map((v) => v.orderId).sort()).toEqual(['a', 'b']);
    expect(violations.find((v) => v.orderId === 'a')?.detail).toContain('no terminal or parked event');
    expect(violations.find((v) => v.orderId === 'b')?.detail).toContain('2 terminal events');
  });

  it('nothing_after_terminal: a status change after completion, while a later rejection is allowed', () => {
    const history = cleanRun();
    history.events.push(
      event('a', 5, 'command.rejected', { reason: 'not_allowed' }),
      event('b', 5, 'order.status_changed', { status: 'REFUNDED' }),
    );
    delete history.states;
    expect(broken(history)).toEqual(['nothing_after_terminal']);
    expect(checkInvariants(history)[0]?.orderId).toBe('b');
  });

  it('seq_gapless: a gap, a repeat, and a lower seq read after a higher one', () => {
    for (const mutate of [
      (events: PublishedEvent[]) => events.filter((e) => !(e.order_id === 'a' && e.seq === 2)),
      (events: PublishedEvent[]) => [...events, { ...events[1]!, offset: '999' }],
      (events: PublishedEvent[]) => {
        const copy = [...events];
        [copy[0], copy[1]] = [copy[1]!, copy[0]!];
        return copy;
      },
    ]) {
      const history = cleanRun();
      history.events = mutate(history.events);
      delete history.states;
      expect(broken(history)).toContain('seq_gapless');
    }
  });

  it('one_exchange_order: a second exchange order for one order_id, and one nobody asked for', () => {
    const history = cleanRun();
    history.exchangeOrders.push(exchangeOrder('REFA2', '100.1'));
    expect(broken(history)).toEqual(['one_exchange_order']);
    expect(checkInvariants(history)[0]?.orderId).toBe('a');

    const stray = cleanRun();
    stray.exchangeOrders.push(exchangeOrder('STRAY', '999'));
    expect(formatViolations(checkInvariants(stray))).toContain('STRAY');
  });

  it('one_exchange_order: an order that claims two references', () => {
    const history = cleanRun();
    history.events = [
      event('a', 1, 'order.quoted'),
      event('a', 2, 'order.created', { unique_reference: 'REFA' }),
      event('a', 3, 'order.created', { unique_reference: 'REFA2' }),
      event('a', 4, 'order.completed', { unique_reference: 'REFA2' }),
      ...completed('b', 'REFB'),
    ];
    history.exchangeOrders.push(exchangeOrder('REFA2', '100.1'));
    delete history.states;
    expect(broken(history)).toEqual(['one_exchange_order']);
  });

  it('siblings: two identical orders may own two exchange orders, not three', () => {
    const history = cleanRun();
    history.orders = [create('a', '100.1'), create('b', '100.1')];
    history.exchangeOrders = [exchangeOrder('REFA', '100.1'), exchangeOrder('REFB', '100.1')];
    expect(checkInvariants(history)).toEqual([]);
    history.exchangeOrders.push(exchangeOrder('REFC', '100.1'));
    expect(broken(history)).toEqual(['one_exchange_order']);
  });

  it('one_exchange_order: 18-decimal amounts are told apart exactly, never through a float', () => {
    const history = cleanRun();
    const [x1, x2] = ['100.000000000000000001', '100.000000000000000002'];
    history.orders = [create('a', x1), create('b', x2)];
    // Two exchange orders made from a's request, none from b's: as floats both amounts are 100, and the pair
    // would pass as two siblings owning two.
    history.exchangeOrders = [exchangeOrder('REFA', x1), exchangeOrder('REFB', x1)];
    delete history.states;
    expect(broken(history)).toEqual(['one_exchange_order']);
    expect(checkInvariants(history)[0]?.orderId).toBe('a');
  });

  it('deposit_accounted: an accepted deposit whose hash no event of the order names', () => {
    const hash = '0xABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789';
    const history = cleanRun();
    history.deposits = [
      { orderId: 'a', commandId: 'a-dep', txHash: hash },
      { orderId: 'b', commandId: 'b-dep', txHash: `${hash.slice(0, -4)}ffff` },
    ];
    expect(broken(history)).toEqual(['deposit_accounted']);
    expect(checkInvariants(history).map((v) => v.orderId)).toEqual(['a', 'b']);

    // Named by an order.deposit_submitted (in another case), or by any later event (a terminal event that says the
    // deposit was never recorded at the exchange, whatever its field is called): accounted for.
    const told = cleanRun();
    told.deposits = history.deposits;
    told.events = [
      ...completed('a', 'REFA').slice(0, 2),
      event('a', 3, 'order.deposit_submitted', { tx_hash: hash.toLowerCase(), already_recorded: false }),
      event('a', 4, 'order.status_changed', { unique_reference: 'REFA', status: 'COMPLETED' }),
      event('a', 5, 'order.completed', { unique_reference: 'REFA' }),
      ...completed('b', 'REFB').slice(0, 3),
      event('b', 4, 'order.canceled', { reason: 'exchange', unrecorded_deposit: `${hash.slice(0, -4)}ffff` }),
    ];
    delete told.states;
    expect(checkInvariants(told)).toEqual([]);

    // Refused by a command.rejected naming the command (even with seq 0): not accepted, nothing to account for.
    const refused = cleanRun();
    refused.deposits = [{ orderId: 'a', commandId: 'a-dep', txHash: hash }];
    refused.events.push({ ...event('a', 0, 'command.rejected'), command_id: 'a-dep' });
    expect(checkInvariants(refused)).toEqual([]);
    // A rejection of another command does not excuse it.
    refused.events.push({ ...event('a', 0, 'command.rejected'), command_id: 'a-other' });
    refused.deposits.push({ orderId: 'a', commandId: 'a-dep2', txHash: `${hash.slice(0, -2)}99` });
    expect(broken(refused)).toEqual(['deposit_accounted']);
  });

  it('reference_not_shared: a sibling adopting the other order exchange order', () => {
    const history = cleanRun();
    history.orders = [create('a', '100.1'), create('b', '100.1')];
    history.events = [...completed('a', 'REFA'), ...completed('b', 'REFA')];
    history.exchangeOrders = [exchangeOrder('REFA', '100.1')];
    delete history.states;
    expect(broken(history)).toEqual(['reference_not_shared']);
  });

  it('state_agrees: a state record behind its events, or not terminal', () => {
    const history = cleanRun();
    history.states = [
      { orderId: 'a', seq: 3, terminal: true, uniqueReference: 'REFA' },
      { orderId: 'b', seq: 4, terminal: false, uniqueReference: 'REFB' },
    ];
    const violations = checkInvariants(history);
    expect(violations.map((v) => [v.invariant, v.orderId])).toEqual([
      ['state_agrees', 'a'],
      ['state_agrees', 'b'],
    ]);
  });

  it('quote_cooldown and no_global_throttle: the sandbox refused under its own limits', () => {
    const history = cleanRun();
    history.throttleRefusals = [
      { rule: 'actionable_cooldown', at: 0, pair: 'ETHUSDT', amount: '100.1' },
      { rule: 'global', at: 1 },
    ];
    expect(broken(history)).toEqual(['quote_cooldown', 'no_global_throttle']);
  });

  it('no_secret: a key in a log line is reported without repeating it', () => {
    const history = cleanRun();
    history.texts!.push({
      source: 'log of w2',
      text: 'line one\n{"authorization":"ApiKey sandbox-demo-defi-key"}',
    });
    const violations = checkInvariants(history);
    expect(violations.map((v) => v.invariant)).toEqual(['no_secret']);
    expect(violations[0]?.detail).toContain('log of w2');
    expect(formatViolations(violations)).not.toContain('sandbox-demo-defi-key');
  });

  it('no_secret: a key in an exported span (name, attribute or span event) is reported without repeating it', () => {
    const quiet = { name: 'POST /orders/', attributes: { 'http.response.status_code': 201 }, events: [] };
    const history = { ...cleanRun(), spans: [quiet] };
    expect(checkInvariants(history)).toEqual([]);
    for (const leaky of [
      { ...quiet, attributes: { 'http.request.header.x-api-key': 'sandbox-demo-defi-key' } },
      {
        ...quiet,
        events: [{ name: 'exception', attributes: { 'exception.message': 'key sandbox-demo-defi-key' } }],
      },
      { ...quiet, name: 'GET /rate/?token=sandbox-demo-defi-key' },
    ]) {
      const violations = checkInvariants({ ...cleanRun(), spans: [quiet, leaky] });
      expect(violations.map((v) => v.invariant)).toEqual(['no_secret']);
      expect(violations[0]?.detail).toContain('span ');
      expect(formatViolations(violations)).not.toContain('sandbox-demo-defi-key');
    }
  });
});
