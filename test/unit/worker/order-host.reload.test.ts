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
import { hostOver, noMetrics, openOrderStatus, openRecord, withSuspend } from './host-fixtures.ts';

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
  options: Partial<Pick<OrderHostOptions, 'callsSettled' | 'commandPipelineDepth'>> = {},
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
  const writer = {
    write: (out: OutboundRecord[], offsets: OffsetToCommit[] = [], guard?: () => boolean) => {
      const outcome = outcomes.shift() ?? 'commit';
      if (outcome === 'fail')
        return Promise.reject(
          new WorkerError('kafka_record_too_large', 'a write exceeds the broker maximum message size'),
        );
      if (outcome === 'refuse' || (guard && !guard())) return Promise.resolve(false);
      committed.push({ records: out, offsets });
      return Promise.resolve(true);
    },
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
  /** A stand-in machine: its durable form is the list of events it took, so every event is a change to write. */
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
      durable: () => ({ taken: taken.map((event) => event.type) }),
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
  };
  const host = hostOver(
    { store, writer, leases, binding },
    {
      ...options,
      metrics: noMetrics,
      ...(options.commandPipelineDepth === undefined ? {} : { rewind: () => {} }),
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
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    expect(h.lives).toHaveLength(1);

    const reload = h.host.onLeaseLost('o-1');
    const command = h.send(cancel, 7);
    await ticks();
    // A POST of the stopped life may still be out: no second life of the order (no lease, no actor) beside it.
    expect(asked).toEqual([['o-1', callsSettleTimeoutOf(createOrderTimeoutMs)]]);
    expect(h.lives).toHaveLength(1);
    expect(h.acquires()).toBe(1);
    expect(h.host.adoptOrphans()).toBe(0);

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
