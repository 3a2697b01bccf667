// Passivation in the order host: an order that only waits loses its actor after the idle time and keeps its durable
// record and a deadline; it comes back - from that record, as a restore - at the deadline, on a webhook hint, on a
// command, and never while a call is in flight. A lost lease or a revoked partition still wins over a resting order.
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
  StartOrderOptions,
} from '../../../src/worker/machine-binding.ts';
import type { OrderHostMetrics, WakeReason } from '../../../src/worker/order-host.ts';
import type { OrderLeases } from '../../../src/worker/ports.ts';
import { createXStateBinding } from '../../../src/worker/xstate-binding.ts';
import { exchangeOrder, failure } from '../machines/order-harness.ts';
import { createCommand, hostOver, memoryStore, noMetrics, openRecord, withSuspend } from './host-fixtures.ts';
import { statusReadsAtCapacity } from '../../../src/worker/machine-binding.ts';

const T = 1_000_000;
const idleMs = 2_000;
const OPEN = { open: { deposit: 'awaiting', exchange: 'monitoring' } };

/** Lets promise chains and the host's setImmediate hops run (setImmediate stays real; timers are fake). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

function harness(opts: { passivateIdleMs?: number } = {}) {
  const records = new Map<string, OrderRecord>();
  const written: OutboundRecord[] = [];
  /** What happened to the order's actors, in order: create, restore, stop, send:<event type>. */
  const log: string[] = [];
  const restoredFrom: unknown[] = [];
  const sent: OrderActorEvent[] = [];
  const control = {
    /** What the binding answers for passiveUntil (null: not only waiting). */
    passiveUntil: (T + 30_000) as number | null,
    /** What the binding answers for pollDeferrableUntil (null: the wake is not only a routine poll). */
    pollDeferrableUntil: null as number | null,
    /** Whether the host is told the replica is saturated (its routine polls may wait). */
    saturated: false,
    /** How far the host's clock runs ahead of the timers: every timer then fires this late by the host's clock. */
    lateMs: 0,
    /**
     * Whether the record the harness restores from (machine `{ fake: true }`) was stored resting too; records
     * written from the harness's actors (which carry their state) rest whenever passiveUntil says so.
     */
    restsAsStored: false,
    callInFlight: false,
    leaseValid: true,
    accepts: true,
    depositTxHash: null as string | null,
  };
  const lease = {
    acquires: 0,
    releases: 0,
    onLost: undefined as (() => void) | undefined,
    suspends: 0,
    keptAgain: 0,
    /** Resumes asked of Redis, with the fence the order rested with. */
    resumes: [] as number[],
    /** What resume answers: 'same' (still ours in Redis), 'next' (fence + 1), 'jump' (fence + 5), 'held'. */
    resumeAs: 'same' as 'same' | 'next' | 'jump' | 'held',
    /** Whether a suspended lease is still valid on the local clock (keepAgain). */
    stillValid: true,
    releasedSuspended: [] as number[],
  };
  const counts = { passivated: 0, reactivated: [] as WakeReason[], deferred: 0 };
  const store = memoryStore(records);
  const writer = {
    write: (out: OutboundRecord[]) => {
      written.push(...out);
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const leases: OrderLeases = {
    acquire: (_orderId, _minFence, onLost) => {
      lease.acquires++;
      lease.onLost = onLost;
      control.leaseValid = true;
      return Promise.resolve({ fence: 1 + lease.acquires });
    },
    release: () => {
      lease.releases++;
      return Promise.resolve();
    },
    isValid: () => control.leaseValid,
    suspend: () => {
      lease.suspends++;
      return control.leaseValid ? Date.now() : undefined;
    },
    keepAgain: (_orderId, _fence, _renewedAt, onLost) => {
      if (!lease.stillValid) return false;
      lease.keptAgain++;
      lease.onLost = onLost;
      control.leaseValid = true;
      return true;
    },
    resume: (_orderId, fence, onLost) => {
      lease.resumes.push(fence);
      if (lease.resumeAs === 'held') return Promise.resolve(null);
      lease.onLost = onLost;
      control.leaseValid = true;
      return Promise.resolve({ fence: fence + { same: 0, next: 1, jump: 5 }[lease.resumeAs] });
    },
    releaseSuspended: (_orderId, fence) => {
      lease.releasedSuspended.push(fence);
      return Promise.resolve();
    },
  };
  const actor = (kind: string, start: StartOrderOptions): OrderActorHandle => {
    log.push(kind);
    // As XState does: the start is a change, reported synchronously.
    start.onChange([]);
    return {
      can: () => control.accepts,
      send: (event) => {
        log.push(`send:${event.type}`);
        sent.push(event);
        start.onChange([]);
      },
      status: () => ({
        state: JSON.stringify(OPEN),
        terminal: false,
        uniqueReference: 'REF',
        lastConfirmedAt: T,
        lastStatus: 'AWAITING',
        confirmedAt: T,
        depositTxHash: control.depositTxHash,
      }),
      persisted: () => ({ fake: true, state: OPEN }),
      stop: () => void log.push('stop'),
    };
  };
  const binding: MachineBinding = {
    create: (_command, start) => actor('create', start),
    restore: (persisted, start) => {
      restoredFrom.push(persisted);
      return actor('restore', start);
    },
    resting: (persisted) =>
      control.passiveUntil === null ||
      (!control.restsAsStored && !(persisted as { state?: unknown } | null)?.state)
        ? null
        : {
            wakeAt: control.passiveUntil,
            stateValue: OPEN,
            confirmedAt: T,
            pollDeferrableUntil: control.pollDeferrableUntil,
          },
  };
  const metrics: OrderHostMetrics = {
    ...noMetrics,
    orderPassivated: () => void counts.passivated++,
    orderReactivated: (reason) => void counts.reactivated.push(reason),
    pollDeferred: () => void counts.deferred++,
  };
  const host = hostOver(
    { store, writer, leases, binding },
    {
      now: () => Date.now() + control.lateMs,
      metrics,
      passivateIdleMs: opts.passivateIdleMs ?? idleMs,
      callInFlight: () => control.callInFlight,
      pollsMayWait: () => control.saturated,
    },
  );
  host.setAssignment([0]);
  let offset = 0;
  const send = (value: unknown) =>
    host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(offset++),
      key: 'o-1',
      value: Buffer.from(JSON.stringify(value)),
    });
  const states = () => written.filter((r) => r.topic === 'state').length;
  const events = () =>
    written.filter((r) => r.topic === 'events').map((r) => JSON.parse(r.value) as Record<string, unknown>);
  /** The order restored from its record (a partition assigned) and its first record written. */
  const start = async (overrides: Partial<OrderRecord> = {}) => {
    records.set('o-1', openRecord('o-1', 0, overrides));
    await host.onAssignment([], [0]);
    await settle();
  };
  return { host, log, sent, restoredFrom, control, lease, counts, send, states, events, records, start };
}

