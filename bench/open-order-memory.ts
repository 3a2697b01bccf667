// What an open order waiting for its deposit costs the order host, with passivation off (a live XState actor per
// order) and on (its durable record and one deadline): RSS and V8 heap after a forced GC, over the same process
// before the first order, per order. One process per mode (RSS does not shrink back within a process). In process,
// without Kafka or Redis: the real host, journal and XState binding over an in-memory store (which keeps each
// record object as the real state store does) and exchange calls that answer at once. Orders arrive in batches
// of 1000, as they would over time, so with passivation on only one batch is ever live. Needs --expose-gc:
//
//   node --expose-gc bench/open-order-memory.ts           # 20000 orders (BENCH_ORDERS), both modes
import { spawnSync } from 'node:child_process';
import type { OrderRecord, OrderStateStore } from '../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../src/kafka/transactional-writer.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { OrderHost } from '../src/worker/order-host.ts';
import type { OrderLeases } from '../src/worker/ports.ts';
import { OrderJournal } from '../src/worker/order-journal.ts';
import { createXStateBinding } from '../src/worker/xstate-binding.ts';
import { exchangeOrder } from '../test/unit/machines/order-harness.ts';
import { round, saveResult } from './lib/harness.ts';

export interface OpenOrderMemory {
  orders: number;
  passivation: boolean;
  rssKiBPerOrder: number;
  heapKiBPerOrder: number;
  passivated: number;
}

const batch = 1_000;

function collect(): { rss: number; heap: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed };
}

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The real order host, journal and XState binding over an in-memory store and writer, with exchange calls that
 * answer at once as if a day had passed, partition 0 assigned. Also the source of the restore benchmark's records.
 */
export function inProcessHost(passivation: boolean): {
  host: OrderHost;
  records: Map<string, OrderRecord>;
  created: () => number;
} {
  const records = new Map<string, OrderRecord>();
  /** Orders whose exchange order exists (counted here: counting the host's states each round is O(orders)). */
  let created = 0;
  const store = {
    get: (id: string) => records.get(id),
    apply: (record: OrderRecord) => {
      if (record.unique_reference !== null && !records.get(record.order_id)?.unique_reference) created++;
      records.set(record.order_id, record);
    },
    recordsOfPartition: () => [],
    catchUp: () => Promise.resolve(),
    release: () => {},
    orderIdByReference: () => undefined,
  } as unknown as OrderStateStore;
  // Serialised as the real writer does (the text is dropped once "sent").
  const writer = {
    write: (out: OutboundRecord[]) => Promise.resolve(out.length > 0),
  } as unknown as TransactionalWriter;
  const leases: OrderLeases = {
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
    suspend: () => Date.now(),
    keepAgain: () => true,
    resume: (_orderId, fence) => Promise.resolve({ fence }),
    releaseSuspended: () => Promise.resolve(),
  };
  const now = (): number => Date.now();
  // The exchange answers as if a day had passed: the machine takes its clock from the answers, so every order's
  // next poll and payment deadline lie a day ahead and no order wakes during the run (what a wake costs is the
  // throughput benchmark's business; this one measures orders at rest).
  const later = (): number => now() + 86_400_000;
  let references = 0;
  const binding = createXStateBinding({
    orderConfig: {},
    actors: {
      checkAddress: () => Promise.resolve({ ok: true, at: now() }),
      preScreen: () => Promise.reject(new Error('not used')),
      acquireQuoteSlot: () => Promise.resolve({ granted: true, at: now() }),
      requestQuote: () =>
        Promise.resolve({ rateId: 'r', rate: '0.05', expiresAt: now() + 60_000, at: now() }),
      createOrder: () =>
        Promise.resolve({
          order: exchangeOrder({
            uniqueReference: `R${(references++).toString(36).padStart(9, '0')}`,
            createdOn: new Date(later()).toISOString(),
          }),
          reused: false,
          at: later(),
        }),
      findExistingOrder: () => Promise.reject(new Error('not used')),
      adoptOrder: () => Promise.reject(new Error('not used')),
      submitDeposit: () => Promise.reject(new Error('not used')),
      fetchOrder: () => Promise.reject(new Error('not used: no poll within the run')),
    },
  });
  const logger = createLogger({ level: 'silent' });
  const host = new OrderHost({
    state: store,
    journal: new OrderJournal({ writer, store, topics: { events: 'events', state: 'state' }, now }),
    leases,
    binding: () => binding,
    logger,
    now,
    passivateIdleMs: passivation ? 50 : 0,
  });
  host.setAssignment([0]);
  return { host, records, created: () => created };
}

