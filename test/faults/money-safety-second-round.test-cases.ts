// Money safety, second round (issue 50): real worker processes, real Kafka and Redis, the sandbox as the exchange.
// Orders in every mode, many of them siblings (identical content under other order_ids), with 18-decimal amounts,
// against an exchange that stores 8 digits and rounds (round_amounts; the rounding drawn from the seed), with one
// creation fault per group of siblings drawn by fast-check from the run's seed and aimed at the group by its amount
// (whenBody): a lost answer, a 5xx/408 after the create, a create that lands after the client gave up
// (late_landing), "expired" on a DeFi repeat, or a first POST answered 200 with a sibling's order
// (reuse_other_order). Deposits are submitted for a share of the orders while the exchange moves them on (some to
// CANCELED a moment later). A replica is SIGKILLed while holding the lease of a CeFi and of a DeFi order whose POST
// is held by the exchange (the successor's lookup or repeat runs before that POST lands), and another at a third
// of the run. Then the one invariant checker: at most one exchange order per order_id (from the sandbox's own
// record), no exchange order published by two order_ids, every accepted deposit named in its order's events, one
// ending per order (terminal or parked), seq gapless.
//
// Late landings are drawn within what the worker's documented settle rule promises to survive (README,
// CREATE_SETTLE_MS: the create timeout of 30 s plus LEASE_TTL_MS): at most 34 s after arrival with the run's 40 s
// settle window and 6 s lease. A CeFi POST that lands later than any settle window is beyond what a client without
// an idempotency key can tell apart from "not created"; the sandbox can make it, this run does not.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { FaultSpec, RoundingMode } from '../../sandbox/index.ts';
import type { AcceptedOrder, SubmittedDeposit } from '../support/invariants.ts';
import { modeSpecs } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startWorker, type WorkerProcess } from '../support/worker-process.ts';
import {
  awaitEndings,
  cleanupStack,
  endingOf,
  historyOf,
  leaseHolder,
  recordFigures,
  startFaultRun,
  type Outcome,
} from './harness.ts';
import { runSeed } from './seeds.ts';

type Mode = (typeof modeSpecs)[number]['mode'];

export const creationFaults = [
  'none',
  'lost_response',
  'create_then_error',
  'late_landing',
  'expired_on_repeat',
  'reuse_other_order',
] as const;
export type CreationFault = (typeof creationFaults)[number];

/** One group of orders with identical content (a single order, or siblings), and what the exchange does to it. */
export interface GroupPlan {
  mode: Mode;
  size: number;
  /** The 15 digits after the amount's 3 that tell groups apart: the amount has 18 fractional digits. */
  tail: string;
  fault: CreationFault;
  status: 408 | 500 | 502 | 503 | 504;
  landAfterMs: number;
  /** late_landing: held without an answer until it lands (else dropped at once). */
  held: boolean;
  /** Each member gets an order.submit_deposit once its order.created is seen. */
  deposit: boolean;
  /** How long the exchange waits after order.created before it walks the order to its outcome. */
  driveDelayMs: number;
  outcome: Outcome;
}

export interface RunPlan {
  rounding: RoundingMode;
  groups: GroupPlan[];
  /** The fraction of the orders created at which a random replica is SIGKILLed. */
  killAtCreated: number;
}

const groupArbitrary: fc.Arbitrary<Omit<GroupPlan, 'mode'>> = fc.record({
  size: fc.constantFrom(1, 1, 1, 1, 1, 1, 2, 2, 3),
  tail: fc
    .tuple(fc.stringMatching(/^[0-9]{14}$/), fc.constantFrom(...'123456789'))
    .map(([head, last]) => `${head}${last}`),
  fault: fc.constantFrom<CreationFault>(
    'none',
    'none',
    'none',
    'lost_response',
    'lost_response',
    'create_then_error',
    'create_then_error',
    'late_landing',
    'late_landing',
    'expired_on_repeat',
    'reuse_other_order',
  ),
  status: fc.constantFrom(408, 500, 502, 503, 504),
  landAfterMs: fc.integer({ min: 2_000, max: 34_000 }),
  held: fc.boolean(),
  deposit: fc.constantFrom(false, false, true),
  driveDelayMs: fc.integer({ min: 0, max: 2_500 }),
  outcome: fc.constantFrom<Outcome>('completed', 'completed', 'completed', 'refunded', 'canceled'),
});