/** The real machine and XState binding in the host, over in-memory stand-ins; the order created and written. */
async function realMachineHost(opts: {
  passivateIdleMs: number;
  fetchOrder?: () => Promise<void>;
  /** The status each GET answers (the order as created, INITIAL, unless given); 'fail': the GET fails. */
  answers?: () => string;
  /** The host makes a resting order's routine poll without waking it (OrderHostOptions.pollResting). */
  pollsAtRest?: boolean;
  /** Awaited by each poll made at rest before it answers. */
  restPoll?: () => Promise<void>;
  /** Awaited by the address check and the deposit submission before they answer (the runtime's wait for durability). */
  callWait?: () => Promise<void>;
  /** Awaited by the address check instead of callWait (the runtime's answers at once once the catalog is cached). */
  addressCheck?: () => Promise<void>;
  /** Orders created, o-1 to o-<orders> (default 1), each with its own exchange order EXREF<n>. */
  orders?: number;
  /** The exchange order of o-<n> as created, beyond its reference (say, a payment deadline of its own). */
  exchangeOrderOf?: (n: number) => Partial<ReturnType<typeof exchangeOrder>>;
  /** OrderHostOptions.maxPollsAtRest. */
  maxPollsAtRest?: number;
  /** Fields of the order.create commands beyond the fixtures' createCommand (say, another mode). */
  command?: Record<string, unknown>;
  /** Awaited by the quote slot's acquisition before it is granted, and by the quote request before it answers. */
  slotWait?: () => Promise<void>;
  quoteWait?: () => Promise<void>;
}) {
  const records = new Map<string, OrderRecord>();
  const polls: number[] = [];
  const stateRecords: Array<{ machine: unknown }> = [];
  const store = memoryStore(records);
  const writer = {
    write: (out: OutboundRecord[]) => {
      for (const r of out)
        if (r.topic === 'state') stateRecords.push(JSON.parse(r.value) as { machine: unknown });
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const leases: OrderLeases = withSuspend({
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  });
  const counted: OrderLeases = {
    ...leases,
    keepAgain: (...args) => (leaseCalls.keepAgain++, leases.keepAgain(...args)),
    resume: (...args) => (leaseCalls.resume++, leases.resume(...args)),
  };
  const orderOf = (orderId: string) => {
    const n = Number(orderId.slice('o-'.length));
    return exchangeOrder({ uniqueReference: `EXREF${n}`, status: 'INITIAL', ...opts.exchangeOrderOf?.(n) });
  };
  const at = () => Date.now();
  /** The runtime's wait for the order's record before a call that may change the order (exchange-actors). */
  let durable = (orderId: string): Promise<void> => Promise.reject(new Error(`${orderId}: no host yet`));
  const answer = (orderId: string) => {
    const order = orderOf(orderId);
    const status = opts.answers?.() ?? order.status;
    // Thrown as the runtime's actors throw an exchange failure (a plain ExchangeFailure, stamped).
    // eslint-disable-next-line @typescript-eslint/only-throw-error
    if (status === 'fail') throw { ...failure('backoff', { code: 'http_503' }), at: at() };
    return { order: status === order.status ? order : { ...order, status }, at: at() };
  };
  /** Polls made at rest: of which order, when, and whether the host aborted the GET (the order woke meanwhile). */
  const restPolls: Array<{ orderId: string; at: number; signal: AbortSignal }> = [];
  const deferred: string[] = [];
  const leaseCalls = { keepAgain: 0, resume: 0 };
  const reactivated: string[] = [];
  const atRest: string[] = [];
  const binding = createXStateBinding({
    orderConfig: {},
    actors: {
      checkAddress: async () => {
        await (opts.addressCheck ?? opts.callWait)?.();
        return { ok: true, at: at() };
      },
      preScreen: () => Promise.reject(new Error('not used')),
      acquireQuoteSlot: async () => {
        await opts.slotWait?.();
        return { granted: true, at: at() };
      },
      requestQuote: async () => {
        await opts.quoteWait?.();
        return { rateId: 'r', rate: '0.05', expiresAt: at() + 60_000, at: at() };
      },
      createOrder: async (input) => {
        await durable(input.orderId);
        return { order: orderOf(input.orderId), reused: false, at: at() };
      },
      findExistingOrder: () => Promise.reject(new Error('not used')),
      adoptOrder: () => Promise.reject(new Error('not used')),
      submitDeposit: async () => {
        await opts.callWait?.();
        return { alreadyRecorded: false, at: at() };
      },
      fetchOrder: async (input) => {
        polls.push(at());
        await opts.fetchOrder?.();
        return answer(input.orderId);
      },
    },
  });
  let passivated = 0;
  const host = hostOver(
    { store, writer, leases: counted, binding },
    {
      now: () => Date.now(),
      passivateIdleMs: opts.passivateIdleMs,
      metrics: {
        ...noMetrics,
        orderPassivated: () => void passivated++,
        orderReactivated: (reason) => void reactivated.push(reason),
        polledAtRest: (outcome) => void atRest.push(outcome),
        pollDeferred: (reason) => void deferred.push(reason),
      },
      ...(opts.maxPollsAtRest === undefined ? {} : { maxPollsAtRest: opts.maxPollsAtRest }),
      ...(opts.pollsAtRest
        ? {
            pollResting: async (request, mayAsk, signal) => {
              const { uniqueReference } = orderOf(request.orderId);
              expect(request).toEqual({ orderId: request.orderId, mode: 'cefi', uniqueReference });
              restPolls.push({ orderId: request.orderId, at: at(), signal });
              await opts.restPoll?.();
              mayAsk();
              return answer(request.orderId);
            },
          }
        : {}),
    },
  );
  durable = (orderId) => host.durable(orderId);
  host.setAssignment([0]);
  for (let n = 1; n <= (opts.orders ?? 1); n++)
    await host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(n - 1),
      key: `o-${n}`,
      value: Buffer.from(
        JSON.stringify({ ...createCommand, ...opts.command, command_id: `c-${n}`, order_id: `o-${n}` }),
      ),
    });
  await settle();
  return {
    host,
    polls,
    stateRecords,
    records,
    passivated: () => passivated,
    restPolls,
    leaseCalls,
    reactivated,
    atRest,
    deferred,
  };
}

