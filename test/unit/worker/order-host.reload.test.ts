// The order host's reloads, with its Kafka and Redis collaborators replaced by recording stand-ins: a reload (a lost
// lease, a write that failed) waits for the calls its order's previous life still has out before the next life may
// act, and a write that failed leaves nothing in memory ahead of Kafka, so its command, delivered again, is applied
// again instead of being skipped as a duplicate of itself.
import { describe, expect, it } from 'vitest';
import type { OrderRecord, OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type { OffsetToCommit, OutboundRecord } from '../../../src/kafka/transactional-writer.ts';
import { createOrderTimeoutMs } from '../../../src/exchange/client.ts';
import { WorkerError } from '../../../src/errors.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
  StartOrderOptions,
} from '../../../src/worker/machine-binding.ts';
import type { OrderHostOptions } from '../../../src/worker/order-host.ts';
import { callsSettleTimeoutOf } from '../../../src/worker/order-reload.ts';
import {
  createCommand,
  hostOver,
  noMetrics,
  openOrderStatus,
  openRecord,
  withSuspend,
} from './host-fixtures.ts';

/** What the stand-in writer does with the next write: commit it, refuse it (guard), or fail it (a broker error). */
type WriteOutcome = 'commit' | 'refuse' | 'fail';

interface Harness {
  host: ReturnType<typeof hostOver>;
  records: Map<string, OrderRecord>;
  /** Every write the writer committed: its records and offsets. */
  committed: Array<{ records: OutboundRecord[]; offsets: OffsetToCommit[] }>;
  /** Events the actors were sent, per life of the order (one list per actor started or restored). */
  lives: OrderActorEvent[][];
  /** The start options of each life (to make its machine change as a transition would). */
  starts: StartOrderOptions[];
  acquires: () => number;
  releases: () => number;
  send: (value: unknown, offset: number) => Promise<void>;
  /** Decides what the writer does with each next write (commit when none is queued). */
  outcomes: WriteOutcome[];
  writeFailures: string[];
}

function harness(
  options: Partial<Pick<OrderHostOptions, 'callsSettled' | 'commandPipelineDepth' | 'rewind'>> = {},
): Harness {
  const records = new Map<string, OrderRecord>();
  const committed: Harness['committed'] = [];
  const outcomes: WriteOutcome[] = [];
  const lives: OrderActorEvent[][] = [];
  const starts: StartOrderOptions[] = [];
  const writeFailures: string[] = [];
  let acquires = 0;
  let releases = 0;
  const store = {
    get: (id: string) => records.get(id),
    apply: (record: OrderRecord) => void records.set(record.order_id, record),
    recordsOfPartition: (partition: number) => [...records.values()].filter((r) => r.partition === partition),
    catchUp: () => Promise.resolve(),
    release: () => {},
    orderIdByReference: () => undefined,
  } as unknown as OrderStateStore;
  // Each write is decided a turn later, guard included, as the real writer commits after the writes queued with it.
  const writer = {
    write: (out: OutboundRecord[], offsets: OffsetToCommit[] = [], guard?: () => boolean) =>
      new Promise<boolean>((resolve, reject) =>
        setImmediate(() => {
          const outcome = outcomes.shift() ?? 'commit';
          if (outcome === 'fail')
            return reject(
              new WorkerError('kafka_record_too_large', 'a write exceeds the broker maximum message size'),
            );
          if (outcome === 'refuse' || (guard && !guard())) return resolve(false);
          committed.push({ records: out, offsets });
          resolve(true);
        }),
      ),
  };
  const leases = withSuspend({
    acquire: () => {
      acquires++;
      return Promise.resolve({ fence: acquires });
    },
    release: () => {
      releases++;
      return Promise.resolve();
    },
    isValid: () => true,
  });
  /** A stand-in machine: its persisted form is the list of events it took, so every event is a change to write. */
  const actor = (start: StartOrderOptions, taken: OrderActorEvent[]): OrderActorHandle => {
    lives.push(taken);
    starts.push(start);
    return {
      can: () => true,
      send: (event) => {
        taken.push(event);
        start.onChange([]);
      },
      status: openOrderStatus,
      persisted: () => ({ taken: taken.map((event) => event.type) }),
      stop: () => {},
    };
  };
  const binding: MachineBinding = {
    create: (_command, start) => actor(start, []),
    restore: (machine, start) => {
      const before = (machine as { taken?: string[] } | null)?.taken ?? [];
      return actor(
        start,
        before.map((type) => ({ type }) as OrderActorEvent),
      );
    },
    resting: () => null,
    // As the machine's binding: a change to the form already written is none (a restore writes nothing).
    unwritten: (written, next) => JSON.stringify(written) === JSON.stringify(next),
  };
  const host = hostOver(
    { store, writer, leases, binding },
    {
      ...options,
      metrics: { ...noMetrics, writeFailed: (outcome) => void writeFailures.push(outcome) },
    },
  );
  host.setAssignment([0]);
  const send = (value: unknown, offset: number) =>
    host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(offset),
      key: 'o-1',
      value: Buffer.from(JSON.stringify(value)),
    });
  return {
    host,
    records,
    committed,
    lives,
    starts,
    acquires: () => acquires,
    releases: () => releases,
    send,
    outcomes,
    writeFailures,
  };
}

