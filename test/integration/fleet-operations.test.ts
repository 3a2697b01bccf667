// Fleet operations end to end (real workers, Kafka, Redis, the sandbox): three CeFi orders parked by the sandbox's
// in-doubt faults (the POST's answer lost, then a GET /orders/ lookup refused for good), found with
// `inspect list --state parked` and with the read API of either replica (owner or not), each one's exchange order
// found with `find-exchange-order`, two adopted in one bulk `settle`, the third abandoned; and the trading service's
// credentials (no operator signature, or another key's) refused with command.rejected `unauthorized`.
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signOperatorCommand } from '../../src/contract/operator-signature.ts';
import { demoKeys, demoReferral } from '../../sandbox/index.ts';
import { testOperator } from '../support/operator-key.ts';
import { modeSpecs } from '../support/order-specs.ts';
import { seqProblems } from '../support/kafka-helpers.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';

const root = resolve(import.meta.dirname, '..', '..');
const inspectMain = join(root, 'src', 'inspect', 'main.ts');
const apiToken = 'fleet-api-token-4e8d2b7a91c3';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let cluster: Cluster;
let toolEnv: Record<string, string>;
let dir: string;

function inspect(args: string[]): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [inspectMain, ...args], {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '', ...toolEnv },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

/** Every answer of the read API, kept to look for secrets in. */
const answers: string[] = [];
/** A gauge summed over both replicas (each counts the orders of the partitions it owns). */
async function gauge(name: string): Promise<number> {
  let sum = 0;
  for (const worker of cluster.workers) {
    const text = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
    const line = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
    sum += Number(line?.[1] ?? NaN);
  }
  return sum;
}

