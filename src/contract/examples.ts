// One example of every message of the Kafka contract, as published in docs/asyncapi.json: one order's story (a CeFi
// order created, paid, completed; a DeFi quote; a parked order settled), with the headers each message carries. A
// test parses every example with its zod schema and validates it against its generated JSON Schema.
import { REJECTED_COMMAND_EXCERPT_BYTES } from './events.ts';

const order = 'ord-7f3a9c';
const reference = 'E2ZZ9TSD5T';
const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const at = (second: number): string => `2026-12-02T10:00:${String(second).padStart(2, '0')}.000Z`;

/** A message as the contract shows it: its headers and its payload (the value, JSON). */
export interface ContractExample {
  summary: string;
  headers: Record<string, string>;
  payload: Record<string, unknown>;
}

const command = (summary: string, payload: Record<string, unknown>): ContractExample => ({
  summary,
  headers: { traceparent },
  payload,
});

const event = (
  summary: string,
  seq: number,
  payload: { type: string } & Record<string, unknown>,
  commandId?: string,
): ContractExample => ({
  summary,
  headers: { 'event-type': payload.type, traceparent },
  payload: {
    ...payload,
    event_id: `${order}:${seq}`,
    order_id: order,
    seq,
    occurred_at: at(seq),
    ...(commandId === undefined ? {} : { command_id: commandId }),
  },
});

export const commandExamples: Record<string, ContractExample> = {
  'order.create': command('a CeFi swap of 0.1 BTC to ETH', {
    type: 'order.create',
    command_id: 'cmd-create-1',
    order_id: order,
    mode: 'cefi',
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    deposit_amount: '0.1',
    withdraw_address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    withdraw_network: 'ETH',
    refund_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
  }),
  'order.submit_deposit': command('the user broadcast the deposit', {
    type: 'order.submit_deposit',
    command_id: 'cmd-deposit-1',
    order_id: order,
    tx_hash: '7e3f0c1b2a4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7',
  }),
  'order.cancel': command('the user gave up before paying', {
    type: 'order.cancel',
    command_id: 'cmd-cancel-1',
    order_id: order,
  }),
  'order.webhook_hint': {
    summary: 'internal: a verified webhook routed to the replica that drives the order',
    headers: { traceparent },
    payload: {
      type: 'order.webhook_hint',
      command_id: 'hint-0b5c1f6e',
      order_id: order,
      unique_reference: reference,
      status: 'PAID',
      received_at: at(30),
    },
  },
  'order.settle': {
    summary:
      'an operator adopts the exchange order of a parked order, signed with an operator key (the signature shown is illustrative)',
    headers: {
      traceparent,
      'operator-key-id': 'alice',
      'operator-signed-at': at(40),
      'operator-signature':
        'm3QnVh0c1QJ3oM6kY2bq5F9yWz8xT4rL7uA1sD6gH0jK2lP5oI8uY3tR6eW9qZ4xC7vB1nM0aS2dF5gH8jK3lA==',
    },
    payload: {
      type: 'order.settle',
      command_id: 'settle-ord-7f3a9c-1',
      order_id: order,
      resolution: 'adopt',
      unique_reference: reference,
      note: 'found in the partner dashboard',
    },
  },
};

const excerpt = '{"type":"order.cancel","command_id":"cmd-cancel-2","order_id":"ord-7f3a9c"}';

