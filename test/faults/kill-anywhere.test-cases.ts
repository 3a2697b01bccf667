// Kill anywhere: fast-check picks, from one seed, a plan of kill points - a moment in an order's life and a
// jitter - and the run SIGKILLs the replica driving that order at that moment, then starts a replacement. Moments
// are opened with sandbox faults (a request held for a while is a request in flight) or watched from outside (the
// exchange order appearing, a rebalance, a restore). After the plan, every order must end and the one invariant
// checker must find nothing. The test files in this folder run it at two sizes. A large plan runs in lanes:
// independent clusters (own topics, consumer group, sandbox and lease keys) side by side, each taking every
// lanes-th point of the one plan, so the waits of one lane (a dead replica's session, a restore) overlap the others.
import fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { AcceptedOrder } from '../support/invariants.ts';
import { orderCreateCommand, modeSpecs } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startWorker, type WorkerProcess } from '../support/worker-process.ts';
import {
  awaitEndings,
  cleanupStack,
  historyOf,
  leaseHolder,
  recordFigures,
  startFaultRun,
  type Outcome,
} from './harness.ts';
import { runSeed } from './seeds.ts';

export const moments = [
  'quoting',
  'cooldown_wait',
  'create_in_flight',
  'create_in_doubt',
  'deposit_patch_in_flight',
  'create_answered_transaction_open',
  'during_rebalance',
  'during_restore',
] as const;
export type Moment = (typeof moments)[number];
type Mode = (typeof modeSpecs)[number]['mode'];

export interface KillPoint {
  moment: Moment;
  mode: Mode;
  jitterMs: number;
  outcome: Outcome;
}

const killPoint: fc.Arbitrary<KillPoint> = fc
  .record({
    moment: fc.constantFrom(...moments),
    mode: fc.constantFrom<Mode>('defi', 'cefi', 'cefi_fixed'),
    jitterMs: fc.integer({ min: 0, max: 2_000 }),
    outcome: fc.constantFrom<Outcome>('completed', 'completed', 'refunded', 'canceled'),
  })
  // The cooldown exists for DeFi actionable quotes only.
  .map((p) => (p.moment === 'cooldown_wait' ? { ...p, mode: 'defi' as const } : p));

export function killPlan(seed: number, count: number): KillPoint[] {
  return (
    fc.sample(fc.array(killPoint, { minLength: count, maxLength: count }), { seed, numRuns: 1 })[0] ?? []
  );
}

const hold = 2_500;

async function until(
  what: string,
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 90_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) {
      console.log(`[kill-anywhere] gave up waiting for ${what}`);
      return false;
    }
    await sleep(25);
  }
  return true;
}

export interface LaneResult {
  lane: number;
  kills: number;
  missedMoments: number;
  reached: Partial<Record<Moment, number>>;
  orders: number;
  exchangeOrders: number;
  unfinished: number;
  workerExitsRestarted: string[];
  checked: string[];
  violations: number;
  /** The checker's report with the named orders' histories; empty when the lane held. */
  failure: string;
}