/** A CeFi order.create command for the i-th order of these benchmarks (its own deposit amount). */
export function createCommandValue(orderId: string, i: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      type: 'order.create',
      command_id: `${orderId}-c`,
      order_id: orderId,
      mode: 'cefi',
      deposit_currency: 'ETH',
      withdraw_currency: 'BTC',
      deposit_amount: (1 + i / 1e6).toFixed(8),
      withdraw_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
    }),
  );
}

async function measure(orders: number, passivation: boolean): Promise<OpenOrderMemory> {
  const { host, created } = inProcessHost(passivation);
  const open = (): number => [...host.openOrdersByState().values()].reduce((a, b) => a + b, 0);

  const base = collect();
  let offset = 0;
  for (let from = 0; from < orders; from += batch) {
    const upTo = Math.min(orders, from + batch);
    const sends: Array<Promise<void>> = [];
    for (let i = from; i < upTo; i++) {
      const orderId = `bench-${i.toString(36)}-xxxxxxxx`;
      sends.push(
        host.handleMessage({
          topic: 'commands',
          partition: 0,
          offset: String(offset++),
          key: orderId,
          value: createCommandValue(orderId, i),
        }),
      );
    }
    await Promise.all(sends);
    // Every order of the batch is open (waiting for its deposit) and, with passivation, passivated.
    for (let i = 0; i < 2_000; i++) {
      if (created() >= upTo && (!passivation || host.passivatedOrders >= upTo)) break;
      await tick(10);
    }
  }
  // V8 gives back pages it no longer needs some time after the last allocations (its memory reducer).
  collect();
  await tick(Number(process.env['BENCH_SETTLE_MS'] ?? 5_000));
  const after = collect();
  const result: OpenOrderMemory = {
    orders: open(),
    passivation,
    rssKiBPerOrder: round((after.rss - base.rss) / 1024 / orders, 2),
    heapKiBPerOrder: round((after.heap - base.heap) / 1024 / orders, 2),
    passivated: host.passivatedOrders,
  };
  await host.unloadAll();
  return result;
}

if (import.meta.filename === process.argv[1]) {
  const orders = Number(process.env['BENCH_ORDERS'] ?? 20_000);
  const mode = process.env['BENCH_PASSIVATION'];
  if (mode !== undefined) {
    // One mode in this process: the parent reads the JSON line.
    console.log(JSON.stringify(await measure(orders, mode === '1')));
    process.exit(0);
  }
  const results: OpenOrderMemory[] = [];
  for (const passivation of [false, true]) {
    const child = spawnSync(process.execPath, ['--expose-gc', import.meta.filename], {
      env: { ...process.env, BENCH_PASSIVATION: passivation ? '1' : '0' },
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    const line = child.stdout.trim().split('\n').at(-1) ?? '';
    if (child.status !== 0 || !line.startsWith('{')) throw new Error(`measurement failed: ${child.stderr}`);
    results.push(JSON.parse(line) as OpenOrderMemory);
  }
  console.log(`order host, ${orders} open orders waiting for their deposit: per order, after a forced GC`);
  for (const r of results)
    console.log(
      `  passivation ${r.passivation ? 'on ' : 'off'}  RSS ${r.rssKiBPerOrder} KiB  heap ${r.heapKiBPerOrder} KiB  (${r.orders} open, ${r.passivated} passivated)`,
    );
  console.log(`  wrote ${await saveResult('open-order-memory', results)}`);
}