/** Lets every queued continuation run (writes, reloads, their promise chains). */
async function ticks(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

const cancel = { type: 'order.cancel', command_id: 'c-cancel', order_id: 'o-1' };

describe('order host: a reload waits for the calls its order still has out', () => {
  it('reloads an order whose lease was lost only once its calls in flight ended, and its commands wait for that', async () => {
    const settle = Promise.withResolvers<void>();
    const asked: Array<[string, number]> = [];
    const h = harness({
      callsSettled: (orderId, timeoutMs) => {
        asked.push([orderId, timeoutMs]);
        return settle.promise;
      },
    });
    h.records.set('o-1', openRecord('o-1', 0, { machine: { taken: [] } }));
    await h.host.onAssignment([], [0]);
    expect(h.lives).toHaveLength(1);

    const reload = h.host.onLeaseLost('o-1');
    const command = h.send(cancel, 7);
    await ticks();
    // A POST of the stopped life may still be out: no second life of the order (no lease, no actor) beside it.
    expect(asked).toEqual([['o-1', callsSettleTimeoutOf(createOrderTimeoutMs)]]);
    expect(h.lives).toHaveLength(1);
    expect(h.acquires()).toBe(1);
    expect(h.host.takeUpOrphans()).toBe(0);

    settle.resolve();
    await reload;
    await command;
    expect(h.acquires()).toBe(2);
    expect(h.lives).toHaveLength(2);
    // The command waited for the reload and reached the order's new life.
    expect(h.lives[0]).toEqual([]);
    expect(h.lives[1]).toMatchObject([{ type: 'CANCEL' }]);
  });
});

/** The events of every committed write, in order. */
function events(h: Harness): Array<Record<string, unknown>> {
  return h.committed.flatMap(({ records }) =>
    records
      .filter((record) => record.topic === 'events')
      .map((record) => JSON.parse(record.value) as Record<string, unknown>),
  );
}

describe('order host: a write that failed leaves nothing in memory ahead of Kafka', () => {
  it('applies a command again, delivered again after its write failed, instead of skipping it as a duplicate of itself', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0, { machine: { taken: [] } }));
    await h.host.onAssignment([], [0]);
    await ticks();
    h.outcomes.push('fail');
    await expect(h.send(cancel, 7)).rejects.toThrow(/maximum message size/);
    expect(h.writeFailures).toEqual(['reloaded']);
    // Reloaded from its last durable record, under the lease it holds.
    expect(h.lives).toHaveLength(2);
    expect(h.acquires()).toBe(1);
    expect(h.records.get('o-1')?.commands).toEqual([['c-0', 'h']]);

    await h.send(cancel, 7);
    const durable = h.records.get('o-1');
    expect(durable?.commands.map(([id]) => id)).toEqual(['c-0', 'c-cancel']);
    expect(durable?.machine).toEqual({ taken: ['CANCEL'] });
    expect(durable?.rev).toBe(4);
    expect(h.committed.at(-1)?.offsets).toEqual([{ topic: 'commands', partition: 0, offset: '7' }]);
  });

  it('creates an order again whose first write failed, when its order.create is delivered again', async () => {
    const h = harness();
    h.outcomes.push('fail');
    await expect(h.send(createCommand, 3)).rejects.toThrow(/maximum message size/);
    // Nothing of it is durable: the order is let go of, its lease too.
    expect(h.host.activeOrders).toBe(0);
    expect(h.releases()).toBe(1);

    await h.send(createCommand, 3);
    expect(h.records.get('o-1')).toMatchObject({ rev: 1, commands: [['c-1', expect.any(String)]] });
    expect(h.committed.at(-1)?.offsets).toEqual([{ topic: 'commands', partition: 0, offset: '3' }]);
    expect(h.host.activeOrders).toBe(1);
  });

  it('has a pipelined partition delivered again from a command whose write failed, and applies it then', async () => {
    const rewinds: Array<[number, string]> = [];
    const h = harness({
      commandPipelineDepth: 4,
      rewind: (partition, offset) => void rewinds.push([partition, offset]),
    });
    h.records.set('o-1', openRecord('o-1', 0, { machine: { taken: [] } }));
    await h.host.onAssignment([], [0]);
    await ticks();
    h.outcomes.push('fail');
    await h.send(cancel, 7);
    await ticks();
    expect(rewinds).toEqual([[0, '7']]);
    await h.send(cancel, 7);
    await ticks();
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).toEqual(['c-0', 'c-cancel']);
    expect(h.committed.flatMap(({ offsets }) => offsets)).toEqual([
      { topic: 'commands', partition: 0, offset: '7' },
    ]);
  });

  it('halts an order whose write fails again after its reload, with its last durable state, and says so once', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0, { machine: { taken: [] } }));
    await h.host.onAssignment([], [0]);
    await ticks();
    h.outcomes.push('fail', 'fail');
    await expect(h.send(cancel, 7)).rejects.toThrow(/maximum message size/);
    await expect(h.send(cancel, 7)).rejects.toThrow(/maximum message size/);
    await ticks();
    expect(h.writeFailures).toEqual(['reloaded', 'halted']);
    expect(h.records.get('o-1')).toMatchObject({
      rev: 4,
      seq: 5,
      commands: [['c-0', 'h']],
      machine: { taken: [] },
      halted: { code: 'write_failed' },
    });
    expect(events(h)).toMatchObject([
      { type: 'order.parked', reason: 'internal_error', code: 'write_failed', seq: 5 },
    ]);
    // Delivered once more, the command is refused where the operator sees it: the order is halted.
    await h.send(cancel, 7);
    expect(events(h).map((event) => [event['type'], event['reason']])).toEqual([
      ['order.parked', 'internal_error'],
      ['command.rejected', 'not_allowed'],
    ]);
  });

  it("lets go of a finished order's lease when the write of a refusal for it failed", async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0, { terminal: true }));
    await h.host.onAssignment([], [0]);
    h.outcomes.push('fail');
    await expect(h.send(cancel, 7)).rejects.toThrow(/maximum message size/);
    // Kept, it would be renewed for ever, and every later command of the order would wait for it.
    expect([h.acquires(), h.releases()]).toEqual([1, 1]);
    await h.send(cancel, 7);
    expect(events(h)).toMatchObject([{ type: 'command.rejected', reason: 'not_allowed' }]);
    expect([h.acquires(), h.releases()]).toEqual([2, 2]);
  });
});