async function api(worker: number, path: string, token: string | null = apiToken) {
  const response = await fetch(`http://127.0.0.1:${cluster.workers[worker]!.metricsPort}${path}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await response.text();
  answers.push(text);
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
}

beforeAll(async () => {
  cluster = await startCluster({
    workers: 2,
    partitions: 4,
    // No re-check while the test runs: a parked order stays parked until the operator settles it.
    env: { OPS_API_TOKEN: apiToken, PARKED_RECHECK_MS: '3600000' },
  });
  dir = mkdtempSync(join(tmpdir(), 'fleet-'));
  const keyFile = join(dir, 'operator.pem');
  writeFileSync(keyFile, testOperator.privateKeyPem, { mode: 0o600 });
  toolEnv = { ...cluster.env, OPERATOR_KEY_FILE: keyFile, OPERATOR_KEY_ID: testOperator.keyId };
});
afterAll(async () => {
  await cluster?.stop();
});

describe('fleet operations', () => {
  it('parks three orders, finds them, finds their exchange orders, settles two in bulk and abandons the third; a trading service cannot settle', async () => {
    const cefi = modeSpecs.find((s) => s.mode === 'cefi')!;
    const fixed = modeSpecs.find((s) => s.mode === 'cefi_fixed')!;
    const plan = [cefi, cefi, fixed].map(({ base, ...fields }, i) => {
      const orderId = uniqueName(`fleet-${i}`);
      const amount = (base * (1.73 + i / 100)).toFixed(6);
      return {
        orderId,
        amount,
        command: {
          type: 'order.create',
          command_id: `${orderId}-c`,
          order_id: orderId,
          ...fields,
          deposit_amount: amount,
        },
      };
    });
    cluster.sandbox.clearFaults();
    // The exchange creates each order but the answer is lost; the lookup that would find it is refused for good.
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 3,
    });
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/',
      kind: 'http_error',
      status: 403,
    });
    for (const order of plan) await cluster.send(order.command);
    for (const order of plan) {
      const parked = await cluster.collector.waitForOrderEvent(order.orderId, 'order.parked', 90_000);
      expect(parked).toMatchObject({ reason: 'create_outcome_unknown' });
    }
    cluster.sandbox.clearFaults();
    const exchangeOrderOf = (amount: string) =>
      cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === Number(amount));
    for (const order of plan) expect(exchangeOrderOf(order.amount)).toHaveLength(1);
    const ids = plan.map((o) => o.orderId);
    // The fleet gauges: three parked over the replicas together, the oldest for a few seconds already.
    expect(await gauge('worker_parked_orders')).toBe(3);
    expect(await gauge('worker_oldest_parked_order_age_seconds')).toBeGreaterThan(0);
    expect(await gauge('worker_stalled_orders')).toBe(0);

    // 1. inspect list --state parked (and --mode).
    const listed = await inspect(['list', '--state', 'parked', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const list = JSON.parse(listed.stdout) as {
      orders: Array<{ order_id: string; seq: number; phase: string }>;
    };
    const mine = list.orders.filter((o) => ids.includes(o.order_id));
    expect(mine.map((o) => o.order_id).sort()).toEqual([...ids].sort());
    expect(mine.every((o) => o.phase === 'parked')).toBe(true);
    const cefiOnly = JSON.parse(
      (await inspect(['list', '--state', 'parked', '--mode', 'cefi', '--json'])).stdout,
    ) as {
      orders: Array<{ order_id: string }>;
    };
    expect(
      cefiOnly.orders
        .filter((o) => ids.includes(o.order_id))
        .map((o) => o.order_id)
        .sort(),
    ).toEqual([ids[0], ids[1]].sort());
    const text = await inspect(['list', '--state', 'parked']);
    for (const id of ids) expect(text.stdout).toMatch(new RegExp(`^${id}\\s+cefi`, 'm'));

    // 2. The read API of both replicas: the same parked orders, and each order from the replica that does not own it.
    for (const worker of [0, 1]) {
      const page = await api(worker, '/orders?state=parked&older_than=1s&limit=1000');
      expect(page.status).toBe(200);
      const found = (page.body['orders'] as Array<{ order_id: string }>).map((o) => o.order_id);
      expect(ids.every((id) => found.includes(id))).toBe(true);
    }
    for (const id of ids) {
      const answers = await Promise.all([api(0, `/orders/${id}`), api(1, `/orders/${id}`)]);
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(answer.body['order']).toMatchObject({
          order_id: id,
          phase: 'parked',
          state: 'creating.parked',
        });
      }
      const holder = (answers[0].body['replica'] as { worker_id: string } | null)?.worker_id;
      expect(cluster.workers.map((w) => w.name)).toContain(holder);
      // One of the two is not the holder: it answered all the same.
      expect(answers.map((a) => a.body['answered_by'])).toEqual(cluster.workers.map((w) => w.name));
    }
    expect((await api(0, `/orders/${ids[0]}`, null)).status).toBe(401);
    expect((await api(1, '/orders?state=parked', 'wrong-token')).status).toBe(401);

    // 3. find-exchange-order: the one exchange order each could be, and the settle line for it.
    const picks = new Map<string, { settle: Record<string, unknown>; kcat: string }>();
    for (const order of plan) {
      const found = await inspect(['find-exchange-order', order.orderId, '--json']);
      expect(found.code, found.stderr).toBe(0);
      const report = JSON.parse(found.stdout) as {
        pick: { uniqueReference: string } | null;
        candidates: Array<{ matches: boolean }>;
        settle: Record<string, unknown>;
        kcat: string;
      };
      expect(report.pick?.uniqueReference).toBe(exchangeOrderOf(order.amount)[0]?.order['unique_reference']);
      expect(report.candidates.filter((c) => c.matches)).toHaveLength(1);
      expect(report.kcat).toMatch(/-H 'operator-signature=/);
      picks.set(order.orderId, report);
    }
    const human = await inspect(['find-exchange-order', ids[0]!]);
    expect(human.stdout).toMatch(/^\* \S+ {2}created/m);
    expect(human.stdout).toContain(`npm run -s inspect -- settle ${ids[0]} adopt`);

    // 4. The trading service's credentials: no operator signature, or a key the worker does not know.
    const third = plan[2]!.orderId;
    await cluster.send(
      { type: 'order.settle', command_id: `${third}-svc`, order_id: third, resolution: 'abandon' },
      { unsigned: true },
    );
    const stranger = generateKeyPairSync('ed25519')
      .privateKey.export({ format: 'pem', type: 'pkcs8' })
      .toString();
    const forged = {
      type: 'order.settle',
      command_id: `${third}-forged`,
      order_id: third,
      resolution: 'abandon',
    };
    await cluster.send(forged, {
      unsigned: true,
      headers: signOperatorCommand(
        { keyId: testOperator.keyId, privateKeyPem: stranger },
        { key: third, value: JSON.stringify(forged) },
        Date.now(),
      ),
    });
    await cluster.collector.waitFor(
      () => cluster.collector.of(third).filter((e) => e.type === 'command.rejected').length === 2,
      'two rejections of the trading service settle',
      60_000,
    );
    const rejections = cluster.collector.of(third).filter((e) => e.type === 'command.rejected');
    expect(rejections.map((e) => e['reason'])).toEqual(['unauthorized', 'unauthorized']);
    expect(String(rejections[0]!['message'])).toMatch(/must be signed with an operator key/);
    expect(String(rejections[1]!['message'])).toMatch(/does not match this command/);
    expect(cluster.collector.of(third).some((e) => e.type === 'order.failed')).toBe(false);

    // 5. Two settled in one bulk call (adopt, from find-exchange-order's lines) and the third refused in it: its
    // state changed (the rejections took seq numbers) since it was listed.
    const planFile = join(dir, 'plan.txt');
    const listedThird = mine.find((o) => o.order_id === third)!;
    writeFileSync(
      planFile,
      [
        '# adopt the exchange orders find-exchange-order picked',
        JSON.stringify(picks.get(ids[0]!)!.settle),
        JSON.stringify(picks.get(ids[1]!)!.settle),
        `${third} ${listedThird.seq} abandon`,
      ].join('\n'),
    );
    const bulk = await inspect(['settle', '--file', planFile]);
    expect(bulk.code).toBe(1);
    expect(bulk.stdout).toMatch(new RegExp(`^sent {2}${ids[0]} {2}adopt`, 'm'));
    expect(bulk.stdout).toMatch(new RegExp(`^sent {2}${ids[1]} {2}adopt`, 'm'));
    expect(bulk.stdout).toMatch(
      new RegExp(`^REFUSED {2}${third} {2}its state changed since it was listed`, 'm'),
    );
    for (const id of [ids[0]!, ids[1]!]) {
      const created = await cluster.collector.waitForOrderEvent(id, 'order.created', 60_000);
      expect(created['unique_reference']).toBe(picks.get(id)!.settle['unique_reference']);
      const types = cluster.collector.of(id).map((e) => e.type);
      expect(types.slice(-2)).toEqual(['order.operator_command', 'order.created']);
      expect(cluster.collector.of(id).find((e) => e.type === 'order.operator_command')).toMatchObject({
        resolution: 'adopt',
        operator: { key_id: testOperator.keyId },
      });
    }

    // 6. The third abandoned, at its current seq, by the operator.
    const current = (await api(1, `/orders/${third}`)).body['order'] as { seq: number };
    const abandon = await inspect([
      'settle',
      third,
      'abandon',
      '--seq',
      String(current.seq),
      '--note',
      'no exchange order',
    ]);
    expect(abandon.code, abandon.stdout + abandon.stderr).toBe(0);
    const failed = await cluster.collector.waitForOrderEvent(third, 'order.failed', 60_000);
    expect(failed).toMatchObject({ reason: 'abandoned_by_operator' });
    expect(
      cluster.collector
        .of(third)
        .map((e) => e.type)
        .slice(-2),
    ).toEqual(['order.operator_command', 'order.failed']);
    for (const id of ids) expect(seqProblems(cluster.collector.of(id))).toEqual([]);
    expect((await api(0, `/orders/${third}`)).body['order']).toMatchObject({
      phase: 'finished',
      state: 'failed',
    });

    // Settled: no parked order left (the gauges are read on scrape, from the records the replicas hold).
    for (let deadline = Date.now() + 10_000; (await gauge('worker_parked_orders')) !== 0;) {
      if (Date.now() > deadline) throw new Error('worker_parked_orders did not come back to 0');
      await new Promise((r) => setTimeout(r, 200));
    }

    // No answer of the read API carried a secret of the configuration.
    const secrets = [
      apiToken,
      webhookSecret,
      demoKeys.cefi,
      demoKeys.cefiFixed,
      demoKeys.defi,
      demoReferral.token,
    ];
    for (const secret of secrets) expect(answers.filter((a) => a.includes(secret))).toEqual([]);
  });
});
