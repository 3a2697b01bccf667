// The floor: the same flow as the worker, hand-written as a plain kafkajs consumer making direct undici calls and
// producing events, with no machine, no lease and no durability (no state topic, no transactions, offsets
// auto-committed). Each order.create costs the calls the worker makes (DeFi: actionable GET /rate/; CeFi fixed:
// GET /rate/; then POST /orders/ and the confirming GET /orders/{ref}/) and produces order.created; each webhook
// costs one GET /orders/{ref}/ and produces order.status_changed, plus order.completed on COMPLETED.
// The worker's figures are reported as ratios to this one's (bench/worker-throughput.ts runs both side by side).
//
// As a process of its own: node bench/floor.ts --floor-process (environment below); its parent drives it.
import { fork, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { Agent, request } from 'undici';
import { freePort } from '../dev/services/index.ts';
// Imported for its side effect: kafkajs's request queues quieted for the floor's clients, as for the worker's.
import '../src/kafka/kafka-client.ts';

const modeKeys: Record<string, string> = {
  cefi: 'FLOOR_KEY_CEFI',
  cefi_fixed: 'FLOOR_KEY_CEFI_FIXED',
  defi: 'FLOOR_KEY_DEFI',
};

interface Rate {
  pair: string;
  rate_id: string | null;
}
interface WireOrder {
  unique_reference: string;
  status: string;
}

async function floorProcess(): Promise<void> {
  const env = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`floor: ${name} missing`);
    return value;
  };
  const base = env('FLOOR_EXCHANGE_URL');
  const referralToken = env('FLOOR_REFERRAL_TOKEN');
  const eventsTopic = env('FLOOR_TOPIC_EVENTS');
  const owners = new Map<string, { orderId: string; mode: string; status: string }>();
  // At most 64 connections to the exchange; further requests queue (10k webhook hints at once would otherwise
  // open 10k sockets and run out of file descriptors).
  const dispatcher = new Agent({ connections: 64 });

  const call = async <T>(mode: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> => {
    const res = await request(`${base}${path}`, {
      dispatcher,
      method,
      headers: {
        authorization: `ApiKey ${env(modeKeys[mode] ?? 'FLOOR_KEY_CEFI')}`,
        'x-referral-token': referralToken,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  };

  const kafka = new Kafka({
    clientId: 'floor',
    brokers: env('FLOOR_KAFKA_BROKERS').split(','),
    logLevel: logLevel.NOTHING,
  });
  const producer: Producer = kafka.producer();
  await producer.connect();
  const publish = (events: Record<string, unknown>[]): Promise<unknown> =>
    events.length === 0
      ? Promise.resolve()
      : producer.send({
          topic: eventsTopic,
          messages: events.map((e) => ({
            key: String(e['order_id']),
            value: JSON.stringify({ ...e, occurred_at: new Date().toISOString() }),
          })),
        });

  const create = async (command: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const mode = String(command['mode']);
    const pair = `${String(command['withdraw_currency'])}${String(command['deposit_currency'])}`;
    let rateId: string | null = null;
    if (mode !== 'cefi') {
      const query = new URLSearchParams({ pairs: pair, deposit_amount: String(command['deposit_amount']) });
      if (mode === 'defi') query.set('actionable_quote', 'true');
      const rates = await call<Rate[]>(mode, 'GET', `/rate/?${query.toString()}`);
      rateId = rates[0]?.rate_id ?? null;
    }
    const created = await call<WireOrder>(mode, 'POST', '/orders/', {
      deposit_currency: command['deposit_currency'],
      withdraw_currency: command['withdraw_currency'],
      withdraw_address: command['withdraw_address'],
      deposit_amount: command['deposit_amount'],
      ...(rateId ? { rate_id: rateId } : {}),
    });
    const confirmed = await call<WireOrder>(mode, 'GET', `/orders/${created.unique_reference}/`);
    owners.set(confirmed.unique_reference, {
      orderId: String(command['order_id']),
      mode,
      status: confirmed.status,
    });
    return {
      type: 'order.created',
      order_id: command['order_id'],
      seq: 1,
      unique_reference: confirmed.unique_reference,
    };
  };

  const consumer = kafka.consumer({ groupId: env('FLOOR_GROUP'), maxWaitTimeInMs: 50 });
  await consumer.connect();
  await consumer.subscribe({ topic: env('FLOOR_TOPIC_COMMANDS'), fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: 6,
    // A batch's orders are handled concurrently, at most `chunk` at a time per partition (6 partitions: 192 in
    // flight), so the floor does not open thousands of connections at once.
    eachBatch: async (payload) => {
      const { batch } = payload;
      const chunk = 32;
      for (let i = 0; i < batch.messages.length; i += chunk) {
        const slice = batch.messages.slice(i, i + chunk);
        const results = await Promise.allSettled(
          slice.map((m) => create(JSON.parse(m.value?.toString() ?? '{}') as Record<string, unknown>)),
        );
        for (const r of results) if (r.status === 'rejected') console.error(`floor: ${String(r.reason)}`);
        await publish(results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])));
        const last = slice.at(-1);
        if (last) payload.resolveOffset(last.offset);
        await payload.heartbeat();
      }
    },
  });

  const port = Number(env('FLOOR_WEBHOOK_PORT'));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200).end();
      const hint = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Partial<WireOrder>;
      const reference = String(hint.unique_reference);
      if (!owners.has(reference)) return;
      // Hints that arrive while a GET is out are folded into one more GET after it (as the worker does).
      if (checking.has(reference)) {
        checking.set(reference, true);
        return;
      }
      checking.set(reference, false);
      void check(reference).catch((err: unknown) => console.error(`floor webhook: ${String(err)}`));
    });
  });
  const checking = new Map<string, boolean>();
  const check = async (reference: string): Promise<void> => {
    const owner = owners.get(reference);
    if (!owner) return;
    do {
      checking.set(reference, false);
      const order = await call<WireOrder>(owner.mode, 'GET', `/orders/${reference}/`);
      if (order.status !== owner.status) {
        owner.status = order.status;
        await publish([
          { type: 'order.status_changed', order_id: owner.orderId, status: order.status },
          ...(order.status === 'COMPLETED' ? [{ type: 'order.completed', order_id: owner.orderId }] : []),
        ]);
      }
    } while (checking.get(reference) === true);
    checking.delete(reference);
  };
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  process.send?.('ready');
  process.once('SIGTERM', () => {
    void Promise.all([consumer.disconnect(), producer.disconnect()]).finally(() => process.exit(0));
  });
}

