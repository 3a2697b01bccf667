// Fuzzing a real worker process (real Kafka, real Redis, the sandbox): fuzzed command messages on the commands
// topic and fuzzed webhook deliveries on its HTTP endpoint. Every bad command gets exactly one command.rejected
// naming its offset and the reason the decoder gives; every webhook gets a specific answer (401 for a bad or
// stale signature, 2xx/400 otherwise, never 5xx); the worker stays up and ready, and orders sent alongside
// (canaries) still end exactly once. Replay with FAULT_SEED=<printed seed>.
import fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/contract/commands.ts';
import { checkInvariants, formatViolations, type AcceptedOrder } from '../support/invariants.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import type { PublishedEvent } from '../support/kafka-helpers.ts';
import { environmentSecrets, exchangeOrdersOf, workerLogTexts } from '../support/run-record.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';
import { fuzzedCommand, fuzzedWebhook } from './fuzz-inputs.ts';
import { awaitEndings, driveExchangeOrders, recordFigures } from './harness.ts';
import { faultProfile } from './profile.ts';
import { runSeed } from './seeds.ts';

const profile = faultProfile();
const commandRuns = profile.fuzzCommandsThroughWorker;
const webhookRuns = profile.fuzzWebhooksThroughWorker;
let cluster: Cluster;
let producer: Producer;
let driver: ReturnType<typeof driveExchangeOrders>;
const canaries: AcceptedOrder[] = [];
const seed = runSeed();

beforeAll(async () => {
  console.log(`[fuzz-worker] seed ${seed} (replay with FAULT_SEED=${seed})`);
  // A replica answers one command per partition at a time (each answer is a Kafka transaction with the command's
  // offset); group commit joins the partitions' answers into one transaction. More partitions, more per commit.
  cluster = await startCluster({ workers: 1, partitions: profile.name === 'full' ? 12 : 3 });
  producer = testKafka(services().kafkaBrokers).producer({ allowAutoTopicCreation: false });
  await producer.connect();
  driver = driveExchangeOrders(cluster, () => 'completed');
});
afterAll(async () => {
  await driver?.stop();
  await producer?.disconnect();
  await cluster?.stop();
});

async function sendCanary(mode: 'defi' | 'cefi' | 'cefi_fixed', amount: string): Promise<string> {
  const orderId = uniqueName(`canary-${mode}`);
  const create = orderCreateCommand(mode, amount, orderId);
  canaries.push({ orderId, create });
  await cluster.send(create);
  return orderId;
}

/** Runs `task` over `items` with at most `limit` in flight. */
async function pool<T>(
  items: T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        await task(items[index]!, index);
      }
    }),
  );
}

