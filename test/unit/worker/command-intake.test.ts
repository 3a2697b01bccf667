// What a command does, decided from the command as parsed, its partition, the order's record and how this replica
// drives it - plain values in, a decision out, no stand-ins for Kafka, Redis or the machine.
import { describe, expect, it } from 'vitest';
import { parseCommand, type OrderCommand } from '../../../src/contract/commands.ts';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import { commandContentHash, decide, type OrderHere } from '../../../src/worker/command-intake.ts';
import type { OrderActorEvent } from '../../../src/worker/machine-binding.ts';
import { createCommand, openRecord } from './host-fixtures.ts';

const create = createCommand;
const cancel = { type: 'order.cancel', command_id: 'c-2', order_id: 'o-1' };
const hint = {
  type: 'order.webhook_hint',
  command_id: 'c-3',
  order_id: 'o-1',
  unique_reference: 'REF1',
  received_at: '2026-11-22T06:00:00.000Z',
};
const deposit = {
  type: 'order.submit_deposit',
  command_id: 'c-4',
  order_id: 'o-1',
  tx_hash: '0x0123456789abcdef',
};
const abandon = { type: 'order.settle', command_id: 'c-5', order_id: 'o-1', resolution: 'abandon' };

const hashOf = (command: Record<string, unknown>): string =>
  commandContentHash(command as unknown as OrderCommand);

function record(overrides: Partial<OrderRecord> = {}): OrderRecord {
  return openRecord('o-1', 0, {
    create_hash: hashOf(create),
    commands: [['c-1', hashOf(create)]],
    unique_reference: null,
    machine: null,
    ...overrides,
  });
}

/** An order driven here whose machine is in `state` and accepts the events `accepts` allows. */
function driven(
  accepts: (event: OrderActorEvent) => boolean,
  depositTxHash: string | null = null,
): OrderHere {
  return {
    halted: false,
    actor: {
      can: accepts,
      status: () => ({
        state: '"awaiting_deposit"',
        terminal: false,
        uniqueReference: 'REF1',
        lastConfirmedAt: null,
        lastStatus: null,
        confirmedAt: null,
        depositTxHash,
      }),
    },
  };
}

/** Matches a message that contains `text`. */
const containing = (text: string): unknown => expect.stringContaining(text) as unknown;

const always = (): boolean => true;
const never = (): boolean => false;

interface Case {
  name: string;
  command: Record<string, unknown> | Buffer;
  partition?: number;
  /** Forwards the command went through, and the canonical partition of its order_id. */
  hops?: number;
  canonical?: number;
  record?: OrderRecord;
  here?: OrderHere;
  maxBytes?: number;
  expected: Record<string, unknown>;
}

