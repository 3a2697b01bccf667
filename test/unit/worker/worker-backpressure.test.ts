// The order limit never blocks the orders already here: at MAX_ACTIVE_ORDERS live orders the replica holds only
// new orders back (each in its partition's order, none skipped), the commands of its orders go on, and orders at
// rest do not count. A slow exchange still pauses everything (backpressure.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import type { CommandConsumerHandlers, InboundCommandMessage } from '../../../src/kafka/command-consumer.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { Worker, type WorkerParts } from '../../../src/worker/worker.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Hands messages on as kafkajs does: nothing while paused, one partition's messages one at a time, in order. */
class FakeConsumer {
  handlers: CommandConsumerHandlers | undefined;
  paused = false;
  readonly assigned = [0, 1];
  private readonly partitions = new Map<number, Promise<void>>();

  start(handlers: CommandConsumerHandlers): Promise<void> {
    this.handlers = handlers;
    return Promise.resolve();
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }

  deliver(message: InboundCommandMessage): void {
    const previous = this.partitions.get(message.partition) ?? Promise.resolve();
    this.partitions.set(
      message.partition,
      previous.then(async () => {
        while (this.paused) await sleep(10);
        const handlers = this.handlers!;
        await handlers.admit?.(message);
        await handlers.onMessage(message);
      }),
    );
  }
}

let offset = 0;
const command = (partition: number, orderId: string, type: string): InboundCommandMessage => ({
  topic: 'commands',
  partition,
  offset: String(offset++),
  key: orderId,
  value: Buffer.from(JSON.stringify({ type, command_id: `c-${offset}`, order_id: orderId })),
});

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** A worker over fakes: `held` orders are driven here, `live` of them hold an actor (the rest are at rest). */
async function workerWith(counts: { held: number; live: number }) {
  const config = loadConfig({
    KAFKA_BROKERS: 'kafka:9092',
    REDIS_URL: 'redis://redis:6379',
    EXCHANGE_API_URL: 'https://exchange.example/api/v2',
    EXCHANGE_API_KEY_DEFI: 'key',
    WEBHOOK_SECRET: 'secret',
    MAX_ACTIVE_ORDERS: '10',
  });
  const handled: string[] = [];
  const consumer = new FakeConsumer();
  const host = {
    get activeOrders() {
      return counts.held;
    },
    get liveOrders() {
      return counts.live;
    },
    setAssignment: () => {},
    onAssignment: () => Promise.resolve(0),
    handleMessage: (message: InboundCommandMessage) => {
      const { type } = JSON.parse(message.value!.toString()) as { type: string };
      handled.push(`${message.key}:${type}`);
      return Promise.resolve();
    },
    reconcile: () => 0,
    unloadAll: () => Promise.resolve(),
  };
  const connectable = { connect: () => Promise.resolve() };
  const parts = {
    http: {
      listen: () => Promise.resolve(),
      acceptWebhooks: () => {},
      closeWebhooks: () => Promise.resolve(),
      closeOperations: () => Promise.resolve(),
      webhookPort: 0,
      metricsPort: 0,
    },
    ensureTopics: () => Promise.resolve({ partitions: 2 }),
    writer: { ...connectable, close: () => Promise.resolve(), releaseOffsetHolds: () => Promise.resolve() },
    store: { start: () => Promise.resolve(), stop: () => Promise.resolve() },
    hints: { ...connectable, disconnect: () => Promise.resolve() },
    host,
    consumer,
    cluster: {
      ...connectable,
      consumerLag: () => Promise.resolve(new Map()),
      disconnect: () => Promise.resolve(),
    },
    health: { kafkaAnswered: () => {}, stopped: () => {} },
    retention: { sweep: () => Promise.resolve(0), intervalMs: 60_000 },
    inflightExchangeCalls: () => 0,
    close: () => Promise.resolve(),
  } as unknown as WorkerParts;
  const worker = new Worker(config, createLogger({ level: 'silent' }), parts);
  await worker.start();
  stops.push(() => worker.stop());
  // The backpressure timer (every 100 ms) takes its first verdict.
  await sleep(150);
  return { consumer, handled };
}

describe('the order limit', () => {
  it('does not count orders at rest: a new order is taken while most orders here rest', async () => {
    const { consumer, handled } = await workerWith({ held: 10, live: 2 });
    consumer.deliver(command(0, 'o-new', 'order.create'));
    await expect.poll(() => handled, { timeout: 1_000 }).toEqual(['o-new:order.create']);
    expect(consumer.paused).toBe(false);
  });

  it("takes a deposit for an order already here while at the limit, and holds a new order (and its partition's later commands) until there is room", async () => {
    const counts = { held: 10, live: 10 };
    const { consumer, handled } = await workerWith(counts);
    consumer.deliver(command(0, 'o-new', 'order.create'));
    consumer.deliver(command(0, 'o-2', 'order.submit_deposit'));
    consumer.deliver(command(1, 'o-1', 'order.submit_deposit'));
    await expect.poll(() => handled, { timeout: 1_000 }).toEqual(['o-1:order.submit_deposit']);
    expect(consumer.paused).toBe(false);
    await sleep(300);
    expect(handled).toEqual(['o-1:order.submit_deposit']);
    // Orders rested (or ended): below 90 % of the limit the held create goes on, then what waited behind it.
    counts.live = 8;
    await expect
      .poll(() => handled, { timeout: 1_000 })
      .toEqual(['o-1:order.submit_deposit', 'o-new:order.create', 'o-2:order.submit_deposit']);
  });
});
