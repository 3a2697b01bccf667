// `npm run demo`: the whole system in one command, on embedded defaults. Starts (or reuses) Kafka and Redis as the
// tests do, the exchange sandbox (fast schedule, 1-minute payment window) behind a counting pass-through, an OTLP
// receiver and two worker replicas; sends one order down every path; SIGKILLs one replica halfway so the other takes
// over; shows a live table (a plain line per event when stdout is not a terminal); ends with a summary that checks
// every outcome and that nothing was lost or duplicated, and one order's trace as a waterfall. Exit status 0 only
// when every order reached its expected outcome. Ctrl-C stops everything it started.
import { randomBytes } from 'node:crypto';
import { createLogUpdate } from 'log-update';
import { servicesDown, servicesUp, freePort } from '../dev/services/index.ts';
import { closeRedis, createRedis } from '../src/redis/connect.ts';
import { OrderLease } from '../src/redis/order-lease.ts';
import {
  demoConfig,
  demoKeys,
  demoReferral,
  startSandbox,
  type SandboxConfigInput,
  type SandboxHandle,
} from '../sandbox/index.ts';
import {
  EventCollector,
  commandProducer,
  seqProblems,
  testKafka,
  type PublishedEvent,
} from '../test/support/kafka-helpers.ts';
import { logsDir, startWorker, type WorkerProcess } from '../test/support/worker-process.ts';
import { operatorHeadersFor, testOperatorPublicKeys } from '../test/support/operator-key.ts';
import { startExchangeMeter, type ExchangeCall, type ExchangeMeter } from './demo/exchange-meter.ts';
import { createCommandOf, scenarios, type Scenario } from './demo/scenarios.ts';
import { startTraceReceiver, type TraceReceiver } from './demo/trace-receiver.ts';
import { renderWaterfall, traceOfOrder } from './demo/waterfall.ts';

const runStarted = Date.now();
// A terminal that reports no size (a bare pty) cannot show a table: it gets the plain lines too.
const interactive =
  process.stdout.isTTY === true &&
  !process.env['CI'] &&
  process.stdout.rows > 0 &&
  process.stdout.columns > 0;
const width = Math.min(process.stdout.columns || 110, 140);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const clock = (): string => `[${seconds(Date.now() - runStarted).padStart(7)}]`;
const webhookSecret = `demo-webhook-${randomBytes(8).toString('hex')}`;
const scheduleStepMs = 2_500;
const terminalTypes = new Set(['order.completed', 'order.refunded', 'order.canceled', 'order.failed']);

interface OrderRow {
  scenario: Scenario;
  orderId: string;
  sentAt: number | null;
  finishedAt: number | null;
  owners: string[];
  driven: boolean;
  depositSent: boolean;
  settled: boolean;
  shownEvents: number;
}

const stamp = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const rows: OrderRow[] = scenarios.map((scenario) => ({
  scenario,
  orderId: `demo-${stamp}-${scenario.label}`,
  sentAt: null,
  finishedAt: null,
  owners: [],
  driven: false,
  depositSent: false,
  settled: false,
  shownEvents: 0,
}));
const notes: string[] = [];
const live = interactive ? createLogUpdate(process.stdout) : undefined;

/** A line worth keeping: printed as it happens when not interactive, shown under the table otherwise. */
function note(line: string): void {
  const stamped = `${clock()} ${line}`;
  notes.push(stamped);
  if (live) live.persist(stamped);
  else console.log(stamped);
}

// ---- what runs, and how it is stopped -------------------------------------------------------------------------
const stops: Array<() => Promise<unknown>> = [];
let stopped: Promise<void> | undefined;
let interrupted = false;
/** Stops what was started, newest first; every caller waits for the same one pass. */
function stopAll(): Promise<void> {
  stopped ??= (async () => {
    while (stops.length)
      await stops
        .pop()?.()
        .catch(() => {});
  })();
  return stopped;
}
process.once('SIGINT', () => {
  interrupted = true;
  live?.done();
  console.log(`${clock()} interrupted: stopping everything the demo started`);
  void stopAll().finally(() => process.exit(130));
});