/** The harness's order, rested (passivated) and left until its suspended lease is no longer valid locally. */
async function restingWithLapsedLease(resumeAs: 'same' | 'next' | 'jump' | 'held' = 'same') {
  const h = harness();
  await h.start();
  await vi.advanceTimersByTimeAsync(idleMs);
  h.lease.stillValid = false;
  h.lease.resumeAs = resumeAs;
  return h;
}

describe('order host: passivation', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      now: T,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops the actor of an order that only waits once it has been quiet for the idle time, and keeps the order', async () => {
    const h = harness();
    await h.start();
    expect(h.log).toEqual(['restore']);
    await vi.advanceTimersByTimeAsync(idleMs - 1);
    expect(h.log).toEqual(['restore']);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.log).toEqual(['restore', 'stop']);
    expect(h.host.activeOrders).toBe(1);
    expect(h.host.passivatedOrders).toBe(1);
    expect(h.counts.passivated).toBe(1);
    // Still counted in its state, still ours to act for.
    expect(h.host.openOrdersByState()).toEqual(new Map([['open.deposit.awaiting+exchange.monitoring', 1]]));
    expect(h.host.mayAct('o-1')).toBe(true);
  });

  it('keeps an order live while it is not only waiting, or when passivation is off', async () => {
    const busy = harness();
    busy.control.passiveUntil = null;
    await busy.start();
    await vi.advanceTimersByTimeAsync(10 * idleMs);
    expect(busy.log).toEqual(['restore']);

    const off = harness({ passivateIdleMs: 0 });
    await off.start();
    await vi.advanceTimersByTimeAsync(10 * idleMs);
    expect(off.log).toEqual(['restore']);
    expect(off.host.passivatedOrders).toBe(0);
  });

  it('never passivates an order while one of its exchange calls is in flight, and does once it ended', async () => {
    const h = harness();
    h.control.callInFlight = true;
    await h.start();
    await vi.advanceTimersByTimeAsync(3 * idleMs);
    expect(h.log).toEqual(['restore']);
    expect(h.host.passivatedOrders).toBe(0);
    h.control.callInFlight = false;
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.log).toEqual(['restore', 'stop']);
  });

  it('re-creates the actor from the durable record at its deadline, without writing a record for it', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    const written = h.states();
    const durable = h.records.get('o-1')?.machine;
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now() - 1);
    expect(h.log).toEqual(['restore', 'stop']);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.log).toEqual(['restore', 'stop', 'restore']);
    // The record this replica wrote last, the very object the state store holds: no second copy was kept.
    expect(h.restoredFrom.at(-1)).toBe(durable);
    expect(h.counts.reactivated).toEqual(['timer']);
    expect(h.host.passivatedOrders).toBe(0);
    await settle();
    expect(h.states()).toBe(written);
  });

  it('restores an order stored resting without an actor and without writing its record, and wakes it at its deadline', async () => {
    const h = harness();
    h.control.restsAsStored = true;
    await h.start();
    expect(h.log).toEqual([]);
    expect(h.lease.acquires).toBe(1);
    expect(h.states()).toBe(0);
    expect(h.host.activeOrders).toBe(1);
    expect(h.host.passivatedOrders).toBe(1);
    expect(h.host.mayAct('o-1')).toBe(true);
    expect(h.host.openOrdersByState()).toEqual(new Map([['open.deposit.awaiting+exchange.monitoring', 1]]));
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now() - 1);
    expect(h.log).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.log).toEqual(['restore']);
    expect(h.restoredFrom).toEqual([{ fake: true }]);
    expect(h.counts.reactivated).toEqual(['timer']);
    expect(h.host.passivatedOrders).toBe(0);
  });

  it('restores a stored resting order live when passivation is off, and a halted one always', async () => {
    const off = harness({ passivateIdleMs: 0 });
    off.control.restsAsStored = true;
    await off.start();
    expect(off.log).toEqual(['restore']);
    expect(off.host.passivatedOrders).toBe(0);

    const halted = harness();
    halted.control.restsAsStored = true;
    halted.records.set(
      'o-1',
      openRecord('o-1', 0, {
        halted: { code: 'actor_error', message: 'boom', at: new Date(T).toISOString() },
      }),
    );
    await halted.host.onAssignment([], [0]);
    await settle();
    expect(halted.log).toEqual(['restore']);
  });

  it('wakes an order restored at rest for a webhook hint and hands it the hint after the restore', async () => {
    const h = harness();
    h.control.restsAsStored = true;
    await h.start();
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() })).toBe(
      true,
    );
    expect(h.log).toEqual(['restore', 'send:WEBHOOK_HINT']);
    expect(h.counts.reactivated).toEqual(['hint']);
    // Its first change is written, under the fence this replica's lease gave it.
    await settle();
    expect(h.states()).toBe(1);
    expect(h.records.get('o-1')?.fence).toBe(2);
  });

  it('leaves a passivated order at rest for a hint offered to live actors only (wake: false)', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    const logged = h.log.length;
    const hint = { orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() };
    expect(h.host.deliverHint(hint, { wake: false })).toBe(false);
    expect(h.log.slice(logged)).toEqual([]);
    expect(h.counts.reactivated).toEqual([]);
    expect(h.host.passivatedOrders).toBe(1);
    // Offered again as a routed hint, it wakes the order as before.
    expect(h.host.deliverHint(hint)).toBe(true);
    expect(h.log.slice(logged)).toEqual(['restore', 'send:WEBHOOK_HINT']);
  });

  it('wakes a passivated order for a webhook hint and hands it the hint after the restore', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() })).toBe(
      true,
    );
    expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:WEBHOOK_HINT']);
    expect(h.counts.reactivated).toEqual(['hint']);
    // The hint's transition is written like any other.
    const before = h.states();
    await settle();
    expect(h.states()).toBe(before + 1);
  });

  it('wakes a passivated order for a bulk listing row and hands it the listing after the restore', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.log).toEqual(['restore', 'stop']);
    // Resting, it still counts as an open exchange order of its mode: the listing walks that mode and the
    // freshness gauge counts it.
    expect(h.host.drivesOpenOrders('cefi')).toBe(true);
    expect(h.host.confirmationFreshness(T + idleMs, 60_000)).toEqual({ open: 1, overdue: 0 });
    // Without the wake the row was 'not_here' and the resting CeFi order polled on its own, one GET each.
    expect(h.host.deliverListing({ uniqueReference: 'REF', status: 'AWAITING', at: T + idleMs })).toBe(
      'confirmed',
    );
    expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:LISTED']);
    expect(h.counts.reactivated).toEqual(['listing']);
  });

  it('wakes a passivated order for its order.cancel and order.submit_deposit, in order, each written with its offset', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    await h.send({
      type: 'order.submit_deposit',
      command_id: 'c-7',
      order_id: 'o-1',
      tx_hash: '0xabcdef0123',
    });
    expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:SUBMIT_DEPOSIT']);
    expect(h.sent).toMatchObject([{ type: 'SUBMIT_DEPOSIT', txHash: '0xabcdef0123' }]);
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).toContain('c-7');
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.log.at(-1)).toBe('stop');
    await h.send({ type: 'order.cancel', command_id: 'c-8', order_id: 'o-1' });
    expect(h.log.slice(-2)).toEqual(['restore', 'send:CANCEL']);
    expect(h.counts.reactivated).toEqual(['command', 'command']);
    expect(h.events()).toEqual([]);
  });

  it("opens a command's process span linked to the order's first trace, whether the order is live or at rest", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    try {
      const first = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
      const h = harness();
      await h.start({ trace_origin: `00-${first.traceId}-${first.spanId}-01` });
      const linksOfProcess = () =>
        exporter
          .getFinishedSpans()
          .filter((span) => span.name === 'process commands')
          .map((span) => span.links.map((link) => link.context.spanId));
      // Live: the trail carries the origin.
      await h.send({ type: 'order.cancel', command_id: 'c-7', order_id: 'o-1' });
      // At rest there is no trail: the origin comes from the record.
      await vi.advanceTimersByTimeAsync(idleMs);
      expect(h.log.at(-1)).toBe('stop');
      await h.send({
        type: 'order.submit_deposit',
        command_id: 'c-8',
        order_id: 'o-1',
        tx_hash: '0xabcdef0123',
      });
      expect(h.counts.reactivated).toEqual(['command']);
      expect(linksOfProcess()).toEqual([[first.spanId], [first.spanId]]);
    } finally {
      trace.disable();
      await provider.shutdown();
    }
  });

  it('reloads a passivated order whose lease was lost from Kafka under a new lease, at rest as stored', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    h.control.leaseValid = false;
    h.lease.onLost?.();
    await settle();
    // Stopped, a fresh lease taken, restored from the latest record (a barrier read first) - which rests, so
    // as a new resting slot, not a wake of the old one.
    expect(h.lease.acquires).toBe(2);
    expect(h.log).toEqual(['restore', 'stop']);
    expect(h.host.passivatedOrders).toBe(1);
    expect(h.counts.reactivated).toEqual([]);
    // The new slot wakes on its own, once, at the deadline.
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    expect(h.log).toEqual(['restore', 'stop', 'restore']);
    expect(h.counts.reactivated).toEqual(['timer']);
  });

  it('suspends the lease of a resting order instead of renewing it, and keeps it again without Redis on a wake within its validity', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.lease.suspends).toBe(1);
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() })).toBe(
      true,
    );
    // Synchronous: the lease kept again, the actor re-created and the hint delivered, nothing asked of Redis.
    expect(h.lease.keptAgain).toBe(1);
    expect(h.lease.resumes).toEqual([]);
    expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:WEBHOOK_HINT']);
  });

  it.each([
    ['still ours in Redis', 'same', 2],
    ['taken again right after it ran out', 'next', 3],
  ] as const)(
    'takes a suspended lease up again from Redis once it ran out (%s), then wakes the order from its record and hands it the hint',
    async (_case, resumeAs, fence) => {
      const h = await restingWithLapsedLease(resumeAs);
      expect(
        h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() }),
      ).toBe(true);
      expect(h.sent).toEqual([]);
      await settle();
      expect(h.lease.resumes).toEqual([2]);
      expect(h.lease.acquires).toBe(1);
      expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:WEBHOOK_HINT']);
      expect(h.counts.reactivated).toEqual(['hint']);
      // Its next record goes out under the fence it holds now.
      expect(h.records.get('o-1')?.fence).toBe(fence);
    },
  );

  it.each([
    ['another replica held the lease in between (its fence jumped)', 'jump' as const, false],
    ['another replica holds it now', 'held' as const, false],
    ['the state topic holds a newer record than the one it rests with', 'same' as const, true],
  ])(
    'reloads a resting order from Kafka under the lease when %s, live, and hands the hint to the reloaded actor',
    async (_case, resumeAs, newerOnTopic) => {
      const h = await restingWithLapsedLease(resumeAs);
      const rested = h.records.get('o-1');
      if (!rested) throw new Error('no record');
      if (newerOnTopic) h.records.set('o-1', { ...rested, rev: rested.rev + 1, seq: rested.seq + 1 });
      h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() });
      await settle();
      // Not woken from the record it rested with: a fresh lease (acquire), a barrier read, then restored live
      // from the latest record, which then takes the hint.
      expect(h.lease.acquires).toBe(2);
      expect(h.counts.reactivated).toEqual([]);
      expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:WEBHOOK_HINT']);
      expect(h.host.passivatedOrders).toBe(0);
    },
  );

  it('wakes a resting order whose lease ran out for its command: the command waits for the lease and is decided on the live order', async () => {
    const h = await restingWithLapsedLease();
    await h.send({
      type: 'order.submit_deposit',
      command_id: 'c-9',
      order_id: 'o-1',
      tx_hash: '0xabcdef0123',
    });
    expect(h.lease.resumes).toEqual([2]);
    expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:SUBMIT_DEPOSIT']);
    expect(h.records.get('o-1')?.commands.map(([id]) => id)).toContain('c-9');
  });

  it('wakes a resting order whose lease ran out for a listing row, and answers for the row once it is live', async () => {
    const h = await restingWithLapsedLease();
    const outcome = h.host.deliverListing({ uniqueReference: 'REF', status: 'AWAITING', at: Date.now() });
    expect(outcome).toBeInstanceOf(Promise);
    expect(await outcome).toBe('confirmed');
    expect(h.log).toEqual(['restore', 'stop', 'restore', 'send:LISTED']);
  });

  it('unloads a passivated order of a revoked partition, releases its lease and forgets its deadline', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    h.host.setAssignment([]);
    await settle();
    expect(h.host.activeOrders).toBe(0);
    expect(h.host.passivatedOrders).toBe(0);
    // Its suspended lease freed by its token, so the next owner does not wait for it to run out.
    expect(h.lease.releasedSuspended).toEqual([2]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.log).toEqual(['restore', 'stop']);
  });

  it('puts a routine poll off in 5 s steps while the replica is saturated, never past its bound, and polls at once when it is not', async () => {
    const h = harness();
    h.control.pollDeferrableUntil = T + 58_000;
    h.control.saturated = true;
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.log).toEqual(['restore', 'stop']);
    // Due at 30 s; saturated: 35, 40, 45, 50, 55 s, then the bound at 58 s, where it wakes whatever the load.
    await vi.advanceTimersByTimeAsync(T + 58_000 - Date.now() - 1);
    expect(h.log).toEqual(['restore', 'stop']);
    expect(h.counts.deferred).toBe(6);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.log).toEqual(['restore', 'stop', 'restore']);
    expect(h.counts.reactivated).toEqual(['timer']);
  });

  it('polls at the next step once the replica is no longer saturated', async () => {
    // Saturated at 30 s: put off to 35 s; no longer at 35 s: polled then.
    const eased = harness();
    eased.control.pollDeferrableUntil = T + 58_000;
    eased.control.saturated = true;
    await eased.start();
    await vi.advanceTimersByTimeAsync(T + 31_000 - Date.now());
    eased.control.saturated = false;
    await vi.advanceTimersByTimeAsync(T + 35_000 - Date.now());
    expect(eased.log).toEqual(['restore', 'stop', 'restore']);
    expect(eased.counts.deferred).toBe(1);
  });

  it('keeps each deferred poll at its own phase within the step, so polls put off together do not come due together', async () => {
    const h = harness();
    h.control.passiveUntil = T + 31_700;
    h.control.pollDeferrableUntil = T + 58_000;
    h.control.saturated = true;
    await h.start();
    // Every timer fires 1.3 s late by the host's clock (a busy event loop): the poll due at 31.7 s runs at 33 s. It
    // is put off whole steps from where it was due - 36.7, then 41.7 s (not 38 and 43 s) - and the load eases after
    // 40 s: polled at 41.7 s.
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.log).toEqual(['restore', 'stop']);
    h.control.lateMs = 1_300;
    const hostNow = (): number => Date.now() + h.control.lateMs;
    await vi.advanceTimersByTimeAsync(T + 40_000 - hostNow());
    h.control.saturated = false;
    await vi.advanceTimersByTimeAsync(T + 41_700 - hostNow() - 1);
    expect(h.log).toEqual(['restore', 'stop']);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.log).toEqual(['restore', 'stop', 'restore']);
    expect(h.counts.deferred).toBe(2);
  });

  it('never puts off a wake that is not only a routine poll, however saturated the replica', async () => {
    const h = harness();
    h.control.pollDeferrableUntil = null;
    h.control.saturated = true;
    await h.start();
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    expect(h.log).toEqual(['restore', 'stop', 'restore']);
    expect(h.counts.deferred).toBe(0);
  });

  it('wakes a passivated order whose deadline is long overdue from the reconciliation sweep', async () => {
    const h = harness();
    await h.start();
    await vi.advanceTimersByTimeAsync(idleMs);
    h.host.reconcile(T + 30_000 + 60_001, 60_000);
    expect(h.log).toEqual(['restore', 'stop', 'restore']);
    expect(h.counts.reactivated).toEqual(['reconcile']);
  });

  it('with the real machine: a command handled writes its record once, not again for the same transition', async () => {
    // The command's own write (its offset, its events) and the write each transition schedules both ran for one
    // change: the second wrote a record identical to the first but for its rev.
    const { host, stateRecords } = await realMachineHost({
      passivateIdleMs: 0,
      // As in the runtime, the calls answer after the write before them was asked for; the address check (local,
      // the catalog cached) at once.
      callWait: () => new Promise((resolve) => setImmediate(resolve)),
      addressCheck: () => Promise.resolve(),
    });
    await host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: '1',
      key: 'o-1',
      value: Buffer.from(
        JSON.stringify({
          type: 'order.submit_deposit',
          command_id: 'c-2',
          order_id: 'o-1',
          tx_hash: '0xabcdef0123',
        }),
      ),
    });
    await settle();
    const forms = stateRecords.map((r) => JSON.stringify(r.machine));
    const repeated = forms.filter((form, i) => i > 0 && form === forms[i - 1]);
    expect(repeated).toEqual([]);
    const states = stateRecords.map((r) => (r.machine as { resumeFrom: string }).resumeFrom);
    // The first record is the create's intent: the address check (local) ran before it, the POST waited for it.
    expect(states[0]).toBe('creating.posting');
    // The deposit command was written (its offset and the deposit noted), and its call's answer after it.
    expect(states.slice(-2)).toEqual(['open', 'open']);
    expect(new Set(forms.slice(-3)).size).toBe(3);
  });

  it('with the real machine: a command delivered while a call waits writes its record once (a cancel during the address check)', async () => {
    // The cancel's own write (its offset, the order.canceled event) and the write its transition scheduled: the
    // terminal form was written twice.
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { host, stateRecords } = await realMachineHost({ passivateIdleMs: 0, callWait: () => gate });
    await host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: '1',
      key: 'o-1',
      value: Buffer.from(JSON.stringify({ type: 'order.cancel', command_id: 'c-3', order_id: 'o-1' })),
    });
    await settle();
    release();
    await settle();
    const states = stateRecords.map((r) => (r.machine as { resumeFrom: string }).resumeFrom);
    expect(states).toEqual(['checkingAddress.calling', 'canceled']);
  });

  it('with the real machine: a DeFi order writes no record for the grant of its quote slot (the quote is written with the create intent)', async () => {
    // The grant only moved the order into quoting.requesting (a GET): a restart routes that form and the one
    // before it alike, to a fresh slot request. It was written as a record of its own for every actionable quote.
    const { stateRecords } = await realMachineHost({
      passivateIdleMs: 0,
      command: { mode: 'defi' },
      // The slot is granted after the command's own write was asked for (a Redis round trip in the runtime).
      slotWait: () => new Promise((resolve) => setImmediate(resolve)),
      // The quote request leaves after the order's pending write (the runtime's wait for durability).
      quoteWait: () => new Promise((resolve) => setImmediate(resolve)),
    });
    const states = stateRecords.map((r) => (r.machine as { resumeFrom: string }).resumeFrom);
    expect(states).toEqual(['quoting.acquiringSlot', 'creating.posting', 'open']);
    expect(stateRecords[1]?.machine).toMatchObject({
      context: { quote: { rateId: 'r' }, pendingIntent: { kind: 'create', rateId: 'r' } },
    });
  });

  it('with the real machine: the poll start of a live order writes nothing, its GET waits for no write, and its answer is written', async () => {
    let answer = (): void => {};
    const pending = new Promise<void>((resolve) => (answer = resolve));
    const { host, polls, stateRecords } = await realMachineHost({
      passivateIdleMs: 0,
      fetchOrder: () => pending,
      answers: () => 'PAID',
    });
    const writes = stateRecords.length;
    expect(
      host.deliverHint({ orderId: 'o-1', status: 'COMPLETED', receivedAt: new Date().toISOString() }),
    ).toBe(true);
    await settle();
    // The GET left at once and nothing was written for the poll's start.
    expect(polls).toHaveLength(1);
    expect(stateRecords.length).toBe(writes);
    answer();
    await settle();
    expect(stateRecords.length).toBe(writes + 1);
    expect(stateRecords.at(-1)?.machine).toMatchObject({
      stateValue: { open: { deposit: 'awaiting', exchange: 'monitoring' } },
      context: { pollStartedAt: null },
    });
  });

  it('with the real machine: a hint naming an open status wakes a resting order, which stays live without a write until its GET', async () => {
    const {
      host,
      polls,
      stateRecords,
      passivated: passivatedCount,
    } = await realMachineHost({ passivateIdleMs: idleMs, answers: () => 'PAID' });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(host.passivatedOrders).toBe(1);
    const writes = stateRecords.length;
    const hintAt = Date.now();
    expect(host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() })).toBe(
      true,
    );
    await settle();
    // Woken, no GET yet, and nothing written: a hint is best effort, and a write would delay the GET of an end
    // that often follows at once. Not passivated again while the hint waits (the record does not know of it).
    expect(polls).toEqual([]);
    await vi.advanceTimersByTimeAsync(3_000 - 1);
    expect(polls).toEqual([]);
    expect(stateRecords.length).toBe(writes);
    expect(passivatedCount()).toBe(1);
    expect(host.passivatedOrders).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(polls).toHaveLength(1);
    expect(polls[0]).toBeGreaterThanOrEqual(hintAt + 3_000);
    // Its answer (the status hinted) is written, and the order rests again.
    expect(stateRecords.length).toBe(writes + 1);
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(passivatedCount()).toBe(2);
  });

  it('with the real machine: a listing row that confirms a resting order moves its poll without waking it, and the wake hands the machine that listing', async () => {
    const {
      host,
      polls,
      stateRecords,
      passivated: passivatedCount,
    } = await realMachineHost({ passivateIdleMs: idleMs });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(host.passivatedOrders).toBe(1);
    const writes = stateRecords.length;
    // Two listing rounds confirm it at rest: no actor, no write, no lease taken up again.
    const first = T + 20_000;
    await vi.advanceTimersByTimeAsync(first - Date.now());
    expect(host.deliverListing({ uniqueReference: 'EXREF1', status: 'INITIAL', at: first })).toBe(
      'confirmed',
    );
    const second = T + 25_000;
    await vi.advanceTimersByTimeAsync(second - Date.now());
    expect(host.deliverListing({ uniqueReference: 'EXREF1', status: 'INITIAL', at: second })).toBe(
      'confirmed',
    );
    // A page older than the latest confirmation tells nothing (the machine ignores a stale page too).
    expect(host.deliverListing({ uniqueReference: 'EXREF1', status: 'INITIAL', at: first })).toBe('ignored');
    expect(host.passivatedOrders).toBe(1);
    expect(passivatedCount()).toBe(1);
    expect(stateRecords.length).toBe(writes);
    expect(host.confirmationFreshness(second, 10_000)).toEqual({ open: 1, overdue: 0 });
    // The poll that was due 30 s after creation does not come: the next is 60 s after the latest listing.
    await vi.advanceTimersByTimeAsync(second + 60_000 - Date.now() - 1);
    expect(polls).toEqual([]);
    expect(host.passivatedOrders).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(10);
    await settle();
    expect(polls).toHaveLength(1);
    expect(polls[0]).toBeGreaterThanOrEqual(second + 60_000);
    expect(polls[0]).toBeLessThan(second + 60_010);
    // The machine took the listing when it woke, and the poll's answer confirmed the order once more: neither is
    // written (both only confirm the record), and the order rests with the poll's confirmation, its next poll 30 s
    // after it.
    expect(stateRecords.length).toBe(writes);
    expect(host.confirmationFreshness(polls[0]! + 1, 100)).toEqual({ open: 1, overdue: 0 });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(host.passivatedOrders).toBe(1);
    await vi.advanceTimersByTimeAsync(polls[0]! + 30_000 - Date.now() + 10);
    await settle();
    expect(polls).toHaveLength(2);
    expect(polls[1]).toBeGreaterThanOrEqual(polls[0]! + 30_000);
  });

  it('with the real machine: a listing row with another status wakes the resting order, which GETs it', async () => {
    const { host, polls } = await realMachineHost({ passivateIdleMs: idleMs });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(host.passivatedOrders).toBe(1);
    const outcome = await host.deliverListing({ uniqueReference: 'EXREF1', status: 'PAID', at: Date.now() });
    expect(outcome).toBe('differed');
    await settle();
    expect(host.passivatedOrders).toBe(0);
    expect(polls).toHaveLength(1);
  });

  it('with the real machine and polls at rest: a resting order due for its routine poll is polled without waking it; an answer that only confirms it moves its next poll, news wakes it with the answer, a failure wakes it to schedule its retry, which is made at rest too', async () => {
    let status = 'INITIAL';
    const h = await realMachineHost({ passivateIdleMs: idleMs, answers: () => status, pollsAtRest: true });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.passivated()).toBe(1);
    const writes = h.stateRecords.length;
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    await settle();
    // Polled at its deadline by the host: no actor, no lease taken up again, no GET of the machine's own, nothing
    // written; the confirmation is held as the order's record, so it rests until 30 s after the answer.
    expect(h.restPolls.map((p) => p.at)).toEqual([T + 30_000]);
    expect(h.polls).toEqual([]);
    expect(h.atRest).toEqual(['confirmed']);
    expect(h.reactivated).toEqual([]);
    expect(h.leaseCalls).toEqual({ keepAgain: 0, resume: 0 });
    expect(h.host.passivatedOrders).toBe(1);
    expect(h.stateRecords.length).toBe(writes);
    const held = h.records.get('o-1')?.machine as { context: { confirmedAt: number; nextPollAt: number } };
    expect(held.context).toMatchObject({ confirmedAt: T + 30_000, nextPollAt: T + 60_000 });
    await vi.advanceTimersByTimeAsync(30_000 - 1);
    expect(h.restPolls).toHaveLength(1);

    // News: woken with the answer, which the machine takes as its own poll's (no second GET), written.
    status = 'PAID';
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(h.restPolls.map((p) => p.at)).toEqual([T + 30_000, T + 60_000]);
    expect(h.polls).toEqual([]);
    expect(h.atRest).toEqual(['confirmed', 'news']);
    expect(h.reactivated).toEqual(['poll']);
    expect(h.stateRecords.length).toBe(writes + 1);
    expect(h.stateRecords.at(-1)?.machine).toMatchObject({
      stateValue: { open: { deposit: 'awaiting', exchange: 'monitoring' } },
      context: { lastStatus: 'PAID', confirmedAt: T + 60_000, nextPollAt: T + 90_000, pollAttempt: 0 },
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.host.passivatedOrders).toBe(1);

    // A failure: woken with it, the machine schedules its retry (written), and rests again until then.
    status = 'fail';
    await vi.advanceTimersByTimeAsync(T + 90_000 - Date.now());
    await settle();
    expect(h.restPolls).toHaveLength(3);
    expect(h.atRest).toEqual(['confirmed', 'news', 'failed']);
    expect(h.reactivated).toEqual(['poll', 'poll']);
    expect(h.stateRecords.length).toBe(writes + 2);
    const retrying = h.stateRecords.at(-1)?.machine as { context: { nextPollAt: number } };
    expect(retrying).toMatchObject({ context: { lastStatus: 'PAID', pollAttempt: 1 } });
    const retryAt = retrying.context.nextPollAt;
    expect(retryAt).toBeGreaterThanOrEqual(T + 120_000);
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.host.passivatedOrders).toBe(1);
    // The retry is made at rest, at the machine's time, like a routine poll (bounded by maxPollsAtRest); its answer
    // goes to the machine even when it only confirms the order (the machine clears its failure: written).
    status = 'PAID';
    await vi.advanceTimersByTimeAsync(retryAt - Date.now());
    await settle();
    expect(h.restPolls.map((p) => p.at)).toEqual([T + 30_000, T + 60_000, T + 90_000, retryAt]);
    expect(h.polls).toEqual([]);
    expect(h.atRest).toEqual(['confirmed', 'news', 'failed', 'news']);
    expect(h.reactivated).toEqual(['poll', 'poll', 'poll']);
    expect(h.stateRecords.length).toBe(writes + 3);
    expect(h.stateRecords.at(-1)?.machine).toMatchObject({
      context: { lastStatus: 'PAID', pollAttempt: 0, confirmedAt: retryAt, nextPollAt: retryAt + 30_000 },
    });
  });

  it('with the real machine and polls at rest: a poll at rest refused before it left (status reads at capacity) waits a step at rest, without waking the order or noting a failure', async () => {
    let refuse = true;
    const h = await realMachineHost({
      passivateIdleMs: idleMs,
      pollsAtRest: true,
      restPoll: () =>
        refuse
          ? Promise.reject(
              Object.assign(new Error('status reads at capacity'), {
                kind: 'exchange_failure',
                action: 'throttled',
                code: statusReadsAtCapacity,
                at: Date.now(),
              }),
            )
          : Promise.resolve(),
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    const writes = h.stateRecords.length;
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    await settle();
    expect(h.restPolls.map((p) => p.at)).toEqual([T + 30_000]);
    expect(h.reactivated).toEqual([]);
    expect(h.atRest).toEqual([]);
    expect(h.deferred).toEqual(['calls_at_capacity']);
    expect(h.stateRecords.length).toBe(writes);
    expect(h.host.passivatedOrders).toBe(1);
    refuse = false;
    await vi.advanceTimersByTimeAsync(5_000);
    await settle();
    expect(h.restPolls.map((p) => p.at)).toEqual([T + 30_000, T + 35_000]);
    expect(h.atRest).toEqual(['confirmed']);
    expect(h.reactivated).toEqual([]);
    expect(h.polls).toEqual([]);
  });

  it('with the real machine and polls at rest: the retries of polls that failed together are bounded by maxPollsAtRest like routine polls, none made by a woken machine', async () => {
    // An exchange outage: every poll fails. Each order is woken with its failure and schedules its retry; the
    // retries came due together and each woke its order for a GET of its own, all at once.
    let status = 'INITIAL';
    const gates: Array<() => void> = [];
    const h = await realMachineHost({
      passivateIdleMs: idleMs,
      answers: () => status,
      pollsAtRest: true,
      orders: 6,
      maxPollsAtRest: 2,
      restPoll: () => new Promise<void>((resolve) => gates.push(resolve)),
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.host.passivatedOrders).toBe(6);
    status = 'fail';
    // The routine polls at 30 s: two out at once; each failure lets the next one go.
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    for (let round = 0; round < 12 && h.atRest.length < 6; round++) {
      expect(gates.length).toBeLessThanOrEqual(2);
      for (const open of gates.splice(0)) open();
      await settle();
      await vi.advanceTimersByTimeAsync(5_000);
    }
    expect(h.atRest).toEqual(Array(6).fill('failed'));
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.host.passivatedOrders).toBe(6);
    // Their retries (at least 30 s later): again never more than two GETs out, all at rest, none by a machine.
    const retried = h.restPolls.length;
    let most = 0;
    for (let round = 0; round < 40 && h.restPolls.length < retried + 6; round++) {
      await vi.advanceTimersByTimeAsync(5_000);
      most = Math.max(most, gates.length);
      for (const open of gates.splice(0)) open();
      await settle();
    }
    expect(h.restPolls.length).toBe(retried + 6);
    expect(most).toBeLessThanOrEqual(2);
    expect(h.polls).toEqual([]);
  });

  it('with the real machine and polls at rest: an order woken while its poll at rest is out aborts that GET and ignores its answer', async () => {
    let release = (): void => {};
    const h = await realMachineHost({
      passivateIdleMs: idleMs,
      pollsAtRest: true,
      restPoll: () => new Promise<void>((resolve) => (release = resolve)),
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    expect(h.restPolls).toHaveLength(1);
    expect(h.restPolls[0]?.signal.aborted).toBe(false);
    const writes = h.stateRecords.length;
    // A webhook hint wakes it: the GET out for it is aborted, and the live order takes the hint.
    expect(h.host.deliverHint({ orderId: 'o-1', status: 'PAID', receivedAt: new Date().toISOString() })).toBe(
      true,
    );
    await settle();
    expect(h.reactivated).toEqual(['hint']);
    expect(h.restPolls[0]?.signal.aborted).toBe(true);
    release();
    await settle();
    // Its answer (had it come) is not taken: the live machine polls for itself.
    expect(h.atRest).toEqual([]);
    await vi.advanceTimersByTimeAsync(3_000);
    await settle();
    expect(h.polls).toHaveLength(1);
    expect(h.stateRecords.length).toBeGreaterThanOrEqual(writes);
  });

  it('with the real machine and polls at rest: no more polls at rest are out at once than maxPollsAtRest; an order due meanwhile waits at rest in 5 s steps, past 60 s after its last confirmation, and is polled once one is back', async () => {
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const h = await realMachineHost({
      passivateIdleMs: idleMs,
      pollsAtRest: true,
      orders: 3,
      maxPollsAtRest: 2,
      restPoll: () => gate,
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.passivated()).toBe(3);
    // All three are due at T + 30 s (created at T): two GETs go out, the third waits a step at rest.
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now());
    await settle();
    expect(h.restPolls.map((p) => p.at)).toEqual([T + 30_000, T + 30_000]);
    const waiting = ['o-1', 'o-2', 'o-3'].find((id) => !h.restPolls.some((p) => p.orderId === id));
    expect(h.deferred).toEqual(['calls_at_capacity']);
    // Still out at T + 95 s, 95 s after the orders were last confirmed: it keeps waiting, at rest, every 5 s.
    await vi.advanceTimersByTimeAsync(65_000);
    await settle();
    expect(h.restPolls).toHaveLength(2);
    expect(h.deferred).toEqual(Array<string>(14).fill('calls_at_capacity'));
    expect(h.reactivated).toEqual([]);
    expect(h.polls).toEqual([]);
    expect(h.host.passivatedOrders).toBe(3);
    // The two answers come back: the order that waited is polled at its next step, at rest.
    release();
    await settle();
    expect(h.atRest).toEqual(['confirmed', 'confirmed']);
    await vi.advanceTimersByTimeAsync(5_000);
    await settle();
    expect(h.restPolls.slice(2).map((p) => [p.orderId, p.at])).toEqual([[waiting, T + 100_000]]);
    expect(h.atRest).toEqual(['confirmed', 'confirmed', 'confirmed']);
    expect(h.reactivated).toEqual([]);
    expect(h.polls).toEqual([]);
  });

  it("with the real machine and polls at rest: a routine poll waiting for the polls out never waits past the order's next other deadline", async () => {
    const h = await realMachineHost({
      passivateIdleMs: idleMs,
      pollsAtRest: true,
      orders: 2,
      maxPollsAtRest: 1,
      restPoll: () => new Promise<void>(() => {}),
      // o-2's payment deadline comes 7 s after its routine poll was due.
      exchangeOrderOf: (n) => (n === 2 ? { fixedRateDeadline: new Date(T + 37_000).toISOString() } : {}),
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(h.passivated()).toBe(2);
    await vi.advanceTimersByTimeAsync(T + 35_000 - Date.now());
    await settle();
    expect(h.restPolls.map((p) => p.orderId)).toEqual(['o-1']);
    expect(h.deferred).toEqual(['calls_at_capacity', 'calls_at_capacity']);
    expect(h.reactivated).toEqual([]);
    // At its payment deadline it is woken, as for any deadline of its own, and its machine polls for itself.
    await vi.advanceTimersByTimeAsync(2_000);
    await settle();
    expect(h.reactivated).toEqual(['timer']);
    expect(h.polls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    await settle();
    expect(h.polls.length).toBeGreaterThan(0);
    expect(h.polls.every((at) => at >= T + 37_000 && at < T + 38_000)).toBe(true);
    expect(h.deferred).toHaveLength(2);
  });

  it('with the real machine: an open order rests between polls, at its next poll is re-created and polls; an answer that only confirms it is not written, one with news is', async () => {
    let status = 'INITIAL';
    const {
      host,
      polls,
      stateRecords,
      records,
      passivated: passivatedCount,
    } = await realMachineHost({
      passivateIdleMs: idleMs,
      answers: () => status,
    });
    expect([...host.openOrdersByState().keys()]).toEqual(['open.deposit.awaiting+exchange.monitoring']);
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(passivatedCount()).toBe(1);
    expect(host.passivatedOrders).toBe(1);
    expect([...host.openOrdersByState().keys()]).toEqual(['open.deposit.awaiting+exchange.monitoring']);
    const writes = stateRecords.length;
    await vi.advanceTimersByTimeAsync(T + 30_000 - Date.now() - 1);
    expect(polls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(host.passivatedOrders).toBe(0);
    // The machine's own poll timer, re-armed by the restore with the time that remains (none).
    await vi.advanceTimersByTimeAsync(10);
    await settle();
    expect(polls).toHaveLength(1);
    expect(polls[0]).toBeGreaterThanOrEqual(T + 30_000);
    expect(polls[0]).toBeLessThan(T + 30_010);
    // The answer shows the order as written: nothing is written for the wake, the poll's start or the answer (issue
    // 12: poll bookkeeping is not rewritten as a full record on every poll). The order rests with the confirmation
    // in memory, in the slot and in the store's record of the same rev.
    expect(stateRecords.length).toBe(writes);
    const held = records.get('o-1')?.machine as { context: { confirmedAt: number; nextPollAt: number } };
    expect(held.context.confirmedAt).toBe(polls[0]);
    expect(held.context.nextPollAt).toBe(polls[0]! + 30_000);
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(passivatedCount()).toBe(2);
    expect(host.passivatedOrders).toBe(1);
    // So it polls next 30 s after that answer (with the written record alone it would wake at once, and again).
    await vi.advanceTimersByTimeAsync(polls[0]! + 30_000 - Date.now() - 1);
    expect(polls).toHaveLength(1);
    status = 'PAID';
    await vi.advanceTimersByTimeAsync(11);
    await settle();
    expect(polls).toHaveLength(2);
    // News: written.
    expect(stateRecords.length).toBe(writes + 1);
    expect(stateRecords.at(-1)?.machine).toMatchObject({
      stateValue: { open: { deposit: 'awaiting', exchange: 'monitoring' } },
      context: { pollStartedAt: null, lastStatus: 'PAID' },
    });
    await vi.advanceTimersByTimeAsync(idleMs);
    expect(passivatedCount()).toBe(3);
  });
});
