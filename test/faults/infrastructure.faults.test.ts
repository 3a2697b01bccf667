// Infrastructure faults under a stream of orders, each run on a Kafka broker or a Redis of the test's own (the
// shared ones are never touched): the broker restarted again and again and paused (SIGSTOP) past the consumer
// session timeout; Redis restarted empty and with its data (a snapshot taken moments before the crash),
// unreachable for a minute; a replica paused past its lease, then resumed. Afterwards every order must end and
// the one invariant checker must find nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterEach, describe, it } from 'vitest';
import { startLocalKafka, startLocalRedis } from '../../dev/services/index.ts';
import type { AcceptedOrder } from '../support/invariants.ts';
import { planOrders } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import type { Cluster } from '../support/worker-cluster.ts';
import { cleanupStack, finishFaultRun, startFaultRun } from './harness.ts';
import { faultProfile } from './profile.ts';

const profile = faultProfile();
const cleanups = cleanupStack();
afterEach(cleanups.run);

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.defer(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Sends `count` more orders of the run, remembering them as accepted. */
function orderStream(cluster: Cluster, variant: number) {
  const orders: AcceptedOrder[] = [];
  let next = 0;
  return {
    orders,
    async send(count: number) {
      const planned = planOrders(next + count, { variant, orderId: (i) => uniqueName(`inf${i}`) }).slice(
        next,
      );
      next += count;
      for (const p of planned) {
        orders.push({ orderId: p.orderId, create: p.command });
        await cluster.send(p.command);
      }
    },
  };
}

describe('infrastructure faults', () => {
  it(`Kafka broker restarted ${profile.brokerRestarts} times and paused past the session timeout`, async () => {
    const kafka = await startLocalKafka({ dir: tempDir('fault-kafka-') });
    cleanups.defer(() => kafka.stop('SIGKILL'));
    const run = await startFaultRun({
      name: 'infra-kafka',
      defer: cleanups.defer,
      workers: 2,
      partitions: 4,
      kafkaBrokers: kafka.brokers,
    });
    const { cluster, seed } = run;
    const stream = orderStream(cluster, seed % 50);
    const restartsMs: number[] = [];
    for (let i = 0; i < profile.brokerRestarts; i++) {
      await stream.send(3);
      await sleep(1_500 + (i % 3) * 1_000);
      const started = Date.now();
      await kafka.restart();
      restartsMs.push(Date.now() - started);
    }
    // A broker that stops answering (SIGSTOP) for longer than the consumers' 6 s session timeout.
    await stream.send(3);
    await sleep(1_000);
    process.kill(kafka.state.pid, 'SIGSTOP');
    await sleep(20_000);
    process.kill(kafka.state.pid, 'SIGCONT');
    await stream.send(3);
    await finishFaultRun(run, stream.orders, {
      test: 'infra-kafka',
      endingTimeoutMs: 300_000,
      figures: () => ({ brokerRestarts: profile.brokerRestarts, brokerPauses: 1, restartMs: restartsMs }),
    });
  });

  it(`Redis restarted ${profile.redisRestarts} times (empty and with its data), unreachable, and a replica paused past its lease`, async () => {
    const dir = tempDir('fault-redis-');
    const redis = await startLocalRedis({ dir });
    cleanups.defer(() => redis.stop('SIGKILL'));
    const run = await startFaultRun({
      name: 'infra-redis',
      defer: cleanups.defer,
      workers: 2,
      partitions: 4,
      redisUrl: redis.url,
    });
    const { cluster, seed } = run;
    const stream = orderStream(cluster, 50 + (seed % 40));
    let empty = 0;
    let withData = 0;
    for (let i = 0; i < profile.redisRestarts; i++) {
      await stream.send(3);
      await sleep(1_500 + (i % 3) * 700);
      if (i % 2 === 0) {
        rmSync(join(dir, 'dump.rdb'), { force: true });
        await redis.restart();
        empty++;
      } else {
        // A snapshot a moment before the crash: leases and fences come back slightly stale.
        const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
        await client.save();
        client.disconnect();
        await sleep(500);
        await redis.restart();
        withData++;
      }
    }
    // Unreachable: the server is gone (connections refused) for a minute, then back, empty.
    const outageMs = profile.name === 'full' ? 60_000 : 10_000;
    await stream.send(3);
    await sleep(1_000);
    await redis.stop('SIGKILL');
    await stream.send(3);
    await sleep(outageMs);
    rmSync(join(dir, 'dump.rdb'), { force: true });
    await redis.start();
    // A replica paused past its lease and its consumer session (6 s each), then resumed.
    await stream.send(3);
    await sleep(1_000);
    const sleeper = cluster.workers[1]!;
    sleeper.child.kill('SIGSTOP');
    await sleep(20_000);
    sleeper.child.kill('SIGCONT');
    await stream.send(3);
    await finishFaultRun(run, stream.orders, {
      test: 'infra-redis',
      endingTimeoutMs: 300_000,
      figures: () => ({
        redisRestartsEmpty: empty,
        redisRestartsWithData: withData,
        redisOutageMs: outageMs,
        replicaPauses: 1,
      }),
    });
  });
});
