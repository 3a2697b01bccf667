// Pipelined commands (COMMAND_PIPELINE_DEPTH > 1): a partition's next command is handled while the last one's
// transaction commits, commands of one order still wait for each other's writes, and a refused write has its
// partition delivered again from its command. The writer here is a stand-in whose transactions commit when the test
// says; the offsets it is handed and the broker side are exercised in test/integration/transactional-writer.test.ts.
import { describe, expect, it } from 'vitest';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { OffsetToCommit, OutboundRecord } from '../../../src/kafka/transactional-writer.ts';
import type { MachineBinding, OrderActorHandle } from '../../../src/worker/machine-binding.ts';
import type { OrderLeases } from '../../../src/worker/ports.ts';
import { createCommand, hostOver, memoryStore, openOrderStatus, withSuspend } from './host-fixtures.ts';

interface PendingWrite {
  records: OutboundRecord[];
  offsets: OffsetToCommit[];
  guard: (() => boolean) | undefined;
  settle: (written: boolean) => void;
}

function pipelineHarness(depth: number) {
  const records = new Map<string, OrderRecord>();
  const pending: PendingWrite[] = [];
  const rewinds: Array<[number, string]> = [];
  const valid = new Set<string>();
  const writer = {
    write: (out: OutboundRecord[], offsets: OffsetToCommit[] = [], guard?: () => boolean) =>
      new Promise<boolean>((settle) => pending.push({ records: out, offsets, guard, settle })),
  };
  /** Commits the oldest queued transaction: written unless its guard refuses. */
  const commitNext = async (): Promise<PendingWrite> => {
    const next = pending.shift();
    if (!next) throw new Error('nothing queued');
    next.settle(next.guard ? next.guard() : true);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    return next;
  };
  const leases: OrderLeases = withSuspend({
    acquire: (orderId) => {
      valid.add(orderId);
      return Promise.resolve({ fence: 1 });
    },
    release: (orderId) => {
      valid.delete(orderId);
      return Promise.resolve();
    },
    isValid: (orderId) => valid.has(orderId),
  });

  const handle = (): OrderActorHandle => ({
    can: () => true,
    send: () => {},
    status: openOrderStatus,
    persisted: () => ({ fake: true }),
    stop: () => {},
  });
  const binding: MachineBinding = { create: handle, restore: handle, resting: () => null };
  const host = hostOver(
    { store: memoryStore(records), writer, leases, binding },
    { commandPipelineDepth: depth, rewind: (partition, offset) => void rewinds.push([partition, offset]) },
  );
  host.setAssignment([0]);
  let offset = 0;
  /** Sends a command; the returned flag turns true once its handling returned to the consumer. */
  const send = (value: Record<string, unknown>): { handled: () => boolean; done: Promise<void> } => {
    let handled = false;
    const done = host
      .handleMessage({
        topic: 'commands',
        partition: 0,
        offset: String(offset++),
        key: String(value['order_id']),
        value: Buffer.from(JSON.stringify(value)),
      })
      .then(() => void (handled = true));
    return { handled: () => handled, done };
  };
  /** Sends a command again at its offset (the consumer rewound the partition). */
  const sendAt = (at: number, value: Record<string, unknown>): { done: Promise<void> } => ({
    done: host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(at),
      key: String(value['order_id']),
      value: Buffer.from(JSON.stringify(value)),
    }),
  });
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  return { host, pending, commitNext, rewinds, valid, send, sendAt, settle, records };
}

const createOf = (n: number): Record<string, unknown> => ({
  ...createCommand,
  command_id: `c-${n}`,
  order_id: `o-${n}`,
  deposit_amount: String(n),
});

