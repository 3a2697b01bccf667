// The order host's decisions, with its Kafka and Redis collaborators replaced by recording stand-ins (the real ones
// are exercised by the integration tier): rejections and their seq, deduplication, and the reconciliation sweep.
import { createHash } from 'node:crypto';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import type { OrderCommand } from '../../../src/contract/commands.ts';
import { MAX_REJECTION_EVENT_BYTES } from '../../../src/contract/events.ts';
import type { OrderRecord, OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type {
  OffsetToCommit,
  OutboundRecord,
  TransactionalWriter,
} from '../../../src/kafka/transactional-writer.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
} from '../../../src/worker/machine-binding.ts';
import { commandContentHash } from '../../../src/worker/command-intake.ts';
import { createCommand, hostOver, noMetrics, openRecord, withSuspend } from './host-fixtures.ts';
import type { OrderHost } from '../../../src/worker/order-host.ts';
import {
  orphanSweepIntervalMs,
  type OrderHomes,
  type OrderHostMetrics,
} from '../../../src/worker/order-host.ts';
import type { OrderLeases } from '../../../src/worker/ports.ts';

interface Harness {
  host: OrderHost;
  written: OutboundRecord[];
  /** Offsets committed, in the order of the writes that carried them. */
  offsets: OffsetToCommit[];
  sent: OrderActorEvent[];
  status: {
    lastConfirmedAt: number | null;
    lastStatus: string | null;
    confirmedAt: number | null;
    uniqueReference: string | null;
    accepts: boolean;
  };
  send: (
    value: unknown,
    key?: string | null,
    opts?: { partition?: number; raw?: Buffer; headers?: Record<string, string> },
  ) => Promise<void>;
  records: Map<string, OrderRecord>;
  /** Lease calls in order: ['acquire' | 'release', orderId]. */
  leaseCalls: Array<[string, string]>;
  restored: string[];
}

interface HarnessOptions {
  /** Runs before each catch-up resolves (a previous owner's late write, a revoke...). */
  onCatchUp?: (round: number) => void;
  /** Runs while a lease acquire is in flight, before it is granted. */
  onAcquire?: (orderId: string) => void;
  maxCommandBytes?: number;
  metrics?: OrderHostMetrics;
  /** How many acquires find the lease held before one is granted. */
  refuseFirstAcquires?: number;
  /** The fence each grant carries (default 1: nobody held the lease before). */
  grantFence?: number;
  homes?: OrderHomes;
  /** The canonical partition of each order_id (the commands topic's partitioner). */
  canonicalPartition?: (orderId: string) => number | undefined;
  /** Whether the order's lease is still valid locally (default: always). */
  isValid?: (orderId: string) => boolean;
  /** Leases that also answer many orders at once (acquireMany), as the Redis ones do. */
  batchLeases?: {
    /** Orders a batch finds held (by the previous owner); their own acquire later is granted. */
    held?: Set<string>;
    /** Every batch fails (Redis unreachable for it). */
    fail?: boolean;
    /** Runs while a batch is in flight, before it answers. */
    onBatch?: (orderIds: string[]) => void;
  };
}