export const eventExamples: Record<string, ContractExample> = {
  'order.quoted': event(
    'a fixed-rate quote taken for the order',
    1,
    {
      type: 'order.quoted',
      rate_id: 'c1d2e3f4-rate',
      rate: '18.4210',
      expires_at: at(59),
      deposit_amount: '0.1',
      withdraw_amount: '1.84210000',
    },
    'cmd-create-1',
  ),
  'order.created': event(
    'the exchange order exists: where the user pays',
    1,
    {
      type: 'order.created',
      unique_reference: reference,
      deposit_address: 'bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh',
      deposit_address_extra_id: '',
      deposit_amount: '0.1',
      withdraw_amount: '1.84210000',
      rate: '18.4210',
      deadline: at(59).replace('10:00', '10:30'),
      reused: false,
    },
    'cmd-create-1',
  ),
  'order.deposit_submitted': event(
    'the exchange recorded the deposit transaction',
    2,
    {
      type: 'order.deposit_submitted',
      tx_hash: '7e3f0c1b2a4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7',
      already_recorded: false,
    },
    'cmd-deposit-1',
  ),
  'order.deposit_rejected': event(
    'the exchange refused the hash for good',
    2,
    {
      type: 'order.deposit_rejected',
      tx_hash: '7e3f0c1b2a4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7',
      code: 'deposit_tx_invalid',
      message: 'Transaction hash is not valid for BTC.',
    },
    'cmd-deposit-1',
  ),
  'order.status_changed': event('a GET confirmed a new exchange status', 3, {
    type: 'order.status_changed',
    unique_reference: reference,
    status: 'PAID',
    previous_status: 'UNCONFIRMED PAYMENT',
  }),
  'order.completed': event('the exchange paid the user out', 5, {
    type: 'order.completed',
    unique_reference: reference,
    withdraw_transaction: '0x9b2f6c2d1e0a4b3c5d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c',
  }),
  'order.refunded': event('the exchange refunded the deposit', 5, {
    type: 'order.refunded',
    unique_reference: reference,
    refund_transaction: 'f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f',
  }),
  'order.canceled': event(
    'canceled by its order.cancel',
    2,
    { type: 'order.canceled', unique_reference: reference, reason: 'command' },
    'cmd-cancel-1',
  ),
  'order.parked': event(
    'the answer to POST /orders/ was lost and the scan could not settle it: alert',
    1,
    {
      type: 'order.parked',
      reason: 'create_outcome_unknown',
      mode: 'cefi',
      rate_id: null,
      window_from: at(0),
      window_to: at(40),
      attempts: 1,
      tried: ['POST /orders/ (timeout)', 'GET /orders/ scan of the window (503)'],
      code: 'exchange_unavailable',
      message: 'the exchange answered 503 Service Unavailable',
    },
    'cmd-create-1',
  ),
  'order.settle_refused': event(
    'the named exchange order is for another pair',
    2,
    {
      type: 'order.settle_refused',
      resolution: 'adopt',
      unique_reference: 'K8J2M4N6P0',
      code: 'adopt_mismatch',
      message: 'exchange order K8J2M4N6P0 is LTC -> ETH, the order is BTC -> ETH',
    },
    'settle-ord-7f3a9c-1',
  ),
  'order.operator_command': event(
    "an operator's order.settle accepted, with the key that signed it: its outcome follows",
    2,
    {
      type: 'order.operator_command',
      command_id: 'settle-ord-7f3a9c-1',
      command_type: 'order.settle',
      resolution: 'adopt',
      unique_reference: reference,
      note: 'found in the partner dashboard',
      operator: { key_id: 'alice', signed_at: at(40) },
    },
  ),
  'order.failed': event(
    'the exchange refused the withdraw address',
    1,
    {
      type: 'order.failed',
      reason: 'exchange_rejected',
      code: 'address_invalid',
      message: 'Invalid withdraw address.',
    },
    'cmd-create-1',
  ),
  'exchange.kyc_status_changed': {
    summary: 'a KYC webhook of the exchange, as received',
    headers: { 'event-type': 'exchange.kyc_status_changed' },
    payload: {
      type: 'exchange.kyc_status_changed',
      event_id: 'kyc:5f2b3c4d5e6f7a8b',
      order_id: order,
      seq: 0,
      occurred_at: at(45),
      unique_reference: reference,
      payload: { unique_reference: reference, kyc_status: 'PENDING' },
    },
  },
  'command.rejected': {
    summary: 'an order.cancel after the order was paid',
    headers: { 'event-type': 'command.rejected', traceparent },
    payload: {
      type: 'command.rejected',
      event_id: `${order}:4`,
      order_id: order,
      seq: 4,
      occurred_at: at(50),
      command_id: 'cmd-cancel-2',
      command_type: 'order.cancel',
      reason: 'not_allowed',
      message: 'order.cancel is not allowed while the order is in state {"open":{"deposit":"submitted"}}',
      command_excerpt: excerpt.slice(0, REJECTED_COMMAND_EXCERPT_BYTES),
      command_sha256: '0f8f4d7c2b9a1e3d5c7b9a1e3d5c7b9a1e3d5c7b9a1e3d5c7b9a1e3d5c7b9a1e',
      command_bytes: excerpt.length, // ASCII: one byte a character
      source: { topic: 'exchange.orders.commands', partition: 7, offset: '1042' },
      forwarded_from: { topic: 'exchange.orders.commands', partition: 2, offset: '977' },
    },
  },
};