export async function runKillAnywhere(opts: {
  killPoints: number;
  lanes: number;
  label: string;
}): Promise<void> {
  const seed = runSeed();
  const plan = killPlan(seed, opts.killPoints);
  const lanes = Math.max(1, Math.min(opts.lanes, plan.length));
  console.log(
    `[kill-anywhere] seed ${seed}: ${opts.killPoints} kill points in ${lanes} lanes (replay with FAULT_SEED=${seed})`,
  );
  const started = Date.now();
  // Every lane runs to its end (and stops its own workers) even when another fails: with Promise.all the other
  // lanes' workers outlived the failed test and loaded the rest of the suite.
  const settled = await Promise.allSettled(
    Array.from({ length: lanes }, (_, lane) =>
      runLane({
        seed,
        lane,
        points: plan.flatMap((point, i) => (i % lanes === lane ? [{ point, index: i + 1 }] : [])),
      }),
    ),
  );
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  const results = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const sum = (pick: (r: LaneResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  const reached: Record<string, number> = {};
  for (const r of results)
    for (const [moment, n] of Object.entries(r.reached)) reached[moment] = (reached[moment] ?? 0) + n;
  recordFigures({
    test: `kill-anywhere (${opts.label})`,
    seed,
    lanes,
    killPoints: plan.length,
    killPointsReached: sum((r) => Object.values(r.reached).reduce((a, b) => a + b, 0)),
    reachedByMoment: reached,
    missedMoments: sum((r) => r.missedMoments),
    sigkills: sum((r) => r.kills),
    workerExitsRestarted: results.flatMap((r) => r.workerExitsRestarted),
    orders: sum((r) => r.orders),
    exchangeOrders: sum((r) => r.exchangeOrders),
    unfinished: sum((r) => r.unfinished),
    violations: sum((r) => r.violations),
    checked: results[0]?.checked ?? [],
    minutes: Math.round((Date.now() - started) / 6_000) / 10,
  });
  expect(results.map((r) => r.failure).join(''), `seed ${seed} (FAULT_SEED=${seed} replays the plan)`).toBe(
    '',
  );
}

async function runLane(opts: {
  seed: number;
  lane: number;
  points: Array<{ point: KillPoint; index: number }>;
}): Promise<LaneResult> {
  const { seed, lane } = opts;
  const { redisUrl } = services();
  const cleanups = cleanupStack();
  const orders: AcceptedOrder[] = [];
  const aimedAt = new Map<string, string>();
  const reachedByMoment: Partial<Record<Moment, number>> = {};
  let kills = 0;
  let missedMoments = 0;
  try {
    const { cluster, supervisor, check, outcomes } = await startFaultRun({
      name: `kill-anywhere lane ${lane}`,
      defer: cleanups.defer,
      workers: 3,
      partitions: 6,
      seed: seed + lane,
    });
    const spawned: WorkerProcess[] = [];
    cleanups.defer(() => Promise.all(spawned.map((w) => w.kill('SIGKILL').catch(() => null))));
    const live = () =>
      cluster.workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
    const receiver = cluster.workers[0]!;
    /** SIGKILLs a replica and starts its replacement (the webhook receiver comes back on its port). */
    const killAndReplace = async (victim: WorkerProcess): Promise<void> => {
      await victim.kill('SIGKILL');
      kills++;
      const replacement = await startWorker(
        uniqueName('ka'),
        cluster.env,
        victim.port === receiver.port ? receiver.port : undefined,
      );
      cluster.workers.push(replacement);
      spawned.push(replacement);
    };
    const victimFor = async (orderId: string): Promise<WorkerProcess> => {
      const holder = await leaseHolder(cluster, redisUrl, orderId);
      if (holder) return holder;
      const candidates = live();
      return candidates[Math.floor(Math.random() * candidates.length)] ?? receiver;
    };
    for (const { point, index } of opts.points) {
      const spec = modeSpecs.find((s) => s.mode === point.mode) ?? modeSpecs[0];
      const amount = (spec.base * (1.5 + (seed % 89) / 1000) + index / 997).toFixed(6);
      const orderId = uniqueName(`ka${index}-${point.moment}`);
      const command = orderCreateCommand(point.mode, amount, orderId);
      const accept = (id: string, create: Record<string, unknown>) => {
        orders.push({ orderId: id, create });
        outcomes.set(id, point.outcome);
        aimedAt.set(id, `${point.moment} +${point.jitterMs}ms (${point.mode})`);
      };
      cluster.sandbox.clearFaults();
      const held = (endpoint: string, kind: 'latency' | 'lost_response' = 'latency') =>
        cluster.sandbox.injectFault({ target: 'endpoint', endpoint, kind, latencyMs: hold, times: 1 });
      const fired = (id: number) => (cluster.sandbox.listFaults().find((f) => f.id === id)?.fired ?? 0) > 0;
      const exchangeHas = () =>
        cluster.sandbox.orders.list().some((o) => Number(o.order['deposit_amount']) === Number(amount));
      let reached = true;
      switch (point.moment) {
        case 'quoting': {
          const fault = held('GET /rate/');
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('the quote request', () => fired(fault));
          await sleep(point.jitterMs % hold);
          await killAndReplace(await victimFor(orderId));
          break;
        }
        case 'cooldown_wait': {
          // A sibling with the same pair and amount quotes first; ours must wait out the 15 s cooldown.
          const primerId = uniqueName(`ka${index}-primer`);
          const primer = orderCreateCommand('defi', amount, primerId);
          accept(primerId, primer);
          await cluster.send(primer);
          reached = await until('the primer quote', () =>
            cluster.collector.of(primerId).some((e) => e.type === 'order.quoted'),
          );
          accept(orderId, command);
          await cluster.send(command);
          await sleep(1_000 + point.jitterMs * 4);
          await killAndReplace(await victimFor(orderId));
          break;
        }
        case 'create_in_flight': {
          const fault = held('POST /orders/');
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('the create request', () => fired(fault));
          await sleep(point.jitterMs % hold);
          await killAndReplace(await victimFor(orderId));
          break;
        }
        case 'create_in_doubt': {
          const fault = held('POST /orders/', 'lost_response');
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('the lost create answer', () => fired(fault));
          await sleep(point.jitterMs % 1_000);
          await killAndReplace(await victimFor(orderId));
          break;
        }
        case 'deposit_patch_in_flight': {
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('order.created', () =>
            cluster.collector.of(orderId).some((e) => e.type === 'order.created'),
          );
          const fault = held('PATCH /orders/{unique_reference}/');
          await cluster.send({
            type: 'order.submit_deposit',
            command_id: `${orderId}-deposit`,
            order_id: orderId,
            tx_hash: `0x${index.toString(16).padStart(64, 'd')}`,
          });
          reached = reached && (await until('the deposit PATCH', () => fired(fault)));
          await sleep(point.jitterMs % hold);
          await killAndReplace(await victimFor(orderId));
          break;
        }
        case 'create_answered_transaction_open': {
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('the exchange order', exchangeHas);
          await sleep(point.jitterMs % 150);
          await killAndReplace(await victimFor(orderId));
          break;
        }
        case 'during_rebalance': {
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('order.quoted', () =>
            cluster.collector.of(orderId).some((e) => e.type === 'order.quoted'),
          );
          const joiner = await startWorker(uniqueName('ka-join'), cluster.env);
          cluster.workers.push(joiner);
          spawned.push(joiner);
          await sleep(point.jitterMs * 1.5);
          await killAndReplace(await victimFor(orderId));
          // Keep the cluster at its size: the longest-lived non-receiver leaves gracefully.
          const leaver = live().find((w) => w !== receiver && w.port !== receiver.port);
          if (leaver && live().length > 3) {
            supervisor.ignore(leaver);
            await leaver.kill('SIGTERM');
          }
          break;
        }
        case 'during_restore': {
          accept(orderId, command);
          await cluster.send(command);
          reached = await until('order.quoted', () =>
            cluster.collector.of(orderId).some((e) => e.type === 'order.quoted'),
          );
          const first = await victimFor(orderId);
          await killAndReplace(first);
          // The replica that takes the order over is killed while it restores it.
          const takenOver = await until('a new lease holder', async () => {
            const holder = await leaseHolder(cluster, redisUrl, orderId);
            return holder !== undefined && holder !== first;
          });
          await sleep(point.jitterMs % 500);
          const second = takenOver ? await leaseHolder(cluster, redisUrl, orderId) : undefined;
          if (second) await killAndReplace(second);
          reached = reached && takenOver;
          break;
        }
      }
      if (reached) reachedByMoment[point.moment] = (reachedByMoment[point.moment] ?? 0) + 1;
      else missedMoments++;
      console.log(
        `[kill-anywhere] lane ${lane} point ${index} ${point.moment} +${point.jitterMs}ms ${point.mode}: ${reached ? 'killed' : 'moment missed, killed anyway'} (${kills} kills so far in this lane)`,
      );
      // Let the cluster settle (every live replica ready, its partitions restored) before the next point; bounded,
      // so a replica that never settles shows up as missed moments rather than a stalled plan.
      await Promise.race([Promise.all(live().map((w) => w.ready())), sleep(45_000)]).catch(() => {});
    }
    cluster.sandbox.clearFaults();
    const open = await awaitEndings(
      cluster,
      orders.map((o) => o.orderId),
      Math.max(300_000, opts.points.length * 6_000),
    );
    const run = await check(orders);
    const named = [...new Set(run.violations.flatMap((v) => (v.orderId ? [v.orderId] : [])))];
    const histories = named
      .map((id) => `${id} [killed at ${aimedAt.get(id) ?? '?'}]: ${historyOf(cluster, id)}`)
      .join('\n');
    return {
      lane,
      kills,
      missedMoments,
      reached: reachedByMoment,
      orders: orders.length,
      exchangeOrders: cluster.sandbox.orders.list().length,
      unfinished: open.length,
      workerExitsRestarted: supervisor.restarts,
      checked: run.checked,
      violations: run.violations.length,
      failure: run.report === '' ? '' : `lane ${lane}:\n${run.report}\n${histories}\n`,
    };
  } finally {
    await cleanups.run();
  }
}