/** The run's plan from its seed: groups cycling through the modes until `orders` orders, the rounding, the kill. */
export function planRun(seed: number, orders: number): RunPlan {
  const candidates = fc.tuple(
    fc.constantFrom<RoundingMode>('half_even', 'half_up', 'truncate'),
    fc.array(groupArbitrary, { minLength: orders, maxLength: orders }),
    fc.double({ min: 0.25, max: 0.5, noNaN: true }),
  );
  const [rounding, drawn, killAtCreated] = fc.sample(candidates, { seed, numRuns: 1 })[0] ?? [
    'half_even',
    [],
    0.3,
  ];
  const groups: GroupPlan[] = [];
  let total = 0;
  for (const [i, group] of drawn.entries()) {
    if (total >= orders) break;
    const mode = modeSpecs[i % modeSpecs.length]?.mode ?? 'cefi';
    const size = Math.min(group.size, orders - total);
    // A reuse needs an order of the same content first (a sibling's); "expired" is said to DeFi repeats only.
    const fault =
      group.fault === 'reuse_other_order' && size === 1
        ? 'none'
        : group.fault === 'expired_on_repeat' && mode !== 'defi'
          ? 'lost_response'
          : group.fault;
    groups.push({ ...group, mode, size, fault });
    total += size;
  }
  return { rounding, groups, killAtCreated };
}

/**
 * Fractional digits of the amounts: 18 (the command contract's most). MS2_AMOUNT_DECIMALS=8 makes a control run
 * whose amounts the exchange stores as sent, to tell what the 18 digits cause from what the other faults do.
 */
const amountDecimals = Math.min(18, Math.max(4, Number(process.env['MS2_AMOUNT_DECIMALS'] ?? 18)));

/** The group's deposit_amount: `amountDecimals` fractional digits, the first three apart per group. */
function amountOf(group: GroupPlan, index: number, variant: number): string {
  const spec = modeSpecs.find((s) => s.mode === group.mode) ?? modeSpecs[0];
  return `${(spec.base * (1 + variant / 100) + index / 1000).toFixed(3)}${group.tail.slice(-(amountDecimals - 3))}`;
}

/** The faults aimed at one group by its amount (the first POST of the group meets them). */
function faultsOf(group: GroupPlan, amount: string): FaultSpec[] {
  const aim = {
    target: 'endpoint' as const,
    endpoint: 'POST /orders/',
    whenBody: { deposit_amount: amount },
  };
  switch (group.fault) {
    case 'none':
      return [];
    case 'lost_response':
      return [{ ...aim, kind: 'lost_response', times: 1 }];
    case 'create_then_error':
      return [{ ...aim, kind: 'create_then_error', status: group.status, times: 1 }];
    case 'late_landing':
      return [
        {
          ...aim,
          kind: 'late_landing',
          landAfterMs: group.landAfterMs,
          holdMs: group.held ? group.landAfterMs : 0,
          times: 1,
        },
      ];
    case 'expired_on_repeat':
      // The first answer is lost, so the worker repeats; the first two repeats are told "expired".
      return [
        { ...aim, kind: 'lost_response', times: 1 },
        { ...aim, kind: 'expired_on_repeat', times: 2 },
      ];
    case 'reuse_other_order':
      return [{ ...aim, kind: 'reuse_other_order', times: 1 }];
  }
}

