import { describe, expect, it } from 'vitest';
import {
  describeOrder,
  traceIdOf,
  type EventOnTopic,
  type StateRecord,
} from '../../../src/inspect/order-report.ts';

const now = Date.parse('2026-01-01T00:00:00Z');
const event = (seq: number, type: string, fields: Record<string, unknown> = {}): EventOnTopic => ({
  event: {
    type,
    event_id: `o-1:${seq}`,
    order_id: 'o-1',
    seq,
    occurred_at: new Date(now - 1000 * (10 - seq)).toISOString(),
    ...fields,
  },
  partition: 0,
  offset: String(seq),
  traceId: null,
});
const record = (machine: unknown, seq: number, terminal = false): StateRecord => ({
  order_id: 'o-1',
  partition: 0,
  fence: 2,
  rev: 7,
  seq,
  updated_at: new Date(now).toISOString(),
  mode: 'cefi',
  unique_reference: 'REF1',
  terminal,
  machine,
});

describe('describeOrder', () => {
  it('says an open order waits for the exchange and lists its next poll and payment-deadline check, soonest first', () => {
    const report = describeOrder({
      orderId: 'o-1',
      record: record(
        {
          resumeFrom: 'open',
          stateValue: { open: {} },
          context: {
            nextPollAt: now + 30_000,
            paymentDeadline: now + 5_000,
            paymentDeadlineChecked: false,
            lastStatus: 'INITIAL',
          },
        },
        1,
      ),
      events: [event(1, 'order.created', { unique_reference: 'REF1' })],
      lease: { holder: 'w1:1:abc', fence: 2, remainingMs: 9_000 },
      now,
    });
    expect(report.waitingFor).toMatch(/exchange to move the order/);
    expect(report.next.map((n) => [n.what, n.inMs])).toEqual([
      ['checks the payment deadline (an unpaid order lapses then)', 5_000],
      ['polls GET /orders/{ref}/', 30_000],
    ]);
    expect(report.exchangeStatus).toBe('INITIAL');
    expect(report.problems).toEqual([]);
  });

  it('recognises a parked order from its events, offers adopt and abandon, and nothing next', () => {
    const report = describeOrder({
      orderId: 'o-1',
      record: record({ resumeFrom: 'creating.verifying', stateValue: {}, context: { retryAt: now + 1 } }, 2),
      events: [
        event(1, 'order.quoted'),
        event(2, 'order.parked', { reason: 'create_outcome_unknown', attempts: 2, tried: ['a'] }),
      ],
      lease: null,
      now,
    });
    expect(report.outcome).toBe('order.parked');
    expect(report.waitingFor).toMatch(/an operator/);
    expect(report.next).toEqual([]);
    expect(report.parked?.actions.map((a) => a.command)).toEqual([
      expect.objectContaining({ type: 'order.settle', order_id: 'o-1', resolution: 'adopt' }),
      expect.objectContaining({ type: 'order.settle', order_id: 'o-1', resolution: 'abandon' }),
    ]);
    // An abandon after a refused adopt must not reuse the adopt's command_id (a duplicate_conflict).
    const ids = report.parked?.actions.map((a) => a.command['command_id']);
    expect(new Set(ids).size).toBe(2);
  });

  it("shows a parked order's next re-check, or that it stopped for good, and the reference its POST returned", () => {
    const parkedEvents = [event(1, 'order.parked', { reason: 'create_outcome_unknown', attempts: 1 })];
    const scheduled = describeOrder({
      orderId: 'o-1',
      record: record(
        {
          resumeFrom: 'creating.parked',
          stateValue: {},
          context: {
            retryAt: now + 600_000,
            parkedRechecks: 1,
            pendingIntent: { kind: 'create', reference: 'HELD', foreign: ['HELD'] },
          },
        },
        1,
      ),
      events: parkedEvents,
      lease: null,
      now,
    });
    expect(scheduled.parked?.recheck).toMatch(/^next at 2026-01-01T00:10:00.000Z \(1 made so far/);
    expect(scheduled.parked?.knownReference).toEqual({ uniqueReference: 'HELD', heldElsewhere: true });
    const stopped = describeOrder({
      orderId: 'o-1',
      record: record(
        {
          resumeFrom: 'creating.parked',
          stateValue: {},
          context: { retryAt: null, lookupUnreachableAt: now - 1_000, pendingIntent: { kind: 'create' } },
        },
        1,
      ),
      events: parkedEvents,
      lease: null,
      now,
    });
    expect(stopped.parked?.recheck).toMatch(/^stopped since .*can never finish.*order\.settle/);
    expect(stopped.parked?.knownReference).toBeNull();
  });

  it('is no longer parked once the order was settled (created or finished after order.parked)', () => {
    const report = describeOrder({
      orderId: 'o-1',
      record: null,
      events: [event(1, 'order.parked'), event(2, 'order.created'), event(3, 'order.completed')],
      lease: null,
      now,
    });
    expect(report.parked).toBeNull();
    expect(report.outcome).toBe('order.completed');
  });

  it('reports a gap in seq and a state record that disagrees with the events', () => {
    const report = describeOrder({
      orderId: 'o-1',
      record: record({ resumeFrom: 'open', stateValue: {}, context: {} }, 4),
      events: [event(1, 'order.created'), event(3, 'order.status_changed')],
      lease: 'unknown',
      now,
    });
    expect(report.problems).toEqual([
      "state record says seq 4, the events topic's last event of the order has seq 3",
      'event seq 3 where 2 was expected (gap or repeat)',
    ]);
  });
});

describe('describeOrder: an end that left a deposit unrecorded', () => {
  it('says so in the end event of the timeline', () => {
    const report = describeOrder({
      orderId: 'o-1',
      record: record({ resumeFrom: 'canceled', stateValue: 'canceled', context: {} }, 2, true),
      events: [
        event(1, 'order.created'),
        event(2, 'order.canceled', {
          unique_reference: 'REF1',
          reason: 'exchange',
          unrecorded_deposit: {
            tx_hash: '0xabc',
            state: 'unconfirmed',
            accepted_at: new Date(now).toISOString(),
          },
        }),
      ],
      lease: 'unknown',
      now,
    });
    expect(report.timeline.at(-1)?.summary).toBe(
      'reason exchange; deposit 0xabc NOT recorded at the exchange (unconfirmed)',
    );
  });
});

describe('traceIdOf', () => {
  it('reads the trace id of a W3C traceparent and refuses anything else', () => {
    expect(traceIdOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe(
      '4bf92f3577b34da6a3ce929d0e0e4736',
    );
    expect(traceIdOf('00-00000000000000000000000000000000-00f067aa0ba902b7-01')).toBeNull();
    expect(traceIdOf('garbage')).toBeNull();
    expect(traceIdOf(undefined)).toBeNull();
  });
});
