// Gathers what a fault run left behind into the invariant checker's RunHistory: the events the collector read,
// the state topic (read to its end, read_committed), the sandbox's exchange orders and throttle refusals, and the
// worker logs and events as texts to search for secrets.
import { readFileSync } from 'node:fs';
import type { Kafka } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { demoKeys, demoReferral, type SandboxHandle } from '../../sandbox/index.ts';
import type {
  AcceptedOrder,
  ExchangeOrderRecord,
  RunHistory,
  SpanView,
  StateRecordView,
  SubmittedDeposit,
} from './invariants.ts';
import type { PublishedEvent } from './kafka-helpers.ts';
import { uniqueName } from './unique-name.ts';
import { webhookSecret } from './worker-environment.ts';
import type { WorkerProcess } from './worker-process.ts';

/** Every secret the test environment hands the workers. */
export const environmentSecrets: string[] = [
  demoKeys.defi,
  demoKeys.cefi,
  demoKeys.cefiFixed,
  demoReferral.token,
  webhookSecret,
];

/**
 * The sandbox's exchange orders, each with the amounts its creating request gave (the sandbox's own record of what
 * was asked) where it has them: an exchange that stores 8 digits answers other amounts than an 18-digit command
 * sent, and the checker attributes exchange orders to commands by what was sent.
 */
export function exchangeOrdersOf(sandbox: SandboxHandle): ExchangeOrderRecord[] {
  return sandbox.orders.list().map((view) => {
    const text = (key: string): string => {
      const value = view.order[key];
      return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
    };
    return {
      uniqueReference: text('unique_reference'),
      mode: view.mode,
      depositCurrency: text('deposit_currency'),
      withdrawCurrency: text('withdraw_currency'),
      withdrawAddress: text('withdraw_address'),
      depositAmount: view.requested.depositAmount ?? text('deposit_amount'),
      withdrawAmount: view.requested.withdrawAmount ?? text('withdraw_amount'),
    };
  });
}

interface RawState {
  order_id?: unknown;
  seq?: unknown;
  terminal?: unknown;
  unique_reference?: unknown;
  fence?: unknown;
  rev?: unknown;
}

/** Reads a topic from the beginning until it has been quiet for `quietMs` (read_committed). */
export async function readStateTopic(
  kafka: Kafka,
  topic: string,
  quietMs = 3_000,
): Promise<StateRecordView[]> {
  const latest = new Map<string, { fence: number; rev: number; view: StateRecordView }>();
  const consumer = kafka.consumer({
    groupId: uniqueName('state-reader'),
    readUncommitted: false,
    maxWaitTimeInMs: 100,
  });
  let lastMessageAt = Date.now();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ message }) => {
        lastMessageAt = Date.now();
        if (!message.value) return Promise.resolve();
        const raw = JSON.parse(message.value.toString()) as RawState;
        if (typeof raw.order_id !== 'string') return Promise.resolve(); // barrier records
        const fence = Number(raw.fence ?? 0);
        const rev = Number(raw.rev ?? 0);
        const current = latest.get(raw.order_id);
        if (current && (current.fence > fence || (current.fence === fence && current.rev > rev)))
          return Promise.resolve();
        latest.set(raw.order_id, {
          fence,
          rev,
          view: {
            orderId: raw.order_id,
            seq: Number(raw.seq ?? -1),
            terminal: raw.terminal === true,
            uniqueReference: typeof raw.unique_reference === 'string' ? raw.unique_reference : null,
          },
        });
        return Promise.resolve();
      },
    });
    // The group must first join and fetch; then wait for a quiet spell.
    await sleep(quietMs);
    while (Date.now() - lastMessageAt < quietMs) await sleep(250);
  } finally {
    await consumer.disconnect();
  }
  return [...latest.values()].map((v) => v.view);
}

export function workerLogTexts(workers: readonly WorkerProcess[]): { source: string; text: string }[] {
  return workers.map((w) => {
    try {
      return { source: `log of ${w.name}`, text: readFileSync(w.logFile, 'utf8') };
    } catch {
      return { source: `log of ${w.name}`, text: '' };
    }
  });
}

export async function recordRun(opts: {
  kafka: Kafka;
  stateTopic: string;
  sandbox: SandboxHandle;
  workers: readonly WorkerProcess[];
  orders: AcceptedOrder[];
  events: PublishedEvent[];
  /** Spans the workers exported, when the run had a receiver. */
  spans?: SpanView[];
  /** order.submit_deposit commands the run sent (checked: each one accepted shows in its order's events). */
  deposits?: SubmittedDeposit[];
}): Promise<RunHistory> {
  return {
    orders: opts.orders,
    events: opts.events,
    exchangeOrders: exchangeOrdersOf(opts.sandbox),
    states: await readStateTopic(opts.kafka, opts.stateTopic),
    throttleRefusals: opts.sandbox.throttleRefusals(),
    texts: [
      ...workerLogTexts(opts.workers),
      { source: 'events topic', text: opts.events.map((e) => JSON.stringify(e)).join('\n') },
    ],
    ...(opts.spans ? { spans: opts.spans } : {}),
    ...(opts.deposits ? { deposits: opts.deposits } : {}),
    secrets: environmentSecrets,
  };
}