function harness(options: HarnessOptions = {}): Harness {
  const records = new Map<string, OrderRecord>();
  const leaseCalls: Array<[string, string]> = [];
  const restored: string[] = [];
  let catchUps = 0;
  const written: OutboundRecord[] = [];
  const offsets: OffsetToCommit[] = [];
  const sent: OrderActorEvent[] = [];
  const status = {
    lastConfirmedAt: null as number | null,
    lastStatus: null as string | null,
    confirmedAt: null as number | null,
    uniqueReference: null as string | null,
    accepts: true,
  };
  const store = {
    get: (id: string) => records.get(id),
    orderIdByReference: (reference: string) =>
      [...records.values()].find((record) => record.unique_reference === reference)?.order_id,
    apply: (record: OrderRecord) => void records.set(record.order_id, record),
    recordsOfPartition: (partition: number) => [...records.values()].filter((r) => r.partition === partition),
    catchUp: () => {
      options.onCatchUp?.(catchUps++);
      return Promise.resolve();
    },
    release: () => {},
  } as unknown as OrderStateStore;
  const writer = {
    write: (out: OutboundRecord[], committed: OffsetToCommit[] = []) => {
      written.push(...out);
      offsets.push(...committed);
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const leases: OrderLeases = withSuspend({
    acquire: (orderId) => {
      leaseCalls.push(['acquire', orderId]);
      options.onAcquire?.(orderId);
      if ((options.refuseFirstAcquires ?? 0) >= leaseCalls.filter(([call]) => call === 'acquire').length)
        return Promise.resolve(null);
      return Promise.resolve({ fence: options.grantFence ?? 1 });
    },
    release: (orderId) => {
      leaseCalls.push(['release', orderId]);
      return Promise.resolve();
    },
    isValid: (orderId) => options.isValid?.(orderId) ?? true,
  });
  const batch = options.batchLeases;
  if (batch)
    leases.acquireMany = (requests) => {
      const orderIds = requests.map((request) => request.orderId);
      leaseCalls.push(['acquireMany', orderIds.join(',')]);
      batch.onBatch?.(orderIds);
      if (batch.fail) return Promise.reject(new Error('redis unreachable'));
      return Promise.resolve(
        orderIds.map((orderId) => (batch.held?.has(orderId) ? null : { fence: options.grantFence ?? 1 })),
      );
    };

  const handle: OrderActorHandle = {
    can: () => status.accepts,
    send: (event) => void sent.push(event),
    status: () => ({ state: '"open"', terminal: false, depositTxHash: null, ...status }),
    persisted: () => ({ fake: true }),
    stop: () => {},
  };
  const binding: MachineBinding = {
    create: () => handle,
    restore: (_machine, start) => {
      restored.push(start.orderId);
      return handle;
    },
    resting: () => null,
  };
  const host = hostOver(
    { store, writer, leases, binding },
    {
      ...(options.maxCommandBytes === undefined ? {} : { maxCommandBytes: options.maxCommandBytes }),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.homes ? { homes: options.homes } : {}),
      ...(options.canonicalPartition ? { canonicalPartition: options.canonicalPartition } : {}),
    },
  );
  host.setAssignment([0]);
  let offset = 0;
  const send = (
    value: unknown,
    key: string | null = 'o-1',
    opts: { partition?: number; raw?: Buffer; headers?: Record<string, string> } = {},
  ) =>
    host.handleMessage({
      topic: 'commands',
      partition: opts.partition ?? 0,
      offset: String(offset++),
      key,
      value: opts.raw ?? Buffer.from(JSON.stringify(value)),
      ...(opts.headers ? { headers: opts.headers } : {}),
    });
  return { host, written, offsets, sent, status, send, records, leaseCalls, restored };
}

const create = createCommand;

function events(h: Harness): Array<Record<string, unknown>> {
  return h.written
    .filter((r) => r.topic === 'events')
    .map((r) => JSON.parse(r.value) as Record<string, unknown>);
}

describe('order host', () => {
  it('answers a repeated identical order.create with nothing, and a different one with order_exists at the next seq', async () => {
    const h = harness();
    await h.send(create);
    const before = h.written.length;
    await h.send(create);
    expect(h.written.length).toBe(before);
    await h.send({ ...create, command_id: 'c-2', deposit_amount: '2' });
    const rejected = events(h).filter((e) => e['type'] === 'command.rejected');
    expect(rejected).toMatchObject([{ reason: 'order_exists', order_id: 'o-1', seq: 1, event_id: 'o-1:1' }]);
  });

  it('refuses a command its state does not allow, and reuses no command_id with other content', async () => {
    const h = harness();
    await h.send(create);
    h.status.accepts = false;
    await h.send({ type: 'order.cancel', command_id: 'c-3', order_id: 'o-1' });
    // The same refused command again is not refused twice.
    await h.send({ type: 'order.cancel', command_id: 'c-3', order_id: 'o-1' });
    h.status.accepts = true;
    await h.send({
      type: 'order.submit_deposit',
      command_id: 'c-3',
      order_id: 'o-1',
      tx_hash: '0x0123456789abcdef',
    });
    expect(events(h).map((e) => [e['reason'], e['seq']])).toEqual([
      ['not_allowed', 1],
      ['duplicate_conflict', 2],
    ]);
    expect(h.sent).toEqual([]);
  });

  it('gives a rejection for no existing order seq 0 and an id from its source offset', async () => {
    const h = harness();
    await h.send({ type: 'order.cancel', command_id: 'c-9', order_id: 'ghost' }, 'ghost');
    expect(events(h)).toMatchObject([
      { reason: 'unknown_order', seq: 0, event_id: 'rejected:commands:0:0', order_id: 'ghost' },
    ]);
  });

  it('nudges an order whose confirmation is overdue to poll now, at most once per max age', async () => {
    const h = harness();
    await h.send(create);
    h.status.uniqueReference = 'REF1';
    h.status.lastConfirmedAt = 1_000_000 - 30_000;
    expect(h.host.reconcile(1_000_000, 60_000)).toBe(0);
    h.status.lastConfirmedAt = 1_000_000 - 61_000;
    expect(h.host.reconcile(1_000_000, 60_000)).toBe(1);
    expect(h.sent).toEqual([{ type: 'WEBHOOK_HINT', at: 1_000_000 }]);
    expect(h.host.reconcile(1_000_000 + 5_000, 60_000)).toBe(0);
    expect(h.host.reconcile(1_000_000 + 61_000, 60_000)).toBe(1);
  });

  it('hands a listing row to the order of this replica that records its exchange order, and says what it did', async () => {
    const h = harness();
    await h.send(create);
    h.status.uniqueReference = 'REF1';
    h.status.lastStatus = 'INITIAL';
    const record = h.records.get('o-1');
    if (record) h.records.set('o-1', { ...record, unique_reference: 'REF1' });
    expect(h.host.drivesOpenOrders('cefi')).toBe(true);
    expect(h.host.drivesOpenOrders('cefi_fixed')).toBe(false);

    expect(h.host.deliverListing({ uniqueReference: 'REF1', status: 'INITIAL', at: 1_000 })).toBe(
      'confirmed',
    );
    expect(h.host.deliverListing({ uniqueReference: 'REF1', status: 'PAID', at: 2_000 })).toBe('differed');
    expect(h.sent).toEqual([
      { type: 'LISTED', status: 'INITIAL', at: 1_000 },
      { type: 'LISTED', status: 'PAID', at: 2_000 },
    ]);
    // Another replica's exchange order, or none: nothing is sent.
    expect(h.host.deliverListing({ uniqueReference: 'REF-OTHER', status: 'INITIAL', at: 3_000 })).toBe(
      'not_here',
    );
    // The machine does not take it (a GET in flight, a stale listing): nothing is sent either.
    h.status.accepts = false;
    expect(h.host.deliverListing({ uniqueReference: 'REF1', status: 'INITIAL', at: 4_000 })).toBe('ignored');
    expect(h.sent).toHaveLength(2);
  });

  it('counts the open exchange orders whose status was last confirmed too long ago', async () => {
    const h = harness();
    await h.send(create);
    // Not at the exchange yet: not counted.
    expect(h.host.confirmationFreshness(1_000_000, 60_000)).toEqual({ open: 0, overdue: 0 });
    h.status.uniqueReference = 'REF1';
    h.status.confirmedAt = 1_000_000 - 60_000;
    expect(h.host.confirmationFreshness(1_000_000, 60_000)).toEqual({ open: 1, overdue: 0 });
    expect(h.host.confirmationFreshness(1_000_001, 60_000)).toEqual({ open: 1, overdue: 1 });
  });

  it('refuses a command above the size limit unread, with a small rejection carrying an excerpt and a hash', async () => {
    const h = harness({ maxCommandBytes: 65_536 });
    const raw = Buffer.from(JSON.stringify({ ...create, withdraw_address_extra_id: 'x'.repeat(2_000_000) }));
    await h.send(undefined, 'o-1', { raw });
    const [event] = h.written.filter((r) => r.topic === 'events');
    expect(Buffer.byteLength(event?.value ?? '')).toBeLessThan(MAX_REJECTION_EVENT_BYTES);
    expect(JSON.parse(event?.value ?? '{}')).toMatchObject({
      reason: 'too_large',
      seq: 0,
      command_bytes: raw.length,
      command_sha256: createHash('sha256').update(raw).digest('hex'),
      command_excerpt: raw.subarray(0, 512).toString(),
    });
    expect(h.sent).toEqual([]);
  });

  it('keeps a rejection small when the bad value would be repeated in its message', async () => {
    const h = harness();
    await h.send({ type: 'x'.repeat(60_000), command_id: 'c-1', order_id: 'o-1' });
    await h.send({ ...create, ['y'.repeat(60_000)]: 1 });
    const rejected = h.written.filter((r) => r.topic === 'events');
    expect(rejected.map((r) => JSON.parse(r.value) as Record<string, unknown>)).toMatchObject([
      { reason: 'unknown_type' },
      { reason: 'malformed' },
    ]);
    for (const r of rejected) expect(Buffer.byteLength(r.value)).toBeLessThan(MAX_REJECTION_EVENT_BYTES);
  });

  it.each([
    ['a null key', null],
    ["another order's key", 'o-other'],
  ])(
    'answers a command with %s naming an order of a partition owned elsewhere with seq 0, touching no lease',
    async (_what, key) => {
      const h = harness();
      h.host.setAssignment([1]);
      h.records.set('o-1', openRecord('o-1', 0));
      await h.send(
        { type: 'order.submit_deposit', command_id: 'c-5', order_id: 'o-1', tx_hash: '0x0123456789abcdef' },
        key,
        { partition: 1 },
      );
      expect(events(h)).toMatchObject([
        { reason: 'malformed', seq: 0, order_id: 'o-1', event_id: 'rejected:commands:1:0' },
      ]);
      expect(h.leaseCalls).toEqual([]);
      expect(h.records.get('o-1')?.seq).toBe(4);
    },
  );

  it("forwards a correctly keyed command that arrived on another partition than its order's, with its arrival offset", async () => {
    const h = harness();
    h.host.setAssignment([0, 1]);
    h.records.set('o-1', openRecord('o-1', 0));
    const cancel = { type: 'order.cancel', command_id: 'c-5', order_id: 'o-1' };
    await h.send(cancel, 'o-1', { partition: 1, headers: { traceparent: 'tp', 'x-producer': 'kcat' } });
    expect(events(h)).toEqual([]);
    expect(h.leaseCalls).toEqual([]);
    expect(h.written).toEqual([
      {
        topic: 'commands',
        partition: 0,
        key: 'o-1',
        value: JSON.stringify(cancel),
        headers: {
          traceparent: 'tp',
          'x-producer': 'kcat',
          'forwarded-from': 'commands:1:0',
          'forward-hops': '1',
        },
      },
    ]);
    expect(h.offsets).toEqual([{ topic: 'commands', partition: 1, offset: '0' }]);
  });

  it('forwards an order.create whose order is claimed by another partition there, and creates nothing here', async () => {
    const homes = new Map<string, number>([['o-1', 3]]);
    const h = harness({
      homes: {
        claim: (orderId, partition) => {
          if (!homes.has(orderId)) homes.set(orderId, partition);
          return Promise.resolve({ partition: homes.get(orderId)!, retired: false });
        },
      },
    });
    await h.send(create, 'o-1');
    expect(events(h)).toEqual([]);
    expect(h.written).toMatchObject([
      { topic: 'commands', partition: 3, key: 'o-1', headers: { 'forwarded-from': 'commands:0:0' } },
    ]);
    expect(h.offsets).toEqual([{ topic: 'commands', partition: 0, offset: '0' }]);
    expect(h.leaseCalls).toEqual([]);
    expect(h.records.has('o-1')).toBe(false);

    // Its copy forwarded once already goes once more, to the home the claim names; past the last hop it is refused.
    await h.send(create, 'o-1', { headers: { 'forwarded-from': 'commands:7:12', 'forward-hops': '1' } });
    expect(h.written.at(-1)).toMatchObject({
      partition: 3,
      headers: { 'forwarded-from': 'commands:7:12', 'forward-hops': '2' },
    });
    await h.send(create, 'o-1', { headers: { 'forwarded-from': 'commands:7:12', 'forward-hops': '2' } });
    expect(events(h)).toMatchObject([
      {
        type: 'command.rejected',
        reason: 'unroutable',
        seq: 0,
        event_id: 'rejected:commands:0:2',
        source: { topic: 'commands', partition: 0, offset: '2' },
        forwarded_from: { topic: 'commands', partition: 7, offset: '12' },
      },
    ]);
    expect(h.records.has('o-1')).toBe(false);

    await h.send({ ...create, command_id: 'c-2', order_id: 'o-2' }, 'o-2');
    expect(homes.get('o-2')).toBe(0);
    expect(h.records.get('o-2')?.partition).toBe(0);
  });

  it('forwards a command of an order not known here to the canonical partition of its order_id, and creates there', async () => {
    const h = harness({ canonicalPartition: () => 2 });
    h.host.setAssignment([0, 2]);
    await h.send(create, 'o-1', { partition: 0 });
    expect(h.written).toMatchObject([{ topic: 'commands', partition: 2, key: 'o-1' }]);
    expect(h.records.has('o-1')).toBe(false);
    // The copy, as the consumer delivers it on partition 2: the order is created there, and the create again (a
    // second producer, another partitioner) is a duplicate of it wherever it arrives.
    const copy = h.written[0]!;
    await h.send(create, 'o-1', { partition: 2, headers: copy.headers! });
    expect(h.records.get('o-1')?.partition).toBe(2);
    const before = h.written.length;
    await h.send(create, 'o-1', { partition: 2 });
    expect(h.written.length).toBe(before);
    await h.send(create, 'o-1', { partition: 0 });
    expect(h.written.slice(before)).toMatchObject([{ topic: 'commands', partition: 2 }]);
  });

  it('refuses an order.create of an order whose home is retired (it left the state topic), and creates nothing', async () => {
    const claims: string[] = [];
    const h = harness({
      homes: {
        claim: (orderId, partition) => {
          claims.push(orderId);
          return Promise.resolve({ partition, retired: orderId === 'o-1' });
        },
      },
    });
    await h.send(create, 'o-1');
    expect(events(h)).toMatchObject([
      { type: 'command.rejected', reason: 'order_exists', command_id: create.command_id, seq: 0 },
    ]);
    expect(String(events(h)[0]?.['message'])).toContain('FINISHED_ORDER_RETENTION_MS');
    expect(h.leaseCalls).toEqual([]);
    expect(h.records.has('o-1')).toBe(false);

    await h.send({ ...create, command_id: 'c-2', order_id: 'o-2' }, 'o-2');
    expect(claims).toEqual(['o-1', 'o-2']);
    expect(h.records.get('o-2')?.partition).toBe(0);
  });

  it('restores an order a previous owner created after the first restore barrier', async () => {
    const h = harness({
      onCatchUp: (round) => {
        // The previous owner's order.create commits between this replica's first and second barrier.
        if (round === 1) h.records.set('late', openRecord('late', 0));
      },
    });
    h.records.set('early', openRecord('early', 0));
    h.host.setAssignment([0]);
    // It says how many orders moved (the worker asks for a memory-reducing GC after a large restore).
    expect(await h.host.onAssignment([], [0])).toBe(2);
    expect(h.restored.sort()).toEqual(['early', 'late']);
    expect(['early', 'late'].filter((orderId) => h.host.mayAct(orderId))).toEqual(['early', 'late']);
    // Giving the partition away unloads both.
    h.host.setAssignment([]);
    expect(await h.host.onAssignment([0], [])).toBe(2);
    expect(h.host.activeOrders).toBe(0);
  });

  describe('restore with leases asked for many orders at once', () => {
    const openOrders = (h: Harness, count: number): string[] => {
      const ids = Array.from({ length: count }, (_, i) => `o-${i}`);
      for (const id of ids) h.records.set(id, openRecord(id, 0));
      return ids;
    };
    const calls = (h: Harness, kind: string) => h.leaseCalls.filter(([call]) => call === kind);

    it('lets go at once of the leases it took for a partition taken away during the restore, and restores only the rest', async () => {
      const kept = ['a-0', 'a-1', 'a-2'];
      const taken = ['b-0', 'b-1', 'b-2'];
      let releasedAtRevoke: string[] = [];
      const h = harness({
        batchLeases: {},
        onCatchUp: (round) => {
          // The second barrier, after every lease was granted: the group takes partition 1 away meanwhile.
          if (round !== 1) return;
          h.host.setAssignment([0]);
          releasedAtRevoke = calls(h, 'release').map(([, orderId]) => orderId);
        },
      });
      for (const id of kept) h.records.set(id, openRecord(id, 0));
      for (const id of taken) h.records.set(id, openRecord(id, 1));
      h.host.setAssignment([0, 1]);
      await h.host.onAssignment([], [0, 1]);
      // Its next owner is waiting for them: released by the new assignment itself, not when the restore gets there.
      expect(releasedAtRevoke.sort()).toEqual(taken);
      expect(h.restored.sort()).toEqual(kept);
      expect(
        calls(h, 'release')
          .map(([, orderId]) => orderId)
          .sort(),
      ).toEqual(taken);
      expect(taken.filter((orderId) => h.host.mayAct(orderId))).toEqual([]);
    });

    it('asks in round trips of a hundred orders, then one at a time for those held elsewhere, and restores them all', async () => {
      const h = harness({ batchLeases: { held: new Set(['o-7', 'o-212']) } });
      const ids = openOrders(h, 250);
      h.host.setAssignment([0]);
      expect(await h.host.onAssignment([], [0])).toBe(250);
      expect(calls(h, 'acquireMany').map(([, asked]) => asked.split(',').length)).toEqual([100, 100, 50]);
      expect(calls(h, 'acquire').map(([, id]) => id)).toEqual(['o-7', 'o-212']);
      expect(h.restored.sort()).toEqual([...ids].sort());
      expect(ids.every((id) => h.host.mayAct(id))).toBe(true);
    });

    it('asks one order at a time when a batch fails', async () => {
      const h = harness({ batchLeases: { fail: true } });
      const ids = openOrders(h, 120);
      h.host.setAssignment([0]);
      expect(await h.host.onAssignment([], [0])).toBe(120);
      expect(calls(h, 'acquireMany')).toHaveLength(2);
      expect(calls(h, 'acquire')).toHaveLength(120);
      expect(h.restored.sort()).toEqual([...ids].sort());
    });

    it('releases the grants of a batch that lands after its partition was revoked, and drives none of them', async () => {
      const h = harness({ batchLeases: { onBatch: () => h.host.setAssignment([]) } });
      openOrders(h, 3);
      h.host.setAssignment([0]);
      await h.host.onAssignment([], [0]);
      expect(h.leaseCalls).toEqual([
        ['acquireMany', 'o-0,o-1,o-2'],
        ['release', 'o-0'],
        ['release', 'o-1'],
        ['release', 'o-2'],
      ]);
      expect(h.restored).toEqual([]);
      expect(h.host.activeOrders).toBe(0);
    });

    it('reloads an order whose lease was lost between its grant and its restore, instead of driving it on a dead lease', async () => {
      // A restore stalled after the leases were granted (it reads the partition to its end, the process is starved):
      // o-1's lease expired meanwhile, and the keeper's onLost came while the host drove no such order yet.
      let lost = false;
      const h = harness({
        batchLeases: { onBatch: () => void (lost = true) },
        isValid: (orderId) => !(orderId === 'o-1' && lost),
        onAcquire: () => void (lost = false),
      });
      openOrders(h, 2);
      h.host.setAssignment([0]);
      await h.host.onLeaseLost('o-1');
      await h.host.onAssignment([], [0]);
      await new Promise((resolve) => setImmediate(resolve));
      // o-1 was taken again (a lease of its own, then restored); o-0 was restored from the batch.
      expect(calls(h, 'acquire')).toEqual([['acquire', 'o-1']]);
      expect(h.restored.sort()).toEqual(['o-0', 'o-1']);
      expect(h.host.mayAct('o-0')).toBe(true);
      expect(h.host.mayAct('o-1')).toBe(true);
      expect(h.host.activeOrders).toBe(2);
    });
  });

  it('drives an unfinished order of its partition that it does not drive yet instead of refusing its command', async () => {
    const h = harness();
    await h.host.onAssignment([], [0]);
    // Created by the previous owner after the restore: not loaded here.
    h.records.set('o-1', openRecord('o-1', 0));
    await h.send({ type: 'order.cancel', command_id: 'c-5', order_id: 'o-1' });
    expect(h.restored).toEqual(['o-1']);
    expect(events(h)).toEqual([]);
    expect(h.sent).toMatchObject([{ type: 'CANCEL' }]);
  });

  it('releases a lease granted after its partition was revoked and does not drive the order', async () => {
    const h = harness({ onAcquire: () => h.host.setAssignment([]) });
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    expect(h.leaseCalls).toEqual([
      ['acquire', 'o-1'],
      ['release', 'o-1'],
    ]);
    expect(h.restored).toEqual([]);
    expect(h.host.activeOrders).toBe(0);
  });

  it('reloads an order whose lease was lost and gives it up once its partition is gone', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    expect(h.host.activeOrders).toBe(1);
    await h.host.onLeaseLost('o-1');
    expect(h.restored).toEqual(['o-1', 'o-1']);
    h.host.setAssignment([]);
    const calls = h.leaseCalls.length;
    await h.host.onLeaseLost('o-1');
    expect(h.host.activeOrders).toBe(0);
    expect(h.leaseCalls.slice(calls)).toEqual([]);
  });

  it('stops the orders of a revoked partition and releases their leases as soon as the revoke is known', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    expect(h.host.activeOrders).toBe(1);
    h.host.setAssignment([]);
    expect(h.host.activeOrders).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.leaseCalls.at(-1)).toEqual(['release', 'o-1']);
  });

  it('hands a webhook hint to an order it drives in-process, and declines one it does not drive', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    const receivedAt = new Date().toISOString();
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt })).toBe(true);
    expect(h.sent).toMatchObject([{ type: 'WEBHOOK_HINT', status: 'PAID' }]);
    // Offered to live actors only: this one is live, so it takes it too.
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PRE-RELEASE', receivedAt }, { wake: false })).toBe(
      true,
    );
    expect(h.sent).toHaveLength(2);
    // Not wanted in the order's state: handled (nothing to route), nothing sent.
    h.status.accepts = false;
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'RELEASED', receivedAt })).toBe(true);
    expect(h.sent).toHaveLength(2);
    // Not driven here: the caller routes it through the commands topic.
    expect(h.host.deliverHint({ orderId: 'o-2', status: 'PAID', receivedAt })).toBe(false);
    h.host.setAssignment([]);
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt })).toBe(false);
  });

  it('takes a webhook hint routed through the commands topic like one handed over: no record written, only its offset', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    const before = h.written.length;
    await h.send({
      type: 'order.webhook_hint',
      command_id: 'webhook-3f1c',
      order_id: 'o-1',
      unique_reference: 'REF-1',
      status: 'COMPLETED',
      received_at: new Date().toISOString(),
    });
    expect(h.sent).toMatchObject([{ type: 'WEBHOOK_HINT', status: 'COMPLETED' }]);
    // Neither a state record for it nor its command_id in the order's deduplication window...
    expect(h.written.slice(before)).toEqual([]);
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).not.toContain('webhook-3f1c');
    // ...but its offset is committed (the consumer moves past it).
    expect(h.offsets).toContainEqual({ topic: 'commands', partition: 0, offset: '0' });
  });

  it('names the order it drives for its exchange reference, and no longer once the order has left', async () => {
    const h = harness();
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    // Answered from the driven order itself, not from the state store's view (which may lag its own writes).
    h.records.delete('o-1');
    expect(h.host.ownerOfReference('REF')).toBe('o-1');
    expect(h.host.ownerOfReference('OTHER')).toBeUndefined();
    h.host.setAssignment([]);
    h.records.delete('o-1');
    expect(h.host.ownerOfReference('REF')).toBeUndefined();
  });

  it('takes up an unfinished order that nobody drives on its partition, on the second sweep that finds it', async () => {
    let takenUp = 0;
    const h = harness({ metrics: { ...noMetrics, orphanTakenUp: () => void takenUp++ } });
    await h.host.onAssignment([], [0]);
    // Left driven by nobody (a path that should have loaded it did not), and no command of it comes.
    h.records.set('o-1', openRecord('o-1', 0));
    h.records.set('done', { ...openRecord('done', 0), terminal: true });
    h.records.set('elsewhere', openRecord('elsewhere', 1));
    const t0 = Date.now();
    h.host.reconcile(t0, 60_000);
    expect(h.restored).toEqual([]);
    h.host.reconcile(t0 + orphanSweepIntervalMs - 1, 60_000);
    expect(h.restored).toEqual([]);
    h.host.reconcile(t0 + orphanSweepIntervalMs, 60_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.restored).toEqual(['o-1']);
    expect(takenUp).toBe(1);
    expect(h.host.mayAct('o-1')).toBe(true);
    h.host.reconcile(t0 + 3 * orphanSweepIntervalMs, 60_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.restored).toEqual(['o-1']);
  });

  it('does not take an order for an orphan while it is being loaded, nor one seen only once', async () => {
    const h = harness();
    await h.host.onAssignment([], [0]);
    h.records.set('o-1', openRecord('o-1', 0));
    const t0 = Date.now();
    h.host.reconcile(t0, 60_000);
    // Its command arrives between the sweeps and loads it: the second sweep finds a slot, not an orphan.
    await h.send({ type: 'order.cancel', command_id: 'c-5', order_id: 'o-1' });
    expect(h.restored).toEqual(['o-1']);
    h.host.reconcile(t0 + orphanSweepIntervalMs, 60_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.restored).toEqual(['o-1']);
  });

  it('retries the reload of an order whose lease was lost when its catch-up fails, instead of rejecting', async () => {
    let failNext = false;
    const h = harness({
      onCatchUp: () => {
        if (!failNext) return;
        failNext = false;
        throw new Error('state partition 0 not caught up');
      },
    });
    h.records.set('o-1', openRecord('o-1', 0));
    await h.host.onAssignment([], [0]);
    failNext = true;
    await expect(h.host.onLeaseLost('o-1')).resolves.toBeUndefined();
    expect(h.restored).toEqual(['o-1', 'o-1']);
    expect(h.host.activeOrders).toBe(1);
  });

  it('never creates an order another replica created while it waited for the lease; the command comes again', async () => {
    const h = harness({
      refuseFirstAcquires: 1,
      // Meanwhile (a rebalance while this consumer was stuck), another replica created the order.
      onCatchUp: () =>
        h.records.set('o-1', {
          ...openRecord('o-1', 0),
          create_hash: commandContentHash(create as unknown as OrderCommand),
        }),
    });
    await expect(h.send(create)).rejects.toMatchObject({ code: 'order_created_meanwhile', retryable: true });
    expect(h.written.filter((r) => r.topic === 'state')).toEqual([]);
    expect(h.leaseCalls.at(-1)).toEqual(['release', 'o-1']);
    // Delivered again, the command finds the order, loads it and is a duplicate.
    await h.send(create);
    expect(h.restored).toEqual(['o-1']);
    expect(h.written.filter((r) => r.topic === 'events')).toEqual([]);
  });

  it('reads the partition before creating when the lease was free but held before, and creates nothing twice', async () => {
    let catchUps = 0;
    const h = harness({
      // Free at once, but its fence counter says a replica held it: that one created the order and let go, and
      // its records reach this replica's store only with the catch-up.
      grantFence: 2,
      onCatchUp: () => {
        catchUps++;
        h.records.set('o-1', {
          ...openRecord('o-1', 0),
          create_hash: commandContentHash(create as unknown as OrderCommand),
        });
      },
    });
    await expect(h.send(create)).rejects.toMatchObject({ code: 'order_created_meanwhile', retryable: true });
    expect(catchUps).toBe(1);
    expect(h.written.filter((r) => r.topic === 'state')).toEqual([]);
  });

  it('creates a brand-new order (fence 1, lease free at once) without a catch-up round trip', async () => {
    let catchUps = 0;
    const h = harness({ onCatchUp: () => void catchUps++ });
    await h.send(create);
    expect(catchUps).toBe(0);
    expect(h.written.filter((r) => r.topic === 'state')).toHaveLength(1);
  });

  it('reports each command by type and result, with the rejection reason, and never a made-up type as a label', async () => {
    // The worker's Node SDK registers a context manager; here a tracer provider does.
    const provider = new NodeTracerProvider();
    provider.register();
    const handled: Array<[string, string, string | undefined]> = [];
    const h = harness({
      metrics: {
        ...noMetrics,
        commandHandled: (c) => void handled.push([c.commandType, c.result, c.reason]),
      },
    });
    await h.send(create);
    await h.send(create);
    await h.send({ ...create, command_id: 'c-2', deposit_amount: '2' });
    await h.send({ type: 'order.cancel-7f3a9', command_id: 'c-4', order_id: 'o-1' });
    expect(handled).toEqual([
      ['order.create', 'accepted', undefined],
      ['order.create', 'duplicate', undefined],
      ['order.create', 'rejected', 'order_exists'],
      ['unknown', 'rejected', 'unknown_type'],
    ]);
    await provider.shutdown();
  });
});