let collector: EventCollector;
let sandbox: SandboxHandle;
let meter: ExchangeMeter;
let receiver: TraceReceiver;
let workers: WorkerProcess[] = [];
let send: (command: Record<string, unknown>) => Promise<void>;
let killedAt: number | null = null;

function eventsOf(row: OrderRow): PublishedEvent[] {
  return collector.of(row.orderId);
}

function finished(row: OrderRow): boolean {
  const events = eventsOf(row);
  if (row.scenario.create === null) return events.some((e) => e.type === 'command.rejected');
  return events.some((e) => terminalTypes.has(e.type));
}

function describeEvent(e: PublishedEvent): string {
  const detail = ['status', 'reason', 'unique_reference'].map((k) => e[k]).find((v) => typeof v === 'string');
  return `${e.type}${detail ? ` ${String(detail)}` : ''}`;
}

function render(): string {
  const header = `exchange-order-worker demo  ${seconds(Date.now() - runStarted)}  replicas: ${workers
    .map((w) => `${w.name}${w.child.exitCode !== null || w.child.signalCode !== null ? ' (dead)' : ''}`)
    .join(', ')}`;
  const head = ['order', 'mode', 'exchange', 'last event', 'seq', 'replica', 'elapsed'];
  const table = rows.map((row) => {
    const events = eventsOf(row);
    const last = events.at(-1);
    const status = events.findLast((e) => e.type === 'order.status_changed')?.['status'];
    const end = row.finishedAt ?? Date.now();
    return [
      row.scenario.label,
      row.scenario.mode,
      typeof status === 'string' ? status : '-',
      last ? describeEvent(last).slice(0, 38) : row.sentAt ? '(sent)' : '(waiting)',
      last ? String(last.seq) : '-',
      row.owners.at(-1) ?? '-',
      row.sentAt ? seconds(end - row.sentAt) : '-',
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [header, '', line(head), line(widths.map((w) => '-'.repeat(w))), ...table.map(line), ''].join('\n');
}

/** Every new event as one plain line (non-interactive output). */
function printNewEvents(): void {
  for (const row of rows) {
    const events = eventsOf(row);
    for (const e of events.slice(row.shownEvents))
      console.log(
        `${clock()} ${row.scenario.label.padEnd(11)} #${String(e.seq).padEnd(2)} ${describeEvent(e)}  (replica ${row.owners.at(-1) ?? '-'})`,
      );
    row.shownEvents = events.length;
  }
}

// ---- driving the orders as the user and the exchange would ------------------------------------------------------
async function drive(): Promise<void> {
  for (const row of rows) {
    const events = eventsOf(row);
    if (row.finishedAt === null && finished(row)) row.finishedAt = Date.now();
    const created = events.find((e) => e.type === 'order.created');
    if (created && row.scenario.deposit && !row.depositSent) {
      row.depositSent = true;
      await send({
        type: 'order.submit_deposit',
        command_id: `${row.orderId}-deposit`,
        order_id: row.orderId,
        tx_hash: `0x${randomBytes(32).toString('hex')}`,
      });
    }
    const readyToMove =
      created && (!row.scenario.deposit || events.some((e) => e.type === 'order.deposit_submitted'));
    if (readyToMove && !row.driven && row.scenario.drive !== 'none') {
      row.driven = true;
      sandbox.setAutoSchedule(
        { outcome: row.scenario.drive, stepMs: 1_500 },
        String(created['unique_reference']),
      );
    }
    // A creation the worker could not establish is parked for an operator (order.parked); the demo plays the
    // operator, who finds the exchange order by its amount and adopts it (or abandons the order when there is none).
    if (!row.settled && events.some((e) => e.type === 'order.parked')) {
      row.settled = true;
      const onExchange = exchangeOrdersOf(row)[0];
      note(`${row.scenario.label}: parked; the operator settles it (${onExchange ? 'adopt' : 'abandon'})`);
      await send({
        type: 'order.settle',
        command_id: `${row.orderId}-settle`,
        order_id: row.orderId,
        ...(onExchange
          ? { resolution: 'adopt', unique_reference: String(onExchange.order['unique_reference']) }
          : { resolution: 'abandon' }),
      });
    }
  }
}

function exchangeOrdersOf(row: OrderRow): Array<{ order: Record<string, unknown> }> {
  if (row.scenario.create === null) return [];
  return sandbox.orders
    .list()
    .filter((o) => Number(o.order['deposit_amount']) === Number(row.scenario.amount));
}

/** Which order an exchange call was for: by the unique amount it carries, or the reference in its path. */
function attribute(call: ExchangeCall): OrderRow | undefined {
  const amount = call.query.get('deposit_amount') ?? call.body?.['deposit_amount'];
  if (amount !== undefined && amount !== null) {
    return rows.find((r) => r.scenario.create !== null && Number(r.scenario.amount) === Number(amount));
  }
  const reference = /^\/orders\/([^/]+)\/$/.exec(call.path)?.[1];
  return reference
    ? rows.find((r) => exchangeOrdersOf(r).some((o) => o.order['unique_reference'] === reference))
    : undefined;
}

async function until(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds(timeoutMs)} waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function main(): Promise<number> {
  console.log(`exchange-order-worker demo: 2 replicas, ${rows.length} orders, one replica killed halfway`);
  const up = await servicesUp({ log: (line) => console.log(`services: ${line}`) });
  for (const line of up.describe) console.log(`services: ${line}`);
  stops.push(() => (up.started.kafka || up.started.redis ? servicesDown(up.started) : Promise.resolve()));

  receiver = await startTraceReceiver();
  stops.push(() => receiver.close());
  const webhookPort = await freePort();
  const base: SandboxConfigInput = {
    ...demoConfig,
    partners: demoConfig.partners.map((partner) =>
      partner.id === 'demo'
        ? {
            ...partner,
            webhooks: [
              {
                id: 'worker',
                url: `http://127.0.0.1:${webhookPort}/webhooks/exchange`,
                categories: ['order_status'],
                payloadVersion: 'v2',
                secret: webhookSecret,
              },
            ],
          }
        : partner,
    ),
    quotes: { ttlSeconds: 300, actionableDelayMs: 300 },
    orders: { paymentWindowMinutes: 1 },
  };
  sandbox = await startSandbox({ config: base });
  stops.push(() => sandbox.close());
  meter = await startExchangeMeter(sandbox.url);
  stops.push(() => meter.close());
  console.log(
    `sandbox: ${sandbox.url} (payment window 1 min; the demo moves each order one status every ${seconds(scheduleStepMs)})`,
  );

  const topics = { commands: `demo-${stamp}.commands`, events: `demo-${stamp}.events` };
  const consumerGroup = `demo-${stamp}`;
  const env: Record<string, string> = {
    KAFKA_BROKERS: up.endpoints.kafkaBrokers.join(','),
    REDIS_URL: up.endpoints.redisUrl,
    EXCHANGE_API_URL: meter.url,
    EXCHANGE_API_V1_URL: sandbox.v1Url,
    EXCHANGE_API_KEY_DEFI: demoKeys.defi,
    EXCHANGE_API_KEY_CEFI: demoKeys.cefi,
    EXCHANGE_API_KEY_CEFI_FIXED: demoKeys.cefiFixed,
    EXCHANGE_REFERRAL_TOKEN: demoReferral.token,
    WEBHOOK_SECRET: webhookSecret,
    TOPIC_COMMANDS: topics.commands,
    TOPIC_EVENTS: topics.events,
    TOPIC_PARTITIONS: '4',
    CONSUMER_GROUP: consumerGroup,
    LEASE_TTL_MS: '3000',
    // A create in doubt is looked up once a POST still in flight could no longer land: the sandbox answers in
    // milliseconds and a lease lives 3 s here (production: 60 s, covering a 30 s create timeout).
    CREATE_SETTLE_MS: '6000',
    PARKED_RECHECK_MS: '10000',
    KAFKA_TRANSACTION_TIMEOUT_MS: '5000',
    SHUTDOWN_TIMEOUT_MS: '10000',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '1000',
    // The demo plays the operator too: its order.settle is signed with a key made for this run.
    OPERATOR_PUBLIC_KEYS: testOperatorPublicKeys,
  };
  const startedWorkers = Date.now();
  // The first replica creates the topics and receives the exchange's webhooks; the second joins its group.
  const w1 = await startWorker('w1', env, webhookPort);
  workers = [w1];
  stops.push(() => Promise.all(workers.map((w) => w.kill('SIGTERM'))));
  await w1.ready();
  const w2 = await startWorker('w2', env);
  workers.push(w2);
  await w2.ready();
  console.log(
    `workers: w1 (port ${w1.port}) and w2 (port ${w2.port}) ready in ${seconds(Date.now() - startedWorkers)}; logs in ${logsDir}`,
  );

  const kafka = testKafka(up.endpoints.kafkaBrokers);
  const producer = await commandProducer(kafka, topics.commands);
  stops.push(() => producer.close());
  send = (command) =>
    producer.send(
      command,
      command['type'] === 'order.settle'
        ? { headers: operatorHeadersFor(String(command['order_id']), JSON.stringify(command)) }
        : {},
    );
  collector = await EventCollector.start(kafka, topics.events);
  stops.push(() => collector.stop());
  const redis = createRedis(up.endpoints.redisUrl, { keyPrefix: `eow:${consumerGroup}:`, onError: () => {} });
  stops.push(() => closeRedis(redis));
  const leases = new OrderLease(redis);

  // The ticker: events in, orders driven, lease holders read, the table redrawn (or new events printed).
  let busy = false;
  const ticker = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      for (const row of rows) {
        if (row.sentAt === null || row.scenario.create === null) continue;
        const holder = await leases.holder(row.orderId).catch(() => null);
        const owner = holder?.owner.split(':')[0];
        if (owner && owner !== row.owners.at(-1)) {
          if (row.owners.length)
            note(
              `${row.scenario.label}: lease moved ${row.owners.at(-1)} -> ${owner}${killedAt ? ` (${seconds(Date.now() - killedAt)} after the kill)` : ''}`,
            );
          row.owners.push(owner);
        }
      }
      await drive();
      if (live) live(render());
      else printNewEvents();
    })().finally(() => (busy = false));
  }, 250);
  stops.push(() => Promise.resolve(clearInterval(ticker)));

  const sendCreate = async (row: OrderRow): Promise<void> => {
    row.sentAt = Date.now();
    await send(createCommandOf(row.scenario, row.orderId));
  };

  // 1. The order whose creation is in doubt goes alone, so the lost answer is its own.
  const inDoubt = rowOf('in-doubt');
  sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'lost_response', times: 1 });
  note(`${inDoubt.scenario.label}: the next answer to POST /orders/ will be lost on the way back`);
  await sendCreate(inDoubt);
  await until(
    'the in-doubt order to be created, parked or to fail',
    () => eventsOf(inDoubt).some((e) => ['order.created', 'order.parked', 'order.failed'].includes(e.type)),
    90_000,
  );

  // 2. Every other order at once.
  for (const row of rows) if (row.sentAt === null) await sendCreate(row);
  note(`sent ${rows.length - 1} more orders`);

  // 3. Halfway: SIGKILL w2 once the first orders have their outcome while w2 still drives open ones (or after 30 s,
  // whatever it drives then).
  const killAfter = Date.now() + 30_000;
  await until(
    'the first outcomes before the kill',
    () =>
      rows.filter((r) => r.finishedAt !== null && r.scenario.exchangeOrders === 1).length >= 1 &&
      (rows.some((r) => r.finishedAt === null && r.owners.at(-1) === 'w2') || Date.now() > killAfter),
    90_000,
  );
  const victims = rows
    .filter((r) => r.finishedAt === null && r.owners.at(-1) === 'w2')
    .map((r) => r.scenario.label);
  await w2.kill('SIGKILL');
  killedAt = Date.now();
  note(`SIGKILL w2 (it drove: ${victims.join(', ') || 'no open order'}); w1 takes over its partitions`);

  // 4. Until every order has its outcome.
  await until('every order to reach its outcome', () => rows.every((r) => finished(r)), 150_000);
  const tookOver = rows.filter((r) => victims.includes(r.scenario.label) && r.owners.at(-1) === 'w1');
  clearInterval(ticker);
  await drive();
  if (live) {
    live(render());
    live.done();
  } else printNewEvents();
  note(
    `every order has its outcome${victims.length ? `; w1 took over ${tookOver.length}/${victims.length} of w2's open orders` : ''}`,
  );

  // 5. Stop w1 gracefully, so its last spans are exported, then the summary and one trace.
  await w1.kill('SIGTERM');
  const code = summary();
  // The topics outlive the demo when Kafka was not started by it: any order can then be inspected.
  if (!up.started.kafka && !up.started.redis)
    console.log(
      `\ninspect an order: KAFKA_BROKERS=${env['KAFKA_BROKERS']} REDIS_URL=${env['REDIS_URL']} TOPIC_COMMANDS=${topics.commands} TOPIC_EVENTS=${topics.events} CONSUMER_GROUP=${consumerGroup} npm run -s inspect -- ${rowOf('unpaid').orderId}`,
    );
  return code;
}

