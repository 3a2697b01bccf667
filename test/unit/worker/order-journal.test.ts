// The order journal: the next seq numbers and envelopes of an order's events, its next state record, one
// transaction with the command's offset, and the store told only of what was committed.
import { describe, expect, it } from 'vitest';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { OffsetToCommit, OutboundRecord } from '../../../src/kafka/transactional-writer.ts';
import { OrderJournal } from '../../../src/worker/order-journal.ts';
import { openRecord } from './host-fixtures.ts';
import { fakeEvent } from '../../support/fake-events.ts';

const previous: OrderRecord = openRecord('o-1', 2, {
  create_hash: 'h',
  commands: [
    ['c-0', 'h0'],
    ['c-1', 'h1'],
  ],
  unique_reference: null,
  machine: null,
});

function journal(committed: boolean) {
  const writes: Array<{ records: OutboundRecord[]; offsets: OffsetToCommit[] }> = [];
  const applied: OrderRecord[] = [];
  const subject = new OrderJournal({
    writer: {
      write: (records, offsets = []) => {
        writes.push({ records, offsets });
        return Promise.resolve(committed);
      },
    },
    store: { apply: (record) => void applied.push(record) },
    topics: { events: 'events', state: 'state' },
    now: () => Date.parse('2026-11-22T06:00:00.000Z'),
    maxRememberedCommands: 2,
  });
  return { subject, writes, applied };
}

const offset: OffsetToCommit = { topic: 'commands', partition: 2, offset: '17' };

describe('order journal', () => {
  it('numbers the events after the last seq and writes them with the next state record and the offset', async () => {
    const { subject, writes, applied } = journal(true);
    const { record, written } = subject.append({
      record: previous,
      fence: 2,
      events: [fakeEvent({ type: 'order.cancelled' }), fakeEvent({ type: 'order.failed', reason: 'x' })],
      command: ['c-2', 'h2'],
      changes: { terminal: true },
      offset,
      guard: () => true,
    });
    expect(await written).toBe(true);
    expect(record).toMatchObject({
      fence: 2,
      rev: 4,
      seq: 6,
      terminal: true,
      updated_at: '2026-11-22T06:00:00.000Z',
    });
    expect(record.commands).toEqual([
      ['c-1', 'h1'],
      ['c-2', 'h2'],
    ]);
    const [write] = writes;
    expect(write?.offsets).toEqual([offset]);
    expect(write?.records.map((r) => [r.topic, r.key])).toEqual([
      ['events', 'o-1'],
      ['events', 'o-1'],
      ['state', 'o-1'],
    ]);
    expect(write?.records.slice(0, 2).map((r) => JSON.parse(r.value) as unknown)).toMatchObject([
      { type: 'order.cancelled', event_id: 'o-1:5', order_id: 'o-1', seq: 5 },
      { type: 'order.failed', event_id: 'o-1:6', seq: 6 },
    ]);
    expect(write?.records[2]?.partition).toBe(2);
    expect(applied).toEqual([record]);
  });

  it('does not tell the store of a write the guard refused', async () => {
    const { subject, applied } = journal(false);
    const { written } = subject.append({ record: previous, fence: 1, events: [], guard: () => false });
    expect(await written).toBe(false);
    expect(applied).toEqual([]);
  });

  it('writes nothing on top of a record whose write failed, until a record built on a durable one commits', async () => {
    // A writer that decides at commit time, as the real one does: the first write fails, the others are checked then.
    const pending: Array<{ guard: () => boolean; settle: (outcome: 'fail' | 'commit') => void }> = [];
    const subject = new OrderJournal({
      writer: {
        write: (_records, _offsets, guard) =>
          new Promise<boolean>((resolve, reject) =>
            pending.push({
              guard: guard ?? (() => true),
              settle: (outcome) =>
                outcome === 'fail' ? reject(new Error('record too large')) : resolve(guard ? guard() : true),
            }),
          ),
      },
      store: { apply: () => {} },
      topics: { events: 'events', state: 'state' },
      now: () => 0,
    });
    const first = subject.append({
      record: previous,
      fence: 1,
      events: [fakeEvent({ type: 'a' })],
      guard: () => true,
    });
    // Queued on top of the first record before its write failed: its seq would follow an event never published.
    const second = subject.append({
      record: first.record,
      fence: 1,
      events: [fakeEvent({ type: 'b' })],
      guard: () => true,
    });
    pending[0]?.settle('fail');
    await expect(first.written).rejects.toThrow(/too large/);
    pending[1]?.settle('commit');
    expect(await second.written).toBe(false);
    // The order's next life starts again from its durable record: that is written, and the rule ends with it.
    const again = subject.append({
      record: previous,
      fence: 1,
      events: [fakeEvent({ type: 'a' })],
      guard: () => true,
    });
    pending[2]?.settle('commit');
    expect(await again.written).toBe(true);
    const later = subject.append({ record: again.record, fence: 1, events: [], guard: () => true });
    pending[3]?.settle('commit');
    expect(await later.written).toBe(true);
  });

  it('publishes an event outside any history with seq 0 and its own event_id', async () => {
    const { subject, writes } = journal(true);
    await subject.publishUnsequenced(
      null,
      fakeEvent({ type: 'command.rejected' }),
      'rejected:commands:2:17',
      offset,
    );
    expect(JSON.parse(writes[0]?.records[0]?.value ?? '{}')).toMatchObject({
      type: 'command.rejected',
      event_id: 'rejected:commands:2:17',
      order_id: null,
      seq: 0,
    });
    expect(writes[0]?.records[0]?.key).toBe('rejected:commands:2:17');
  });
});