describe('a worker under fuzzed inputs', () => {
  it(`${commandRuns} fuzzed command messages: one specific rejection each, canaries unharmed`, async () => {
    const tag = Date.now().toString(36);
    const inputs = fc.sample(fuzzedCommand(fc.nat(commandRuns).map((i) => `fz-${tag}-${i}`)), {
      seed,
      numRuns: commandRuns,
    });
    const first = await sendCanary('cefi', '1.777');
    const sent: {
      partition: number;
      offset: string;
      expected: ReturnType<typeof parseCommand>;
      shape: string;
    }[] = [];
    const started = Date.now();
    await pool(inputs, 16, async (input) => {
      const [meta] = await producer.send({
        topic: cluster.topics.commands,
        messages: [{ key: input.key, value: input.value }],
      });
      sent.push({
        partition: meta!.partition,
        offset: meta!.baseOffset ?? '-1',
        expected: parseCommand(input.value, input.key),
        shape: input.shape,
      });
    });
    const second = await sendCanary('defi', '177.7');
    const rejected = sent.filter((s) => !s.expected.ok);
    // command.rejected events by the command's position, indexed as they arrive: a scan of every event for each of
    // ~9,000 commands, ten times a second, starved this process (and its collector) for minutes in an earlier run.
    const rejections = new Map<string, PublishedEvent[]>();
    let indexed = 0;
    const rejectionAt = (partition: number, offset: string): PublishedEvent[] => {
      const events = cluster.collector.events;
      for (; indexed < events.length; indexed++) {
        const e = events[indexed]!;
        const source = e['source'] as { topic?: string; partition?: number; offset?: string } | undefined;
        if (e.type !== 'command.rejected' || source?.topic !== cluster.topics.commands) continue;
        const at = `${String(source.partition)}/${String(source.offset)}`;
        rejections.set(at, [...(rejections.get(at) ?? []), e]);
      }
      return rejections.get(`${partition}/${offset}`) ?? [];
    };
    let answered = 0;
    await cluster.collector.waitFor(
      () => {
        // Commands already answered stay answered: each check looks only at the ones still waiting.
        while (
          answered < rejected.length &&
          rejectionAt(rejected[answered]!.partition, rejected[answered]!.offset).length > 0
        )
          answered++;
        return answered === rejected.length;
      },
      `a rejection for each of ${rejected.length} bad commands`,
      120_000 + commandRuns * 150,
    );
    const elapsed = Date.now() - started;
    const problems: string[] = [];
    for (const s of rejected) {
      const found = rejectionAt(s.partition, s.offset);
      const reason = s.expected.ok ? '' : s.expected.reason;
      if (found.length !== 1)
        problems.push(`${s.partition}/${s.offset} (${s.shape}): ${found.length} rejections`);
      else if (found[0]?.['reason'] !== reason)
        problems.push(
          `${s.partition}/${s.offset} (${s.shape}): reason ${String(found[0]?.['reason'])}, decoder says ${reason}`,
        );
    }
    expect(problems.slice(0, 20).join('\n')).toBe('');
    const open = await awaitEndings(cluster, [first, second], 180_000);
    expect(open).toEqual([]);
    expect(cluster.workers[0]?.child.exitCode).toBeNull();
    recordFigures({
      test: `fuzz-worker-commands (${profile.name})`,
      seed,
      runs: commandRuns,
      rejected: rejected.length,
      validByChance: sent.length - rejected.length,
      rejectionsPerSecond: Math.round((rejected.length / elapsed) * 1000),
    });
  });

  it(`${webhookRuns} fuzzed webhook deliveries: a specific answer each, never a 5xx, canaries unharmed`, async () => {
    const referenceOf = async (orderId: string) =>
      String(
        (await cluster.collector.waitForOrderEvent(orderId, 'order.created', 120_000))['unique_reference'],
      );
    // Canaries the webhooks name: their exchange orders are real, the fuzzed statuses are not.
    const named = [await sendCanary('cefi', '1.778'), await sendCanary('cefi_fixed', '0.01778')];
    const references = [...(await Promise.all(named.map(referenceOf))), 'NOSUCHORDER', ''];
    const inputs = fc.sample(fuzzedWebhook({ secret: webhookSecret, references }), {
      seed,
      numRuns: webhookRuns,
    });
    const url = `http://127.0.0.1:${cluster.workers[0]!.port}/webhooks/exchange`;
    const answers: Record<string, number> = {};
    const problems: string[] = [];
    await pool(inputs, 8, async (input) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: input.headersAt(Math.floor(Date.now() / 1000)),
        body: input.body,
      });
      await response.arrayBuffer();
      answers[response.status] = (answers[response.status] ?? 0) + 1;
      const allowed = input.signedInTolerance ? [200, 202, 400] : [401];
      if (!allowed.includes(response.status))
        problems.push(
          `${input.shape}: ${response.status} (body ${input.body.toString('utf8').slice(0, 120)})`,
        );
    });
    expect(problems.slice(0, 20).join('\n')).toBe('');
    expect((await fetch(`http://127.0.0.1:${cluster.workers[0]!.metricsPort}/readyz`)).status).toBe(200);
    // No crash (Node ends the process on an unhandled rejection), no fatal log line.
    expect(cluster.workers[0]?.child.exitCode).toBeNull();
    expect(cluster.workers[0]?.log()).not.toMatch(/"level":(60|"fatal")/);
    const last = await sendCanary('cefi', '1.779');
    const open = await awaitEndings(cluster, [...named, last], 180_000);
    expect(open).toEqual([]);
    // The canaries, whatever the fuzzed webhooks claimed, end exactly as the exchange says, once each.
    await sleep(2_000);
    const canaryAmounts = new Set(canaries.map((c) => Number(c.create['deposit_amount'])));
    const violations = checkInvariants({
      orders: canaries,
      events: cluster.collector.events.filter((e) => canaries.some((c) => c.orderId === e.order_id)),
      exchangeOrders: exchangeOrdersOf(cluster.sandbox).filter((o) =>
        canaryAmounts.has(Number(o.depositAmount)),
      ),
      texts: [
        ...workerLogTexts(cluster.workers),
        { source: 'events topic', text: cluster.collector.events.map((e) => JSON.stringify(e)).join('\n') },
      ],
      secrets: environmentSecrets,
    });
    expect(formatViolations(violations)).toBe('');
    for (const canary of canaries)
      expect(cluster.collector.of(canary.orderId).at(-1)?.type, canary.orderId).toBe('order.completed');
    recordFigures({ test: `fuzz-worker-webhooks (${profile.name})`, seed, runs: webhookRuns, answers });
  });
});