function summary(): number {
  const calls = new Map<OrderRow, number>();
  let unattributed = 0;
  for (const call of meter.calls) {
    const row = attribute(call);
    if (row) calls.set(row, (calls.get(row) ?? 0) + 1);
    else unattributed++;
  }
  const head = ['order', 'outcome', 'ok', 'exchange orders', 'exchange calls', 'events', 'replicas'];
  const problems: string[] = [];
  const table = rows.map((row) => {
    const events = eventsOf(row);
    const outcome =
      row.scenario.create === null
        ? events.find((e) => e.type === 'command.rejected')
        : events.findLast((e) => terminalTypes.has(e.type));
    const field = row.scenario.expect.field;
    const expected = `${row.scenario.expect.type}${field ? ` (${field[1]})` : ''}`;
    const got = outcome ? `${outcome.type}${field ? ` (${String(outcome[field[0]])})` : ''}` : '(none)';
    const onExchange = exchangeOrdersOf(row).length;
    const rowProblems = [
      ...(got === expected ? [] : [`outcome ${got}, expected ${expected}`]),
      ...(onExchange === row.scenario.exchangeOrders
        ? []
        : [`${onExchange} exchange orders, expected ${row.scenario.exchangeOrders}`]),
      ...seqProblems(events),
      ...(new Set(events.map((e) => e.event_id)).size === events.length
        ? []
        : ['an event was published twice']),
      ...(events.findIndex((e) => terminalTypes.has(e.type)) < events.length - 1 &&
      events.some((e) => terminalTypes.has(e.type))
        ? ['events after the terminal one']
        : []),
    ];
    problems.push(...rowProblems.map((p) => `${row.scenario.label}: ${p}`));
    return [
      row.scenario.label,
      got,
      rowProblems.length ? 'NO' : 'ok',
      String(onExchange),
      String(calls.get(row) ?? 0),
      String(events.length),
      row.owners.join(' -> ') || '-',
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const out: string[] = [
    '',
    'summary',
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...table.map(line),
  ];
  out.push(
    `exchange calls in all: ${meter.calls.length} (${unattributed} not tied to one order: list lookups and the like)`,
  );
  const totalEvents = rows.reduce((n, r) => n + eventsOf(r).length, 0);
  if (problems.length === 0)
    out.push(
      `RESULT: all ${rows.length} orders reached their expected outcome; ${totalEvents} events, no gap, no duplicate; nothing lost`,
    );
  else out.push(...problems.map((p) => `PROBLEM: ${p}`), `RESULT: ${problems.length} problems`);

  const traced = rowOf('in-doubt');
  const trace = traceOfOrder(receiver.spans, traced.orderId);
  out.push(
    '',
    `trace of ${traced.scenario.label} (${traced.orderId}), from ${receiver.spans.length} spans the workers exported:`,
  );
  out.push(...(trace.length ? renderWaterfall(trace, width) : ['(no span of this order was exported)']));
  console.log(out.join('\n'));
  return problems.length === 0 ? 0 : 1;
}

function rowOf(label: string): OrderRow {
  return rows.find((r) => r.scenario.label === label)!;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  live?.done();
  if (interrupted) await new Promise(() => {}); // the SIGINT handler stops everything and exits 130
  console.log(`${clock()} demo failed: ${(error as Error).message}`);
  for (const w of workers) console.log(`  ${w.name} log: ${w.logFile}`);
}
await stopAll();
console.log(`${clock()} stopped everything the demo started; exit status ${code}`);
process.exit(code);