const cases: Case[] = [
  { name: 'creates an order that does not exist', command: create, expected: { kind: 'create' } },
  {
    name: 'skips the same order.create again',
    command: create,
    record: record(),
    expected: { kind: 'skip', outcome: 'duplicate' },
  },
  {
    name: 'rejects an order.create with other content for an existing order',
    command: { ...create, deposit_amount: '2' },
    record: record(),
    expected: {
      kind: 'reject',
      rejection: { reason: 'order_exists', remember: ['c-1', expect.any(String)] },
    },
  },
  {
    name: 'skips a command it has already applied',
    command: cancel,
    record: record({ commands: [['c-2', hashOf(cancel)]] }),
    here: driven(always),
    expected: { kind: 'skip', outcome: 'duplicate' },
  },
  {
    name: 'rejects a command_id used again with other content',
    command: { ...cancel, command_id: 'c-1' },
    record: record(),
    here: driven(always),
    expected: { kind: 'reject', rejection: { reason: 'duplicate_conflict' } },
  },
  {
    name: 'rejects a command for an unknown order',
    command: cancel,
    expected: { kind: 'reject', orderId: 'o-1', rejection: { reason: 'unknown_order' } },
  },
  {
    name: 'consumes a webhook hint for an unknown order (one that left), with no rejection',
    command: hint,
    expected: { kind: 'skip', outcome: 'consumed' },
  },
  {
    name: 'rejects a command for a finished order',
    command: cancel,
    record: record({ terminal: true }),
    expected: {
      kind: 'reject',
      rejection: { reason: 'not_allowed', message: containing('is finished') },
    },
  },
  {
    name: 'rejects a command its machine does not allow now, naming the state',
    command: cancel,
    record: record(),
    here: driven(never),
    expected: {
      kind: 'reject',
      rejection: { reason: 'not_allowed', message: containing('"awaiting_deposit"') },
    },
  },
  {
    name: 'rejects a command too large to read, unread',
    command: Buffer.alloc(2_000, 'x'),
    maxBytes: 1_000,
    expected: { kind: 'reject', orderId: 'o-1', rejection: { reason: 'too_large', command_id: null } },
  },
  {
    name: "forwards a command that arrived on another partition than its order's to the order's",
    command: cancel,
    partition: 1,
    canonical: 1,
    record: record(),
    here: driven(always),
    expected: { kind: 'forward', orderId: 'o-1', partition: 0 },
  },
  {
    name: 'forwards a create of an order not known yet to the canonical partition of its order_id',
    command: create,
    partition: 1,
    canonical: 4,
    expected: { kind: 'forward', orderId: 'o-1', partition: 4 },
  },
  {
    name: 'creates on the canonical partition',
    command: create,
    partition: 4,
    canonical: 4,
    expected: { kind: 'create' },
  },
  {
    name: 'forwards a command of an unknown order to the canonical partition (its record may be on its way)',
    command: cancel,
    partition: 1,
    canonical: 4,
    expected: { kind: 'forward', partition: 4 },
  },
  {
    name: 'answers a command of an unknown order on the canonical partition as unknown_order',
    command: cancel,
    partition: 4,
    canonical: 4,
    expected: { kind: 'reject', rejection: { reason: 'unknown_order' } },
  },
  {
    name: 'handles a forwarded copy of an unknown order where it landed (never forwarded blindly again)',
    command: create,
    partition: 3,
    hops: 1,
    canonical: 4,
    expected: { kind: 'create' },
  },
  {
    name: "forwards a forwarded copy once more when its order's record names another partition",
    command: cancel,
    partition: 4,
    hops: 1,
    canonical: 4,
    record: record(),
    expected: { kind: 'forward', partition: 0 },
  },
  {
    name: 'refuses as unroutable a copy whose home is elsewhere after its last forward',
    command: cancel,
    partition: 4,
    hops: 2,
    canonical: 4,
    record: record(),
    expected: {
      kind: 'reject',
      rejection: { reason: 'unroutable', message: containing('lives on partition 0') },
    },
  },
  {
    name: 'consumes a webhook hint of an unknown order where it arrived (no forward)',
    command: hint,
    partition: 1,
    canonical: 4,
    expected: { kind: 'skip', outcome: 'consumed' },
  },
  {
    name: 'handles a command where it arrived while the partition count is unknown',
    command: cancel,
    partition: 1,
    expected: { kind: 'reject', rejection: { reason: 'unknown_order' } },
  },
  {
    name: 'delivers a command its machine accepts',
    command: cancel,
    record: record(),
    here: driven(always),
    expected: { kind: 'deliver', event: { type: 'CANCEL', at: 42 } },
  },
  {
    name: 'consumes a webhook hint for an order that cannot poll now',
    command: hint,
    record: record(),
    here: driven(never),
    expected: { kind: 'skip', outcome: 'consumed' },
  },
  {
    name: 'skips a deposit hash it has already accepted under another command_id',
    command: deposit,
    record: record(),
    here: driven(always, '0x0123456789abcdef'),
    expected: { kind: 'skip', outcome: 'duplicate' },
  },
  {
    name: "abandons a halted order on the operator's order.settle abandon",
    command: abandon,
    record: record(),
    here: { halted: true, actor: undefined },
    expected: { kind: 'abandon' },
  },
  {
    name: 'rejects anything else for a halted order',
    command: cancel,
    record: record(),
    here: { halted: true, actor: undefined },
    expected: {
      kind: 'reject',
      rejection: { reason: 'not_allowed', message: containing('halted') },
    },
  },
];

describe('command intake: decide()', () => {
  it.each(cases)(
    '$name',
    ({ command, partition, hops, canonical, record: existing, here, maxBytes, expected }) => {
      const value = Buffer.isBuffer(command) ? command : Buffer.from(JSON.stringify(command));
      const parsed = parseCommand(value, 'o-1', maxBytes === undefined ? {} : { maxBytes });
      const arrival = {
        partition: partition ?? 0,
        now: 42,
        ...(hops === undefined ? {} : { hops }),
        ...(canonical === undefined ? {} : { canonical }),
      };
      expect(decide(parsed, arrival, existing, here)).toMatchObject(expected);
    },
  );
});
