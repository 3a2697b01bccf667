// The published event contract stays backward compatible: an end event without unrecorded_deposit (every end before
// it existed, and every end whose deposits were recorded) is as valid as before; one with it carries its shape.
import { describe, expect, it } from 'vitest';
import { publishedEvent } from '../../../src/contract/events.ts';

const envelope = { event_id: 'o-1:3', order_id: 'o-1', seq: 3, occurred_at: '2026-01-01T00:31:00.000Z' };
const deposit = { tx_hash: '0xabc', state: 'unconfirmed', accepted_at: '2026-01-01T00:00:01.000Z' };

describe('published events: an unrecorded deposit on an end', () => {
  it('accepts every end with and without unrecorded_deposit', () => {
    const ends = [
      { type: 'order.completed', unique_reference: 'R', withdraw_transaction: '0xout' },
      { type: 'order.refunded', unique_reference: 'R', refund_transaction: '0xback' },
      { type: 'order.canceled', unique_reference: 'R', reason: 'exchange' },
      { type: 'order.failed', reason: 'abandoned_by_operator', code: 'operator_abandoned', message: 'm' },
    ];
    for (const end of ends) {
      expect(publishedEvent.safeParse({ ...envelope, ...end }).success, end.type).toBe(true);
      expect(
        publishedEvent.safeParse({ ...envelope, ...end, unrecorded_deposit: deposit }).success,
        end.type,
      ).toBe(true);
    }
  });

  it('refuses an unrecorded_deposit of another shape', () => {
    const canceled = { ...envelope, type: 'order.canceled', unique_reference: 'R', reason: 'exchange' };
    expect(
      publishedEvent.safeParse({ ...canceled, unrecorded_deposit: { ...deposit, state: 'lost' } }).success,
    ).toBe(false);
    expect(publishedEvent.safeParse({ ...canceled, unrecorded_deposit: { state: 'rejected' } }).success).toBe(
      false,
    );
  });
});