export interface FloorHandle {
  child: ChildProcess;
  webhookPort: number;
  stop(): Promise<void>;
}

/** Starts the floor as a child process on the given topics and exchange. */
export async function startFloor(opts: {
  kafkaBrokers: string[];
  exchangeUrl: string;
  keys: { cefi: string; cefiFixed: string; defi: string };
  referralToken: string;
  topics: { commands: string; events: string };
  group: string;
  webhookPort?: number;
}): Promise<FloorHandle> {
  const webhookPort = opts.webhookPort ?? (await freePort());
  const child = fork(new URL(import.meta.url), ['--floor-process'], {
    env: {
      PATH: process.env['PATH'] ?? '',
      FLOOR_KAFKA_BROKERS: opts.kafkaBrokers.join(','),
      FLOOR_EXCHANGE_URL: opts.exchangeUrl,
      FLOOR_KEY_CEFI: opts.keys.cefi,
      FLOOR_KEY_CEFI_FIXED: opts.keys.cefiFixed,
      FLOOR_KEY_DEFI: opts.keys.defi,
      FLOOR_REFERRAL_TOKEN: opts.referralToken,
      FLOOR_TOPIC_COMMANDS: opts.topics.commands,
      FLOOR_TOPIC_EVENTS: opts.topics.events,
      FLOOR_GROUP: opts.group,
      FLOOR_WEBHOOK_PORT: String(webhookPort),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`floor exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    webhookPort,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv.includes('--floor-process')) await floorProcess();
