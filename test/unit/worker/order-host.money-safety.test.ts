// The host's share of money safety, with its Kafka and Redis collaborators replaced by recording stand-ins:
// no exchange call on an unwritten intent, a writer that failed for good stops every actor, a conflicting
// create that differs only in a nested field is not a duplicate, an actor that breaks parks its order visibly.
import { describe, expect, it, vi } from 'vitest';
import type { OrderRecord, OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import type {
  MachineBinding,
  OrderActorHandle,
  StartOrderOptions,
} from '../../../src/worker/machine-binding.ts';
import { commandContentHash } from '../../../src/worker/command-intake.ts';
import { hostOver, openOrderStatus, withSuspend } from './host-fixtures.ts';
import type { OrderLeases } from '../../../src/worker/ports.ts';
import { parseCommand, type OrderCommand } from '../../../src/contract/commands.ts';
import { fakeEvent } from '../../support/fake-events.ts';

const create = {
  type: 'order.create',
  command_id: 'c-1',
  order_id: 'o-1',
  mode: 'cefi',
  deposit_currency: 'BTC',
  withdraw_currency: 'ETH',
  deposit_amount: '0.1',
  withdraw_address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
} as const;

function harness(
  opts: {
    writeResult?: () => Promise<boolean>;
    /** Writes as the writer is asked for them: records, and the offsets committed with them. */
    writes?: Array<{ records: OutboundRecord[]; offsets: unknown[] }>;
    /** Called as an order's actor starts (before the host writes anything of it); may throw, as a start could. */
    onCreate?: (start: StartOrderOptions) => void;
  } = {},
) {
  const records = new Map<string, OrderRecord>();
  const written: OutboundRecord[] = [];
  const starts: StartOrderOptions[] = [];
  let stopped = 0;
  let restored = 0;
  const store = {
    get: (id: string) => records.get(id),
    apply: (record: OrderRecord) => void records.set(record.order_id, record),
    recordsOfPartition: () => [],
    catchUp: () => Promise.resolve(),
    orderIdByReference: () => undefined,
  } as unknown as OrderStateStore;
  const writer = {
    write: (out: OutboundRecord[], offsets: unknown[] = []) => {
      written.push(...out);
      opts.writes?.push({ records: out, offsets });
      return opts.writeResult ? opts.writeResult() : Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const leases: OrderLeases = withSuspend({
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  });

  const handle: OrderActorHandle = {
    can: () => true,
    send: () => {},
    status: openOrderStatus,
    persisted: () => ({ fake: true }),
    stop: () => void stopped++,
  };
  const binding: MachineBinding = {
    create: (_command, start) => {
      starts.push(start);
      opts.onCreate?.(start);
      return handle;
    },
    restore: () => {
      restored++;
      return handle;
    },
    resting: () => null,
  };
  const host = hostOver({ store, writer, leases, binding });
  host.setAssignment([0]);
  void host.onAssignment([], [0]);
  let offset = 0;
  const send = (value: unknown, key = 'o-1') =>
    host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(offset++),
      key,
      value: Buffer.from(JSON.stringify(value)),
    });
  const events = () =>
    written
      .filter((r) => r.topic === 'events')
      .map((r) => JSON.parse(String(r.value)) as Record<string, unknown>);
  return { host, written, starts, send, events, stoppedCount: () => stopped, restoredCount: () => restored };
}

function parsed(value: unknown): OrderCommand {
  const result = parseCommand(JSON.stringify(value), (value as { order_id: string }).order_id);
  if (!result.ok) throw new Error(result.message);
  return result.command;
}

describe('order host: money safety', () => {
  it('hashes nested fields: creates that differ only in limit_order or pre_screening differ', () => {
    const base = parsed({ ...create, limit_order: { ttl_seconds: 600 } });
    const other = parsed({ ...create, limit_order: { ttl_seconds: 900 } });
    expect(commandContentHash(base)).not.toBe(commandContentHash(other));
    const screened = parsed({ ...create, pre_screening: { ip: '203.0.113.7' } });
    const screenedElsewhere = parsed({ ...create, pre_screening: { ip: '203.0.113.8' } });
    expect(commandContentHash(screened)).not.toBe(commandContentHash(screenedElsewhere));
    // Key order at any depth does not matter; the command_id does not count.
    expect(
      commandContentHash(parsed({ ...create, command_id: 'other', limit_order: { ttl_seconds: 600 } })),
    ).toBe(commandContentHash(base));
  });

  it('rejects a conflicting order.create that differs only in a nested field', async () => {
    const h = harness();
    await h.send({ ...create, limit_order: { ttl_seconds: 600 } });
    await h.send({ ...create, command_id: 'c-2', limit_order: { ttl_seconds: 900 } });
    expect(h.events().map((e) => [e['type'], e['reason']])).toEqual([['command.rejected', 'order_exists']]);
  });

  it('durable() rejects while the latest write was refused: no call goes out on an unwritten intent', async () => {
    let result = true;
    const h = harness({ writeResult: () => Promise.resolve(result) });
    await h.send(create);
    await expect(h.host.durable('o-1')).resolves.toBeUndefined();
    result = false;
    h.starts[0]?.onChange([fakeEvent({ type: 'order.quoted' })]);
    await expect(h.host.durable('o-1')).rejects.toThrow(/refused|no longer/);
  });

  it("writes a new order's first record once its first local steps ran, and a call meanwhile waits for that write", async () => {
    const writes: Array<{ records: OutboundRecord[]; offsets: unknown[] }> = [];
    let commit: (ok: boolean) => void = () => {};
    let durableAt: number | undefined;
    const h = harness({
      writes,
      writeResult: () => new Promise<boolean>((resolve) => (commit = resolve)),
      // The machine's first steps, as the real one takes them: a local check answers at once (a change with an
      // event), and the next state's call asks for durability before it leaves.
      onCreate: (start) =>
        queueMicrotask(() => {
          start.onChange([fakeEvent({ type: 'order.quoted' })]);
          void h.host.durable('o-1').then(() => (durableAt = writes.length));
        }),
    });
    const handled = h.send(create);
    await vi.waitFor(() => expect(writes).toHaveLength(1));
    // One write: the command's offset, the state record of the order as it is after those steps, their event.
    expect(writes[0]?.offsets).toEqual([{ topic: 'commands', partition: 0, offset: '0' }]);
    expect(writes[0]?.records.map((r) => r.topic)).toEqual(['events', 'state']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(durableAt).toBeUndefined();
    commit(true);
    await handled;
    await vi.waitFor(() => expect(durableAt).toBe(1));
  });

  it("queues a new order's first write without waiting for a turn of the event loop", async () => {
    // Each of a partition's creates waits for its own first write to be queued before the next is taken: a turn of
    // the event loop per create (behind every I/O callback ready then) would stretch that path under load.
    const writes: Array<{ records: OutboundRecord[]; offsets: unknown[] }> = [];
    const h = harness({ writes });
    const handled = h.send(create);
    const queuedByNextTurn = await new Promise<number>((resolve) =>
      setImmediate(() => resolve(writes.length)),
    );
    expect(queuedByNextTurn).toBe(1);
    await handled;
  });

  it("does not leave a new order's writes pending for ever when its actor fails to start", async () => {
    const h = harness({
      onCreate: () => {
        throw new Error('the machine refused its input');
      },
    });
    await expect(h.send(create)).rejects.toThrow('the machine refused its input');
    const settled = h.host.durable('o-1').then(
      () => 'settled',
      () => 'settled',
    );
    const outcome = await Promise.race([
      settled,
      new Promise((resolve) => setTimeout(() => resolve('pending'), 200)),
    ]);
    expect(outcome).toBe('settled');
  });

  it('durable() rejects when the write failed, and halt() stops every actor and refuses to act', async () => {
    let fail = false;
    const h = harness({
      writeResult: () => (fail ? Promise.reject(new Error('kafka down for good')) : Promise.resolve(true)),
    });
    await h.send(create);
    fail = true;
    h.starts[0]?.onChange([fakeEvent({ type: 'order.quoted' })]);
    await expect(h.host.durable('o-1')).rejects.toThrow();
    // The failed write reloaded the order from its last durable record (a second actor); halt() stops that one.
    expect(h.restoredCount()).toBe(1);
    h.host.halt(new Error('kafka down for good'));
    expect(h.stoppedCount()).toBe(2);
    expect(h.host.mayAct('o-1')).toBe(false);
  });

  it('parks an order whose actor fails on an unmodelled error, once, and refuses its commands but abandon', async () => {
    const h = harness();
    await h.send(create);
    h.starts[0]?.onError(new RangeError('Invalid time value'));
    h.starts[0]?.onError(new RangeError('Invalid time value'));
    await new Promise((resolve) => setImmediate(resolve));
    const parkedEvents = h.events().filter((e) => e['type'] === 'order.parked');
    expect(parkedEvents).toHaveLength(1);
    expect(parkedEvents[0]).toMatchObject({ reason: 'internal_error', code: 'actor_error', seq: 1 });
    await h.send({ type: 'order.cancel', command_id: 'c-2', order_id: 'o-1' });
    expect(h.events().at(-1)).toMatchObject({ type: 'command.rejected', reason: 'not_allowed' });
    expect(String(h.events().at(-1)?.['message'])).toContain('halted');
    await h.send({ type: 'order.settle', command_id: 'c-3', order_id: 'o-1', resolution: 'abandon' });
    expect(h.events().at(-1)).toMatchObject({ type: 'order.failed', reason: 'abandoned_by_operator' });
    const state = h.written.filter((r) => r.topic === 'state').at(-1);
    expect(JSON.parse(String(state?.value))).toMatchObject({ terminal: true });
  });
});
