// The one invariant checker of the fault suite: given what a run left behind (the events topic, the state topic,
// the sandbox's record of exchange orders and throttle refusals, and every log line, span and event text), it
// lists each broken promise with the order and the evidence. Pure: it reads a history, it never waits or asks.
// An empty list means every invariant held; the names below are what the fault report counts.
import type { PublishedEvent } from './kafka-helpers.ts';

export const invariantNames = [
  /** Every accepted command's order reaches exactly one terminal event, or ends parked. */
  'one_ending',
  /** Nothing but a command rejection follows a terminal event. */
  'nothing_after_terminal',
  /** seq per order is 1..n, no gap, no repeat, increasing in log order. */
  'seq_gapless',
  /** At most one exchange order per order_id (and no exchange order nobody asked for). */
  'one_exchange_order',
  /** No unique_reference is claimed by two order_ids. */
  'reference_not_shared',
  /** The state topic's last record of an order agrees with its events. */
  'state_agrees',
  /** No identical actionable quote request within the exchange's 15 s cooldown. */
  'quote_cooldown',
  /** Nothing was refused by the exchange's global throttle (2500/min per key). */
  'no_global_throttle',
  /** No secret in any log line, span or event. */
  'no_secret',
  /** Every accepted order.submit_deposit shows its tx_hash in the order's events (recorded, refused or lost, said). */
  'deposit_accounted',
] as const;
export type InvariantName = (typeof invariantNames)[number];

export const terminalTypes = ['order.completed', 'order.refunded', 'order.canceled', 'order.failed'] as const;
const terminal: ReadonlySet<string> = new Set(terminalTypes);
const parked = 'order.parked';

export interface Violation {
  invariant: InvariantName;
  orderId?: string;
  detail: string;
}

/** An order.create the test sent and expects the worker to accept (a valid command). */
export interface AcceptedOrder {
  orderId: string;
  create: Record<string, unknown>;
}

/** An order.submit_deposit the test sent: accepted unless a command.rejected names its command_id. */
export interface SubmittedDeposit {
  orderId: string;
  commandId: string;
  txHash: string;
}

/**
 * An exchange order as the sandbox recorded it (the v2 representation plus the mode of the key). Its amounts are
 * the ones the creating request gave when the sandbox recorded them (an exchange that rounds stores others).
 */
export interface ExchangeOrderRecord {
  uniqueReference: string;
  mode: string;
  depositCurrency: string;
  withdrawCurrency: string;
  withdrawAddress: string;
  depositAmount: string;
  withdrawAmount: string;
}

/** The latest record of an order on the state topic (highest fence, then rev). */
export interface StateRecordView {
  orderId: string;
  seq: number;
  terminal: boolean;
  uniqueReference: string | null;
}

export interface ThrottleRefusalRecord {
  rule: string;
  at: number;
  pair?: string;
  amount?: string;
}

export interface RunHistory {
  orders: AcceptedOrder[];
  /** Every event read (read_committed) from the events topic, in the order read. */
  events: PublishedEvent[];
  exchangeOrders: ExchangeOrderRecord[];
  /** Latest state records; omit to skip the state check. */
  states?: StateRecordView[];
  /** The sandbox's own refusals; omit to skip the throttle checks. */
  throttleRefusals?: ThrottleRefusalRecord[];
  /** Texts that must hold no secret: log files, serialised events. */
  texts?: { source: string; text: string }[];
  /** Spans the workers exported: their names, attributes and events must hold no secret either. */
  spans?: SpanView[];
  secrets?: string[];
  /** order.submit_deposit commands sent; omit to skip the deposit check. */
  deposits?: SubmittedDeposit[];
}

/** What of an exported span can carry text. */
export interface SpanView {
  name: string;
  attributes: Record<string, string | number | boolean>;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
}

/** A span as one text per span: its name, every attribute and every event with its attributes. */
function spanTexts(spans: SpanView[]): { source: string; text: string }[] {
  // The source names the span by its place, not its name: the name itself may be what holds the secret.
  return spans.map((span, index) => ({
    source: `span ${index + 1} of ${spans.length}`,
    text: [
      span.name,
      ...Object.entries(span.attributes).map(([key, value]) => `${key}=${String(value)}`),
      ...span.events.flatMap((event) => [
        event.name,
        ...Object.entries(event.attributes).map(([key, value]) => `${key}=${String(value)}`),
      ]),
    ].join('\n'),
  }));
}