describe('pipelined commands', () => {
  it("handles a partition's next create while the last one's transaction commits, up to the pipeline depth", async () => {
    const h = pipelineHarness(2);
    const first = h.send(createOf(1));
    const second = h.send(createOf(2));
    await h.settle();
    // Both handled, neither committed: two writes in flight, each with its command's offset.
    expect(first.handled()).toBe(true);
    expect(second.handled()).toBe(true);
    expect(h.pending.map((w) => w.offsets.map((o) => o.offset))).toEqual([['0'], ['1']]);
    // A third waits for the oldest write: the depth bounds what is in flight.
    const third = h.send(createOf(3));
    await h.settle();
    expect(third.handled()).toBe(false);
    await h.commitNext();
    await third.done;
    expect(h.pending.map((w) => w.offsets.map((o) => o.offset))).toEqual([['1'], ['2']]);
    expect(h.rewinds).toEqual([]);
  });

  it('waits with a depth of 1 (or no rewind) for each write before the next command, as before', async () => {
    const h = pipelineHarness(1);
    const first = h.send(createOf(1));
    await h.settle();
    expect(first.handled()).toBe(false);
    await h.commitNext();
    await first.done;
  });

  it('decides a command of an order whose write is in flight only once that write is durable', async () => {
    const h = pipelineHarness(8);
    const created = h.send(createOf(1));
    await h.settle();
    expect(created.handled()).toBe(true);
    // The same order.create again (a redelivery): recognised only on the durable record, after its write.
    const again = h.send(createOf(1));
    await h.settle();
    expect(again.handled()).toBe(false);
    expect(h.pending).toHaveLength(1);
    await h.commitNext();
    await again.done;
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).toEqual(['c-1']);
    // The duplicate commits only its offset, after the create's.
    expect(h.pending.map((w) => [w.records.length, w.offsets.map((o) => o.offset)])).toEqual([[0, ['1']]]);
  });

  it('has the partition delivered again from a command whose write was refused (its order lost its lease)', async () => {
    const h = pipelineHarness(8);
    h.send(createOf(1));
    h.send(createOf(2));
    await h.settle();
    expect(h.pending).toHaveLength(2);
    // o-1's lease is lost before its transaction commits: its write is refused, o-2's is written.
    h.valid.delete('o-1');
    await h.commitNext();
    await h.commitNext();
    await h.settle();
    expect(h.rewinds).toEqual([[0, '0']]);
    expect(h.records.has('o-1')).toBe(false);
    expect(h.records.has('o-2')).toBe(true);
    // A cancel of o-1 that was already on its way (offset 2) is left undecided until the partition comes again:
    // decided now, it would be refused for an order that does not exist yet.
    const early = h.sendAt(2, { type: 'order.cancel', command_id: 'x-1', order_id: 'o-1' });
    await h.settle();
    await early.done;
    expect(h.pending).toEqual([]);
    // Delivered again at once (before any lease keeper reported the loss): o-1 is created this time, not taken
    // for a duplicate of its own unwritten command, and o-2 is recognised.
    const redelivered = h.sendAt(0, createOf(1));
    await h.settle();
    await redelivered.done;
    const again = h.sendAt(1, createOf(2));
    await h.settle();
    await again.done;
    expect(
      h.pending.map((w) => [w.records.some((r) => r.topic === 'state'), w.offsets.map((o) => o.offset)]),
    ).toEqual([
      [true, ['0']],
      [false, ['1']],
    ]);
    await h.commitNext();
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).toEqual(['c-1']);
  });

  it('refuses a command again when its remembered refusal was not written (its order lost its lease)', async () => {
    const h = pipelineHarness(8);
    h.send(createOf(1));
    await h.settle();
    await h.commitNext();
    // Another create for o-1: refused (order_exists) and remembered, but the lease is gone before the commit.
    const other = { ...createOf(1), command_id: 'c-other', deposit_amount: '9' };
    const refused = h.sendAt(1, other).done.then(
      () => 'handled',
      (error: { code?: string }) => error.code,
    );
    await h.settle();
    h.valid.delete('o-1');
    await h.commitNext();
    expect(await refused).toBe('command_not_committed');
    // Delivered again: refused again and published, not skipped as a duplicate of its own unwritten refusal (the
    // reloaded order's own first write goes first: the command waits for it, as for any write of its order).
    const again = h.sendAt(1, other);
    await h.settle();
    const types: unknown[] = [];
    while (h.pending.length) {
      const write = await h.commitNext();
      types.push(...write.records.map((r) => (JSON.parse(r.value ?? '{}') as { type?: unknown }).type));
      await h.settle();
    }
    await again.done;
    expect(types).toContain('command.rejected');
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).toEqual(['c-1', 'c-other']);
  });
});
