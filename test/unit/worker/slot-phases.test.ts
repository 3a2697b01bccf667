// The slot-phase model: each transition leaves the slot in one phase carrying only what that phase has, and a
// stopped slot still tells what it was (its last status is read after it stopped).
import { describe, expect, it } from 'vitest';
import type { OrderActorHandle } from '../../../src/worker/machine-binding.ts';
import {
  actorOf,
  isHalted,
  isOut,
  isStopped,
  newSlot,
  restOf,
  toCreating,
  toHalted,
  toLive,
  toResting,
  toStopped,
  toWaking,
  trailOf,
} from '../../../src/worker/runtime/slot-phases.ts';
import { openOrderStatus, openRecord } from './host-fixtures.ts';

const actor: OrderActorHandle = {
  can: () => true,
  send: () => {},
  status: openOrderStatus,
  persisted: () => ({}),
  stop: () => {},
};

const rest = { state: 'open', wakeAt: 5, pollDeferrableUntil: null, confirmedAt: null, leaseRenewedAt: 1 };

describe('slot phases', () => {
  it('creates, goes live, rests, wakes and lives again, each phase with only its own data', () => {
    const slot = newSlot(openRecord('o-1', 0, { trace_origin: undefined }), 2);
    expect(slot.phase.kind).toBe('loaded');
    expect(slot.record.fence).toBe(2);
    toCreating(slot, undefined);
    expect(actorOf(slot)).toBeUndefined();
    toCreating(slot, actor);
    expect(actorOf(slot)).toBe(actor);
    const trail = trailOf(slot);
    toLive(slot, actor);
    // The trail a slot traces with is carried from loaded through creating to live, the same object.
    expect(trailOf(slot)).toBe(trail);
    trailOf(slot)!.webhookAt = 3;
    trailOf(slot)!.hintLinks = [];
    const resting = toResting(slot, rest);
    expect(slot.phase).toBe(resting);
    expect(actorOf(slot)).toBeUndefined();
    expect(restOf(slot)?.wakeAt).toBe(5);
    // Nothing of a live actor stays with a resting slot: no actor, no trail, no write chain.
    expect(trailOf(slot)).toBeUndefined();
    expect(Object.keys(resting).sort()).toEqual([
      'confirmedAt',
      'kind',
      'leaseRenewedAt',
      'listedAt',
      'pollDeferrableUntil',
      'polling',
      'state',
      'wakeAt',
    ]);
    toWaking(slot);
    expect(restOf(slot)).toBeUndefined();
    expect(actorOf(slot)).toBeUndefined();
    // It wakes with the trail its record gives: no hint of before the rest.
    expect(trailOf(slot)).toEqual({ origin: undefined, webhookAt: undefined, hintLinks: undefined });
    toLive(slot, actor);
    expect(actorOf(slot)).toBe(actor);
  });

  it('wakes with the span context of the command that created the order, from its record', () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const slot = newSlot(openRecord('o-3', 0, { trace_origin: traceparent }), 1);
    expect(trailOf(slot)?.origin?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    toLive(slot, actor);
    toResting(slot, rest);
    toWaking(slot);
    expect(trailOf(slot)?.origin?.spanId).toBe('b7ad6b7169203331');
  });

  it('keeps what a stopped slot was, once, and counts a halted one out', () => {
    const slot = newSlot(openRecord('o-1', 0), 1);
    toHalted(slot);
    expect(isHalted(slot)).toBe(true);
    expect(isOut(slot)).toBe(true);
    toStopped(slot);
    toStopped(slot);
    expect(isStopped(slot)).toBe(true);
    expect(isHalted(slot)).toBe(true);
    const live = newSlot(openRecord('o-2', 0), 1);
    toLive(live, actor);
    toStopped(live);
    expect(actorOf(live)).toBe(actor);
    expect(isHalted(live)).toBe(false);
  });
});