/** What makes two orders indistinguishable on the exchange: mode, pair, withdraw address and the amount given. */
export function orderSignature(fields: {
  mode: string;
  depositCurrency: string;
  withdrawCurrency: string;
  withdrawAddress: string;
  amount: string;
}): string {
  return [
    fields.mode,
    fields.depositCurrency.toUpperCase(),
    fields.withdrawCurrency.toUpperCase(),
    fields.withdrawAddress.toLowerCase(),
    canonicalAmount(fields.amount),
  ].join('|');
}

/**
 * A decimal string in one spelling ("1.50" and "01.5" are "1.5"), exactly: amounts of 18 fractional digits must not
 * pass through a float (Number("1.000000000000000001") is 1). Anything else is left as it is.
 */
export function canonicalAmount(text: string): string {
  const match = /^(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (!match) return text;
  const whole = (match[1] ?? '0').replace(/^0+(?=\d)/, '');
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

function commandSignature(create: Record<string, unknown>, byDeposit: boolean): string {
  const text = (key: string): string => (typeof create[key] === 'string' ? create[key] : '');
  return orderSignature({
    mode: text('mode'),
    depositCurrency: text('deposit_currency'),
    withdrawCurrency: text('withdraw_currency'),
    withdrawAddress: text('withdraw_address'),
    amount: byDeposit ? text('deposit_amount') : text('withdraw_amount'),
  });
}

function exchangeSignature(order: ExchangeOrderRecord, byDeposit: boolean): string {
  return orderSignature({
    mode: order.mode,
    depositCurrency: order.depositCurrency,
    withdrawCurrency: order.withdrawCurrency,
    withdrawAddress: order.withdrawAddress,
    amount: byDeposit ? order.depositAmount : order.withdrawAmount,
  });
}

function describe(event: PublishedEvent): string {
  const extra = ['status', 'reason', 'unique_reference']
    .filter((k) => typeof event[k] === 'string')
    .map((k) => `${k}=${String(event[k])}`)
    .join(' ');
  return `#${event.seq} ${event.type}${extra ? ` ${extra}` : ''}`;
}

/** An order's events (seq > 0) in the order they were read. */
function byOrder(events: PublishedEvent[]): Map<string, PublishedEvent[]> {
  const map = new Map<string, PublishedEvent[]>();
  // A reader that re-reads after a rebalance sees the same record (partition, offset) twice: not the worker's doing.
  const seen = new Set<string>();
  for (const event of events) {
    if (event.order_id === null || event.seq <= 0) continue;
    const position = `${event.partition}:${event.offset}`;
    if (seen.has(position)) continue;
    seen.add(position);
    const list = map.get(event.order_id) ?? [];
    list.push(event);
    map.set(event.order_id, list);
  }
  return map;
}

function checkEndings(orders: AcceptedOrder[], histories: Map<string, PublishedEvent[]>): Violation[] {
  const violations: Violation[] = [];
  for (const { orderId } of orders) {
    const events = [...(histories.get(orderId) ?? [])].sort((a, b) => a.seq - b.seq);
    const terminals = events.filter((e) => terminal.has(e.type));
    const history = events.map(describe).join(', ') || 'no events';
    if (terminals.length > 1) {
      violations.push({
        invariant: 'one_ending',
        orderId,
        detail: `${terminals.length} terminal events: ${history}`,
      });
    } else if (terminals.length === 0) {
      const last = events.filter((e) => e.type !== 'command.rejected').at(-1);
      if (last?.type !== parked)
        violations.push({
          invariant: 'one_ending',
          orderId,
          detail: `no terminal or parked event: ${history}`,
        });
    }
    const first = terminals[0];
    if (first) {
      const after = events.filter((e) => e.seq > first.seq && e.type !== 'command.rejected');
      if (after.length > 0) {
        violations.push({
          invariant: 'nothing_after_terminal',
          orderId,
          detail: `after ${describe(first)}: ${after.map(describe).join(', ')}`,
        });
      }
    }
  }
  return violations;
}

function checkSeq(histories: Map<string, PublishedEvent[]>): Violation[] {
  const violations: Violation[] = [];
  for (const [orderId, events] of histories) {
    const problems: string[] = [];
    const sorted = events.map((e) => e.seq).sort((a, b) => a - b);
    sorted.forEach((seq, index) => {
      if (seq !== index + 1) problems.push(`position ${index + 1} holds seq ${seq}`);
    });
    // In the log (one partition per order) seq must only grow: a lower seq after a higher one is a rewrite.
    for (let i = 1; i < events.length; i++) {
      const before = events[i - 1]!;
      const now = events[i]!;
      if (now.partition === before.partition && now.seq <= before.seq)
        problems.push(`seq ${now.seq} read after seq ${before.seq}`);
    }
    if (problems.length > 0)
      violations.push({
        invariant: 'seq_gapless',
        orderId,
        detail: `${problems.slice(0, 5).join('; ')} (events: ${events.map(describe).join(', ')})`,
      });
  }
  return violations;
}

function checkExchangeOrders(
  orders: AcceptedOrder[],
  histories: Map<string, PublishedEvent[]>,
  exchangeOrders: ExchangeOrderRecord[],
): Violation[] {
  const violations: Violation[] = [];
  // Which references each order claims (order.created, adoption), and which orders claim each reference.
  const claimedBy = new Map<string, Set<string>>();
  for (const [orderId, events] of histories) {
    const references = new Set(
      events
        .filter((e) => e.type === 'order.created' && typeof e['unique_reference'] === 'string')
        .map((e) => e['unique_reference'] as string),
    );
    if (references.size > 1)
      violations.push({
        invariant: 'one_exchange_order',
        orderId,
        detail: `claims ${references.size} exchange orders: ${[...references].join(', ')}`,
      });
    for (const reference of references) {
      const owners = claimedBy.get(reference) ?? new Set<string>();
      owners.add(orderId);
      claimedBy.set(reference, owners);
    }
  }
  for (const [reference, owners] of claimedBy) {
    if (owners.size > 1)
      violations.push({
        invariant: 'reference_not_shared',
        detail: `${reference} is claimed by ${[...owners].join(', ')}`,
      });
  }
  // Exchange side: orders that look alike (siblings) may own as many exchange orders as there are of them, no more.
  const signatures = (byDeposit: boolean): Map<string, string[]> => {
    const map = new Map<string, string[]>();
    for (const { orderId, create } of orders) {
      if ((typeof create['deposit_amount'] === 'string') !== byDeposit) continue;
      const signature = commandSignature(create, byDeposit);
      map.set(signature, [...(map.get(signature) ?? []), orderId]);
    }
    return map;
  };
  const wanted = [signatures(true), signatures(false)] as const;
  const found = new Map<string, ExchangeOrderRecord[]>();
  for (const order of exchangeOrders) {
    const deposit = exchangeSignature(order, true);
    const withdraw = exchangeSignature(order, false);
    const signature = wanted[0].has(deposit) ? deposit : wanted[1].has(withdraw) ? withdraw : undefined;
    if (signature === undefined) {
      violations.push({
        invariant: 'one_exchange_order',
        detail: `exchange order ${order.uniqueReference} (${deposit}) matches no accepted order`,
      });
      continue;
    }
    found.set(signature, [...(found.get(signature) ?? []), order]);
  }
  for (const [signature, onExchange] of found) {
    const owners = wanted[0].get(signature) ?? wanted[1].get(signature) ?? [];
    if (onExchange.length > owners.length) {
      violations.push({
        invariant: 'one_exchange_order',
        ...(owners.length === 1 ? { orderId: owners[0]! } : {}),
        detail: `${onExchange.length} exchange orders (${onExchange.map((o) => o.uniqueReference).join(', ')}) for ${owners.length} order(s) ${owners.join(', ')} with signature ${signature}`,
      });
    }
  }
  return violations;
}

function checkStates(histories: Map<string, PublishedEvent[]>, states: StateRecordView[]): Violation[] {
  const violations: Violation[] = [];
  for (const state of states) {
    const events = histories.get(state.orderId) ?? [];
    const lastSeq = Math.max(0, ...events.map((e) => e.seq));
    const isTerminal = events.some((e) => terminal.has(e.type));
    const references = events
      .filter((e) => e.type === 'order.created')
      .map((e) => e['unique_reference'] as string | undefined);
    const problems: string[] = [];
    if (state.seq !== lastSeq) problems.push(`state seq ${state.seq}, last event seq ${lastSeq}`);
    if (state.terminal !== isTerminal)
      problems.push(`state terminal=${state.terminal}, events terminal=${isTerminal}`);
    if (references.length > 0 && state.uniqueReference !== references.at(-1))
      problems.push(`state reference ${state.uniqueReference}, events ${references.join(',')}`);
    if (problems.length > 0)
      violations.push({ invariant: 'state_agrees', orderId: state.orderId, detail: problems.join('; ') });
  }
  return violations;
}

function checkThrottles(refusals: ThrottleRefusalRecord[]): Violation[] {
  return refusals.flatMap((refusal): Violation[] => {
    const at = new Date(refusal.at).toISOString();
    if (refusal.rule === 'global')
      return [{ invariant: 'no_global_throttle', detail: `global throttle refused a request at ${at}` }];
    if (refusal.rule === 'actionable_cooldown')
      return [
        {
          invariant: 'quote_cooldown',
          detail: `identical actionable quote ${refusal.pair ?? '?'} ${refusal.amount ?? '?'} within the cooldown at ${at}`,
        },
      ];
    return [];
  });
}

function checkSecrets(texts: { source: string; text: string }[], secrets: string[]): Violation[] {
  const violations: Violation[] = [];
  for (const secret of secrets.filter((s) => s.length >= 6)) {
    for (const { source, text } of texts) {
      const at = text.indexOf(secret);
      if (at >= 0) {
        const line = text.slice(text.lastIndexOf('\n', at) + 1, at).slice(-120);
        // The secret itself is never repeated in the report: only where and what preceded it.
        violations.push({
          invariant: 'no_secret',
          detail: `a secret (${secret.length} chars, starts ${secret.slice(0, 2)}…) in ${source} after: ${line}`,
        });
      }
    }
  }
  return violations;
}

/** Hex transaction hashes are case-insensitive; the events say the hash somewhere (any field, any case). */
function checkDeposits(
  all: PublishedEvent[],
  histories: Map<string, PublishedEvent[]>,
  deposits: SubmittedDeposit[],
): Violation[] {
  const violations: Violation[] = [];
  // A rejection may carry seq 0 (not part of the order's history): look for it in every event read.
  const rejected = new Set(
    all.filter((e) => e.type === 'command.rejected').map((e) => String(e['command_id'])),
  );
  for (const deposit of deposits) {
    if (rejected.has(deposit.commandId)) continue;
    const events = histories.get(deposit.orderId) ?? [];
    const hash = deposit.txHash.toLowerCase();
    const told = events.some(
      (e) => e.type !== 'command.rejected' && JSON.stringify(e).toLowerCase().includes(hash),
    );
    if (!told)
      violations.push({
        invariant: 'deposit_accounted',
        orderId: deposit.orderId,
        detail: `order.submit_deposit ${deposit.commandId} (tx ${deposit.txHash.slice(0, 18)}…) was not rejected, but no event of the order names its hash: ${events.map(describe).join(', ') || 'no events'}`,
      });
  }
  return violations;
}

export function checkInvariants(history: RunHistory): Violation[] {
  const histories = byOrder(history.events);
  return [
    ...checkEndings(history.orders, histories),
    ...checkSeq(histories),
    ...checkExchangeOrders(history.orders, histories, history.exchangeOrders),
    ...(history.states ? checkStates(histories, history.states) : []),
    ...(history.throttleRefusals ? checkThrottles(history.throttleRefusals) : []),
    ...(history.texts && history.secrets ? checkSecrets(history.texts, history.secrets) : []),
    ...(history.spans && history.secrets ? checkSecrets(spanTexts(history.spans), history.secrets) : []),
    ...(history.deposits ? checkDeposits(history.events, histories, history.deposits) : []),
  ];
}

/** Which invariants a history was checked against (the throttle, state and secret checks need their inputs). */
export function checkedInvariants(history: RunHistory): InvariantName[] {
  return invariantNames.filter((name) => {
    if (name === 'state_agrees') return history.states !== undefined;
    if (name === 'quote_cooldown' || name === 'no_global_throttle')
      return history.throttleRefusals !== undefined;
    if (name === 'no_secret') return history.texts !== undefined && history.secrets !== undefined;
    if (name === 'deposit_accounted') return history.deposits !== undefined;
    return true;
  });
}

/** One line per violation, grouped by invariant; empty when none. */
export function formatViolations(violations: Violation[]): string {
  return violations.map((v) => `[${v.invariant}]${v.orderId ? ` ${v.orderId}:` : ''} ${v.detail}`).join('\n');
}
