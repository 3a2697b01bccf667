// Every event caused by a command carries that command's command_id: the host remembers the commands it accepted
// and not answered yet (contract/command-answers.ts) with the order's record, stamps the events that answer them as
// the machine emits them - at once or after an exchange call, or after a restore on another replica - and leaves
// events no command caused (a status the exchange moved to) without one.
import { describe, expect, it } from 'vitest';
import { answerOf, opened } from '../../../src/contract/command-answers.ts';
import { publishedEvent } from '../../../src/contract/events.ts';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import type {
  EmittedDomainEvent,
  MachineBinding,
  OrderActorHandle,
  StartOrderOptions,
} from '../../../src/worker/machine-binding.ts';
import { createCommand, hostOver, memoryStore, withSuspend } from './host-fixtures.ts';

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A host whose actor emits what the test tells it to, when it tells it to (`emit`). */
function harness(records = new Map<string, OrderRecord>()) {
  const written: OutboundRecord[] = [];
  const writer = {
    write: (out: OutboundRecord[]) => {
      written.push(...out);
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  let started: StartOrderOptions | undefined;
  let terminal = false;
  const actor = (start: StartOrderOptions): OrderActorHandle => {
    started = start;
    start.onChange([]);
    return {
      can: () => true,
      send: () => start.onChange([]),
      status: () => ({
        state: '"open"',
        terminal,
        uniqueReference: 'REF',
        lastConfirmedAt: null,
        lastStatus: null,
        confirmedAt: null,
        depositTxHash: null,
      }),
      persisted: () => ({ fake: true }),
      stop: () => {},
    };
  };
  const binding: MachineBinding = {
    create: (_command, start) => actor(start),
    restore: (_persisted, start) => actor(start),
    resting: () => null,
  };
  const leases = withSuspend({
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  });
  const host = hostOver({ store: memoryStore(records), writer, leases, binding });
  host.setAssignment([0]);
  let offset = 0;
  const send = (value: Record<string, unknown>) =>
    host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(offset++),
      key: 'o-1',
      value: Buffer.from(JSON.stringify(value)),
    });
  /** The machine emits these events now (as a later step of its own: a call answered, a poll, a timer). */
  const emit = async (events: EmittedDomainEvent[], finished = false) => {
    terminal = finished;
    started?.onChange(events);
    await settle();
  };
  const events = () =>
    written.filter((r) => r.topic === 'events').map((r) => JSON.parse(r.value) as Record<string, unknown>);
  return { host, send, emit, events, records };
}

const quoted = {
  type: 'order.quoted',
  rate_id: 'r',
  rate: '1',
  expires_at: '2026-12-02T00:00:00.000Z',
} satisfies EmittedDomainEvent;
const created = {
  type: 'order.created',
  unique_reference: 'REF',
  deposit_address: 'a',
  deposit_address_extra_id: '',
  deposit_amount: '1',
  withdraw_amount: '2',
  rate: '2',
  deadline: null,
  reused: false,
} satisfies EmittedDomainEvent;
const statusChanged = {
  type: 'order.status_changed',
  unique_reference: 'REF',
  status: 'PAID',
  previous_status: null,
} satisfies EmittedDomainEvent;
const depositSubmitted = {
  type: 'order.deposit_submitted',
  tx_hash: '0x0123456789abcdef',
  already_recorded: false,
} satisfies EmittedDomainEvent;
const deposit = {
  type: 'order.submit_deposit',
  command_id: 'c-dep',
  order_id: 'o-1',
  tx_hash: '0x0123456789abcdef',
};

describe('events answer their commands', () => {
  it('stamps the events that answer a command with its command_id, and no other', async () => {
    const h = harness();
    await h.send(createCommand);
    await h.emit([quoted]);
    await h.emit([created]);
    await h.emit([statusChanged]);
    await h.send(deposit);
    await h.emit([depositSubmitted]);
    await h.emit([{ ...statusChanged, status: 'COMPLETED', previous_status: 'PAID' }]);
    expect(h.events().map((e) => [e['type'], e['command_id']])).toEqual([
      ['order.quoted', 'c-1'],
      ['order.created', 'c-1'],
      ['order.status_changed', undefined],
      ['order.deposit_submitted', 'c-dep'],
      ['order.status_changed', undefined],
    ]);
    for (const event of h.events()) expect(publishedEvent.parse(event)).toMatchObject(event);
  });

  it('remembers an unanswered command in the record, and a restored order still answers it', async () => {
    const first = harness();
    await first.send(createCommand);
    await first.emit([created]);
    await first.send(deposit);
    const record = first.records.get('o-1')!;
    expect(record.answering).toEqual([['order.submit_deposit', 'c-dep']]);

    // Another replica restores the order from that record; the PATCH it repeats is answered there.
    const second = harness(new Map([['o-1', record]]));
    await second.host.onAssignment([], [0]);
    await settle();
    await second.emit([depositSubmitted]);
    expect(second.events()).toMatchObject([{ type: 'order.deposit_submitted', command_id: 'c-dep' }]);
    expect(second.records.get('o-1')?.answering).toBeUndefined();
  });

  it('forgets what a finished order was asked: nothing is answered after its end', async () => {
    const h = harness();
    await h.send(createCommand);
    await h.emit([{ type: 'order.canceled', unique_reference: null, reason: 'exchange' }], true);
    expect(h.records.get('o-1')?.answering).toBeUndefined();
    expect(h.events()).toMatchObject([{ type: 'order.canceled' }]);
    expect(h.events()[0]).not.toHaveProperty('command_id');
  });
});

describe('command answers', () => {
  it('answers the latest open command that lists the event, and closes those it ends', () => {
    const open = opened(opened([], 'order.create', 'c-1'), 'order.settle', 's-1');
    expect(answerOf(open, 'order.parked')).toEqual({ commandId: 'c-1', open });
    // The adopted exchange order answers the settle, and ends the create too.
    expect(answerOf(open, 'order.created')).toEqual({ commandId: 's-1', open: [] });
    expect(answerOf(open, 'order.settle_refused')).toEqual({
      commandId: 's-1',
      open: [['order.create', 'c-1']],
    });
    expect(answerOf(open, 'order.status_changed')).toEqual({ commandId: undefined, open });
  });

  it('keeps one open command per type (the latest), and never opens a webhook hint', () => {
    expect(opened(opened([], 'order.submit_deposit', 'd-1'), 'order.submit_deposit', 'd-2')).toEqual([
      ['order.submit_deposit', 'd-2'],
    ]);
    expect(opened([], 'order.webhook_hint', 'h-1')).toEqual([]);
  });
});