export interface SecondRoundFigures {
  seed: number;
  orders: number;
  groups: number;
  siblingGroups: Record<Mode, number>;
  rounding: RoundingMode;
  amountDecimals: number;
  plannedFaults: Record<string, number>;
  faultsFired: Record<string, number>;
  lateLandings: Record<string, number>;
  takeovers: string[];
  sigkills: number;
  deposits: number;
  exchangeOrders: number;
  endings: Record<string, number>;
  unfinished: number;
  /** From the start of the run to the moment the last order that ended did (the run stops waiting for the others). */
  lastEndingSeconds: number;
  violationsByInvariant: Record<string, number>;
  checked: string[];
  seconds: number;
}

const resultsDir = join(resolve(import.meta.dirname, '..', '..'), '.services', 'fault-runs');

const count = <T extends string>(values: T[]): Record<string, number> =>
  Object.fromEntries([...new Set(values)].sort().map((v) => [v, values.filter((x) => x === v).length]));

export async function runMoneySafetySecondRound(opts: { orders: number; label: string }): Promise<void> {
  const started = Date.now();
  const seed = runSeed();
  const plan = planRun(seed, opts.orders);
  const cleanups = cleanupStack();
  try {
    const run = await startFaultRun({
      name: `money-safety-second-round (${opts.label})`,
      defer: cleanups.defer,
      workers: 3,
      partitions: 6,
      seed,
      actionableDelayMs: 800,
      // The worker's documented floor (README): the create timeout (30 s) plus LEASE_TTL_MS (6 s here).
      env: { CREATE_SETTLE_MS: '40000' },
    });
    const { cluster, supervisor } = run;
    const { redisUrl } = services();
    console.log(
      `[money-safety-2] seed ${seed}: ${opts.orders} orders in ${plan.groups.length} groups, ${amountDecimals}-decimal amounts stored rounded ${plan.rounding} to 8 digits`,
    );

    // ---- the exchange: stores 8 digits; one creation fault per group, aimed by the group's amount
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'round_amounts',
      rounding: plan.rounding,
    });
    const variant = seed % 89;
    const orders: AcceptedOrder[] = [];
    const plannedFault = new Map<string, string>();
    const depositPlanned = new Set<string>();
    const groupsOrders: AcceptedOrder[][] = plan.groups.map((group, g) => {
      const amount = amountOf(group, g, variant);
      for (const spec of faultsOf(group, amount)) cluster.sandbox.injectFault(spec);
      const { base: _base, ...fields } = modeSpecs.find((s) => s.mode === group.mode) ?? modeSpecs[0];
      return Array.from({ length: group.size }, (_, member) => {
        const orderId = uniqueName(`ms2-g${g}${member === 0 ? '' : `-sib${member}`}`);
        const order = {
          orderId,
          create: {
            type: 'order.create',
            command_id: `${orderId}-create`,
            order_id: orderId,
            ...fields,
            deposit_amount: amount,
          },
        };
        orders.push(order);
        run.outcomes.set(orderId, group.outcome);
        run.driveDelays.set(orderId, group.driveDelayMs);
        plannedFault.set(
          orderId,
          `${group.mode} ${group.fault}${group.fault === 'late_landing' ? ` ${group.landAfterMs} ms${group.held ? ' held' : ' dropped'}` : ''}${group.fault === 'create_then_error' ? `/${group.status}` : ''}${group.size > 1 ? ` (${group.size} siblings)` : ''}`,
        );
        if (group.deposit) depositPlanned.add(orderId);
        return order;
      });
    });

    // ---- deposits: submitted as soon as the order is created, while the exchange may already move it on
    const deposits: SubmittedDeposit[] = [];
    let depositing = true;
    const depositLoop = (async () => {
      while (depositing) {
        for (const orderId of depositPlanned) {
          if (!cluster.collector.of(orderId).some((e) => e.type === 'order.created')) continue;
          depositPlanned.delete(orderId);
          const txHash = `0x${createHash('sha256').update(`${seed}:${orderId}`).digest('hex')}`;
          const commandId = `${orderId}-deposit`;
          deposits.push({ orderId, commandId, txHash });
          await cluster.send({
            type: 'order.submit_deposit',
            command_id: commandId,
            order_id: orderId,
            tx_hash: txHash,
          });
        }
        await sleep(100);
      }
    })();
    cleanups.defer(async () => {
      depositing = false;
      await depositLoop;
    });

    // ---- replicas die: the replica holding a lease mid-create (twice), and one at a third of the run
    const live = (): WorkerProcess[] =>
      cluster.workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
    let sigkills = 0;
    const killAndReplace = async (victim: WorkerProcess): Promise<void> => {
      supervisor.ignore(victim);
      await victim.kill('SIGKILL');
      sigkills++;
      const replacement = await startWorker(
        uniqueName('ms2-repl'),
        cluster.env,
        victim.port === cluster.webhookPort ? cluster.webhookPort : undefined,
      );
      cluster.workers.push(replacement);
    };
    const takeovers: string[] = [];
    /** A single order whose POST the exchange holds 20 s; its lease holder dies while it is held. */
    const takeoverMidCreate = async (mode: Mode, index: number): Promise<void> => {
      const group: GroupPlan = {
        mode,
        size: 1,
        tail: String(seed).padStart(14, '7').slice(-14) + '3',
        fault: 'late_landing',
        status: 503,
        landAfterMs: 20_000,
        held: true,
        deposit: false,
        driveDelayMs: 0,
        outcome: 'completed',
      };
      const amount = amountOf(group, 900 + index, variant);
      const orderId = uniqueName(`ms2-takeover-${mode}`);
      const [spec] = faultsOf(group, amount);
      const faultId = cluster.sandbox.injectFault(spec!);
      const { base: _base, ...fields } = modeSpecs.find((s) => s.mode === mode) ?? modeSpecs[0];
      const create = {
        type: 'order.create',
        command_id: `${orderId}-create`,
        order_id: orderId,
        ...fields,
        deposit_amount: amount,
      };
      orders.push({ orderId, create });
      plannedFault.set(orderId, `${mode} takeover mid-create (POST held 20 s, its lease holder SIGKILLed)`);
      await cluster.send(create);
      const deadline = Date.now() + 90_000;
      const fired = () => (cluster.sandbox.listFaults().find((f) => f.id === faultId)?.fired ?? 0) > 0;
      while (!fired() && Date.now() < deadline) await sleep(50);
      let holder = await leaseHolder(cluster, redisUrl, orderId);
      while (!holder && Date.now() < deadline) {
        await sleep(100);
        holder = await leaseHolder(cluster, redisUrl, orderId);
      }
      if (!fired() || !holder) {
        takeovers.push(`${orderId}: moment missed (fired ${fired()}, holder ${holder?.name ?? 'none'})`);
        return;
      }
      await killAndReplace(holder);
      takeovers.push(`${orderId}: ${holder.name} SIGKILLed with its POST held`);
      console.log(`[money-safety-2] SIGKILL ${holder.name} holding ${orderId} with its POST held`);
    };

    await takeoverMidCreate('cefi', 0);
    // Interleave the groups so siblings are in flight together.
    const random = run.random;
    const shuffled = groupsOrders.flat().sort(() => random() - 0.5);
    const half = Math.floor(shuffled.length / 2);
    for (const order of shuffled.slice(0, half)) await cluster.send(order.create);
    await takeoverMidCreate('defi', 1);
    for (const order of shuffled.slice(half)) await cluster.send(order.create);

    const createdCount = () => cluster.collector.events.filter((e) => e.type === 'order.created').length;
    const reachedKill = await cluster.collector
      .waitFor(() => createdCount() >= orders.length * plan.killAtCreated, 'the kill point', 600_000)
      .then(
        () => true,
        () => false,
      );
    const victim = live()[Math.floor(random() * live().length)];
    if (victim) {
      console.log(
        `[money-safety-2] SIGKILL ${victim.name} with ${createdCount()} orders created (${reachedKill ? 'at' : 'past'} the kill point)`,
      );
      await killAndReplace(victim);
    }

    // ---- every order ends; nothing is still due to land at the exchange
    // Every order ends, or the run stops waiting: at its cap, or once no order has ended for `stallMs` (longer than
    // any wait the worker is designed to make here: the 40 s settle, a 60 s backoff, the 10 s parked re-check).
    const stallMs = 240_000;
    const cap = Date.now() + (opts.orders >= 200 ? 900_000 : 420_000);
    let stillOpen = orders.length;
    let lastEndingAt = Date.now();
    for (;;) {
      const now = await awaitEndings(
        cluster,
        orders.map((o) => o.orderId),
        0,
      );
      if (now.length < stillOpen) lastEndingAt = Date.now();
      stillOpen = now.length;
      if (stillOpen === 0 || Date.now() > cap || Date.now() - lastEndingAt > stallMs) break;
      await sleep(1_000);
    }
    const open = await awaitEndings(
      cluster,
      orders.map((o) => o.orderId),
      0,
    );
    const lastEndingSeconds = Math.round((lastEndingAt - started) / 1000);
    const landingDeadline = Date.now() + 60_000;
    while (cluster.sandbox.lateLandings().some((l) => l.state === 'pending') && Date.now() < landingDeadline)
      await sleep(250);
    depositing = false;
    await depositLoop;
    const checked = await run.check(orders, deposits);

    const endings = orders.map((o) => endingOf(cluster.collector.of(o.orderId))?.type ?? 'none');
    const siblingGroups = { defi: 0, cefi: 0, cefi_fixed: 0 } as Record<Mode, number>;
    for (const group of plan.groups) if (group.size > 1) siblingGroups[group.mode]++;
    const figures: SecondRoundFigures = {
      seed,
      orders: orders.length,
      groups: plan.groups.length,
      siblingGroups,
      rounding: plan.rounding,
      amountDecimals,
      plannedFaults: count(plan.groups.map((g) => `${g.mode} ${g.fault}`)),
      faultsFired: Object.fromEntries(
        Object.entries(
          cluster.sandbox.listFaults().reduce<Record<string, number>>((sum, f) => {
            const key = `${f.spec.kind}${'status' in f.spec && f.spec.status ? `/${f.spec.status}` : ''}`;
            sum[key] = (sum[key] ?? 0) + f.fired;
            return sum;
          }, {}),
        ).sort(),
      ),
      lateLandings: count(
        cluster.sandbox.lateLandings().map((l) => `${l.state}${l.status ? ` ${l.status}` : ''}`),
      ),
      takeovers,
      sigkills,
      deposits: deposits.length,
      exchangeOrders: cluster.sandbox.orders.list().length,
      endings: count(endings),
      unfinished: open.length,
      lastEndingSeconds,
      violationsByInvariant: count(checked.violations.map((v) => v.invariant)),
      checked: checked.checked,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    // A violation of a sibling group names its orders in its detail only.
    const mentioned = (text: string): string[] =>
      orders.filter((o) => text.includes(o.orderId)).map((o) => o.orderId);
    const named = [
      ...new Set([
        ...open,
        ...checked.violations.flatMap((v) => (v.orderId ? [v.orderId] : mentioned(v.detail))),
      ]),
    ];
    const histories = named.map(
      (id) =>
        `${id}${open.includes(id) ? ' (unfinished)' : ''} [${plannedFault.get(id) ?? '?'}]: ${historyOf(cluster, id)}`,
    );
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `money-safety-second-round-${seed}.json`);
    writeFileSync(
      file,
      `${JSON.stringify({ ...figures, violations: checked.violations, histories, planned: Object.fromEntries(plannedFault) }, null, 2)}\n`,
    );
    recordFigures({ test: `money-safety-second-round (${opts.label})`, ...figures, details: file });
    expect(
      checked.report,
      `seed ${seed} (FAULT_SEED=${seed} replays the plan); details in ${file}\n${histories.join('\n')}`,
    ).toBe('');
  } finally {
    await cleanups.run();
  }
}
