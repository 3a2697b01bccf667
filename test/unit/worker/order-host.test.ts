// The order host's decisions, with its Kafka and Redis collaborators replaced by recording stand-ins (the real ones
// are exercised by the integration tier): rejections and their seq, deduplication, and the reconciliation sweep.
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import type { OrderRecord, OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
} from '../../../src/worker/machine-binding.ts';
import { OrderHost, type OrderHostMetrics, type OrderLeases } from '../../../src/worker/order-host.ts';

interface Harness {
  host: OrderHost;
  written: OutboundRecord[];
  sent: OrderActorEvent[];
  status: { lastConfirmedAt: number | null; uniqueReference: string | null; accepts: boolean };
  send: (value: unknown, key?: string) => Promise<void>;
}

function harness(metrics?: OrderHostMetrics): Harness {
  const records = new Map<string, OrderRecord>();
  const written: OutboundRecord[] = [];
  const sent: OrderActorEvent[] = [];
  const status = {
    lastConfirmedAt: null as number | null,
    uniqueReference: null as string | null,
    accepts: true,
  };
  const store = {
    get: (id: string) => records.get(id),
    apply: (record: OrderRecord) => void records.set(record.order_id, record),
    recordsOfPartition: () => [],
    catchUp: () => Promise.resolve(),
  } as unknown as OrderStateStore;
  const writer = {
    write: (out: OutboundRecord[]) => {
      written.push(...out);
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const leases: OrderLeases = {
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  };
  const handle: OrderActorHandle = {
    can: () => status.accepts,
    send: (event) => void sent.push(event),
    status: () => ({ state: '"open"', terminal: false, depositTxHash: null, ...status }),
    durable: () => ({ fake: true }),
    stop: () => {},
  };
  const binding: MachineBinding = { create: () => handle, restore: () => handle };
  const host = new OrderHost({
    store,
    writer,
    leases,
    binding,
    topics: { events: 'events', state: 'state' },
    logger: createLogger({ level: 'silent' }),
    now: () => 1_000_000,
    ...(metrics ? { metrics } : {}),
  });
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
  return { host, written, sent, status, send };
}

const create = {
  type: 'order.create',
  command_id: 'c-1',
  order_id: 'o-1',
  mode: 'cefi',
  deposit_currency: 'ETH',
  withdraw_currency: 'BTC',
  deposit_amount: '1',
  withdraw_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
};

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

  it('reports each command by type and result, with the rejection reason, and never a made-up type as a label', async () => {
    // The worker's Node SDK registers a context manager; here a tracer provider does.
    const provider = new NodeTracerProvider();
    provider.register();
    const handled: Array<[string, string, string | undefined]> = [];
    const h = harness({
      commandHandled: (c) => void handled.push([c.commandType, c.result, c.reason]),
      eventsCommitted: () => {},
      webhookToEvent: () => {},
      leaseLost: () => {},
      leaseTakenOver: () => {},
      orderRestored: () => {},
      reconcileNudged: () => {},
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
