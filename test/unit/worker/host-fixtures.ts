// What the order host's unit tests share: a valid order.create, an unfinished order's record, and the host built
// over recording stand-ins of its ports (the journal is the real one, over a stand-in writer and store).
import type { OrderRecord, OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import type { MachineBinding, OrderActorHandle } from '../../../src/worker/machine-binding.ts';
import {
  OrderHost,
  type OrderHostMetrics,
  type OrderHostOptions,
  type StateReader,
} from '../../../src/worker/order-host.ts';
import type { OrderLeases } from '../../../src/worker/ports.ts';
import { OrderJournal, type OrderJournalOptions } from '../../../src/worker/order-journal.ts';

export const createCommand = {
  type: 'order.create',
  command_id: 'c-1',
  order_id: 'o-1',
  mode: 'cefi',
  deposit_currency: 'ETH',
  withdraw_currency: 'BTC',
  deposit_amount: '1',
  withdraw_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
};

/** An unfinished order of `partition` at seq 4, rev 3, fence 1. */
export function openRecord(
  orderId: string,
  partition: number,
  overrides: Partial<OrderRecord> = {},
): OrderRecord {
  return {
    v: 1,
    order_id: orderId,
    partition,
    fence: 1,
    rev: 3,
    seq: 4,
    updated_at: new Date(0).toISOString(),
    mode: 'cefi',
    create_hash: 'h',
    commands: [['c-0', 'h']],
    unique_reference: 'REF',
    terminal: false,
    machine: { fake: true },
    ...overrides,
  };
}

/** A state store over a map: what the host reads and applies, every partition caught up at once. */
export function memoryStore(records: Map<string, OrderRecord>): OrderStateStore {
  return {
    get: (id: string) => records.get(id),
    apply: (record: OrderRecord) => void records.set(record.order_id, record),
    recordsOfPartition: (partition: number) => [...records.values()].filter((r) => r.partition === partition),
    catchUp: () => Promise.resolve(),
    release: () => {},
    orderIdByReference: () => undefined,
    amend: (id: string, rev: number, machine: unknown) => {
      const held = records.get(id);
      if (held && !held.terminal && held.rev === rev) held.machine = machine;
    },
  } as unknown as OrderStateStore;
}

/** The host over these stand-ins, at the fixed time 1 000 000 unless `now` is given, with topics `events` and `state`. */
export function hostOver(
  parts: {
    store: StateReader & OrderJournalOptions['store'];
    writer: OrderJournalOptions['writer'];
    leases: OrderHostOptions['leases'];
    binding: MachineBinding;
  },
  options: Partial<
    Pick<
      OrderHostOptions,
      | 'maxCommandBytes'
      | 'metrics'
      | 'homes'
      | 'canonicalPartition'
      | 'now'
      | 'passivateIdleMs'
      | 'callInFlight'
      | 'pollsMayWait'
      | 'pollResting'
      | 'maxPollsAtRest'
      | 'commandPipelineDepth'
      | 'rewind'
      | 'callsSettled'
      | 'callsSettleTimeoutMs'
      | 'commandWaitBoundMs'
      | 'operatorAuthority'
    >
  > = {},
): OrderHost {
  const logger = createLogger({ level: 'silent' });
  const now = options.now ?? ((): number => 1_000_000);
  const journal = new OrderJournal({
    writer: parts.writer,
    store: parts.store,
    topics: { events: 'events', state: 'state' },
    now,
  });
  return new OrderHost({
    state: parts.store,
    journal,
    leases: parts.leases,
    binding: () => parts.binding,
    logger,
    now,
    ...(options.maxCommandBytes === undefined ? {} : { maxCommandBytes: options.maxCommandBytes }),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.homes ? { homes: options.homes } : {}),
    ...(options.canonicalPartition ? { canonicalPartition: options.canonicalPartition } : {}),
    ...(options.passivateIdleMs === undefined ? {} : { passivateIdleMs: options.passivateIdleMs }),
    ...(options.pollResting ? { pollResting: options.pollResting } : {}),
    ...(options.maxPollsAtRest === undefined ? {} : { maxPollsAtRest: options.maxPollsAtRest }),
    ...(options.callInFlight ? { callInFlight: options.callInFlight } : {}),
    ...(options.pollsMayWait ? { pollsMayWait: options.pollsMayWait } : {}),
    ...(options.commandPipelineDepth === undefined
      ? {}
      : { commandPipelineDepth: options.commandPipelineDepth }),
    ...(options.rewind ? { rewind: options.rewind } : {}),
    ...(options.callsSettled ? { callsSettled: options.callsSettled } : {}),
    ...(options.callsSettleTimeoutMs === undefined
      ? {}
      : { callsSettleTimeoutMs: options.callsSettleTimeoutMs }),
    ...(options.operatorAuthority ? { operatorAuthority: options.operatorAuthority } : {}),
    ...(options.commandWaitBoundMs === undefined ? {} : { commandWaitBoundMs: options.commandWaitBoundMs }),
  });
}

/** Metrics that record nothing: a test spreads it and overrides the ones it counts. */
export const noMetrics: OrderHostMetrics = {
  commandHandled: () => {},
  eventsCommitted: () => {},
  webhookToEvent: () => {},
  leaseLost: () => {},
  leaseTakenOver: () => {},
  orderRestored: () => {},
  reconcileNudged: () => {},
  orphanTakenUp: () => {},
  orderPassivated: () => {},
  orderReactivated: () => {},
};

/** What a stand-in actor of an open order reports: nothing confirmed, no exchange order yet. */
export function openOrderStatus(): ReturnType<OrderActorHandle['status']> {
  return {
    state: '"open"',
    terminal: false,
    depositTxHash: null,
    lastConfirmedAt: null,
    lastStatus: null,
    confirmedAt: null,
    uniqueReference: null,
  };
}

/** A stand-in actor of an open order that takes every event and changes nothing. */
export function openOrderHandle(): OrderActorHandle {
  return {
    can: () => true,
    send: () => {},
    status: openOrderStatus,
    persisted: () => ({ fake: true }),
    stop: () => {},
  };
}

/**
 * A fake's OrderLeases with the suspend half added: a suspended lease is kept again while the fake says it is valid,
 * and resumed by acquiring it again (above the fence it had).
 */
export function withSuspend(base: Pick<OrderLeases, 'acquire' | 'release' | 'isValid'>): OrderLeases {
  return {
    acquire: (orderId, minFence, onLost) => base.acquire(orderId, minFence, onLost),
    release: (orderId) => base.release(orderId),
    isValid: (orderId) => base.isValid(orderId),
    suspend: (orderId) => (base.isValid(orderId) ? Date.now() : undefined),
    keepAgain: (orderId) => base.isValid(orderId),
    resume: (orderId, fence, onLost) => base.acquire(orderId, fence, onLost),
    releaseSuspended: () => Promise.resolve(),
  };
}
