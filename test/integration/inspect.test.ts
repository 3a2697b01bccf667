// The order inspector (`npm run inspect`) as an operator runs it: a child process with the worker's variables,
// against orders real workers drove (open, then finished, followed live; one parked by the worker itself) and against
// a parked order whose history this test writes itself in the contract's shape.
import { execFileSync, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseView, OrderReport } from '../../src/inspect/order-report.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

const root = resolve(import.meta.dirname, '..', '..');
const inspectMain = join(root, 'src', 'inspect', 'main.ts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function inspect(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [inspectMain, ...args], {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolveRun({ code, stdout, stderr }));
  });
}

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
});
afterAll(async () => {
  await cluster?.stop();
});

describe('npm run inspect', () => {
  it('shows an open order by order_id and by unique_reference, then follows it to COMPLETED', async () => {
    const orderId = uniqueName('insp');
    await cluster.send(orderCreateCommand('cefi', '1.4142', orderId));
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
    const reference = String(created['unique_reference']);

    const byId = await inspect([orderId, '--json'], cluster.env);
    expect(byId.code, byId.stderr).toBe(0);
    const report = JSON.parse(byId.stdout) as OrderReport;
    expect(report.orderId).toBe(orderId);
    expect(report.uniqueReference).toBe(reference);
    expect(report.mode).toBe('cefi');
    expect(report.state?.name).toBe('open');
    expect(report.outcome).toBeNull();
    expect(report.waitingFor).toMatch(/exchange to move the order/);
    expect(report.next.map((n) => n.what)).toContain('polls GET /orders/{ref}/');
    expect((report.lease as LeaseView).holder).toContain(cluster.workers[0]!.name);
    const published = cluster.collector.of(orderId);
    expect(report.timeline.map((e) => e.seq)).toEqual(published.map((e) => e.seq));
    expect(report.timeline.map((e) => e.type)).toEqual(published.map((e) => e.type));
    expect(report.problems).toEqual([]);

    const byReference = await inspect([reference], cluster.env);
    expect(byReference.code, byReference.stderr).toBe(0);
    expect(byReference.stdout).toContain(`order      ${orderId}  (cefi)`);
    expect(byReference.stdout).toMatch(/^state {6}open {2}seq \d+/m);
    expect(byReference.stdout).toMatch(
      new RegExp(`^\\s+1 {2}\\S+Z\\s+${published[0]!.type.replace('.', '\\.')}`, 'm'),
    );

    // --follow prints the events that arrive after the report, and stops on SIGINT.
    const child = spawn(process.execPath, [inspectMain, orderId, '--follow'], {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '', ...cluster.env },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const waitOut = async (pattern: RegExp, what: string): Promise<void> => {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(out)) {
        if (Date.now() > deadline) throw new Error(`inspect --follow: no ${what} in:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await waitOut(/following/, 'follow banner');
    cluster.sandbox.advanceOrder(reference, 'completed');
    await waitOut(/order\.completed\s+\S+\s+withdraw tx/, 'order.completed line');
    child.kill('SIGINT');
    expect(await exited).toBe(0);

    const finished = await inspect([orderId, '--json'], cluster.env);
    const done = JSON.parse(finished.stdout) as OrderReport;
    expect(done.outcome).toBe('order.completed');
    expect(done.exchangeStatus).toBe('COMPLETED');
    expect(done.next).toEqual([]);
    expect(done.waitingFor).toMatch(/^nothing/);
  });

  it('says so, with exit status 1, for an order nobody knows', async () => {
    const run = await inspect([uniqueName('nobody')], cluster.env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no order with order_id or unique_reference/);
  });

  it("refuses a bad configuration with the worker schema's messages and exit status 2", async () => {
    const run = await inspect(['x'], { KAFKA_BROKERS: 'localhost', REDIS_URL: 'localhost:6379' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('config: KAFKA_BROKERS: each broker must be host:port');
    expect(run.stderr).toContain('config: REDIS_URL: must start with redis:// or rediss://');
  });

  it('shows an order the worker parked (a DeFi create whose outcome it could not establish) and how to settle it', async () => {
    const orderId = uniqueName('real-parked');
    cluster.sandbox.clearFaults();
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 1,
    });
    cluster.sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'expired_on_repeat' });
    await cluster.send(orderCreateCommand('defi', '173.21', orderId));
    await cluster.collector.waitForOrderEvent(orderId, 'order.parked', 90_000);
    cluster.sandbox.clearFaults();
    const text = await inspect([orderId], cluster.env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('PARKED since');
    expect(text.stdout).toContain('create_outcome_unknown');
    expect(text.stdout).toMatch(/^state {6}creating\.parked/m);
    expect(text.stdout).toMatch(/waits for {2}an operator/);
    // Its adopt and abandon lines (the inspector's settle, signed with OPERATOR_KEY_FILE); no unsigned kcat line.
    expect(
      text.stdout.split('\n').filter((line) => line.trim().startsWith('npm run -s inspect -- settle')),
    ).toHaveLength(2);
    expect(text.stdout).not.toContain('kcat -P');
    const report = JSON.parse((await inspect([orderId, '--json'], cluster.env)).stdout) as OrderReport;
    expect(report.outcome).toBe('order.parked');
    expect(report.parked).toMatchObject({ reason: 'create_outcome_unknown' });
    expect((report.lease as LeaseView).holder).toContain(cluster.workers[0]!.name);
  });

  it('shows a parked order with its window and the exact settle commands an operator can send', async () => {
    // Topics of their own, written the way the worker writes them (events + state record), with a traceparent.
    const { kafkaBrokers, redisUrl } = services();
    const name = uniqueName('parked');
    const topics = {
      commands: `${name}.commands`,
      events: `${name}.events`,
      state: `${name}.commands.state`,
    };
    const kafka = testKafka(kafkaBrokers);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: Object.values(topics).map((topic) => ({ topic, numPartitions: 2 })),
      waitForLeaders: true,
    });
    await admin.disconnect();
    const orderId = uniqueName('p');
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const at = (s: number): string => new Date(Date.now() - 60_000 + s * 1000).toISOString();
    const envelope = (seq: number) => ({
      event_id: `${orderId}:${seq}`,
      order_id: orderId,
      seq,
      occurred_at: at(seq),
    });
    const parked = {
      type: 'order.parked',
      ...envelope(2),
      reason: 'create_outcome_unknown',
      mode: 'defi',
      rate_id: 'r-123',
      window_from: at(1),
      window_to: at(2),
      attempts: 3,
      tried: ['GET /orders/ (CeFi list, 5 pages)', 'repeat POST with the same rate_id'],
      message: 'the exchange may have created this order; no lookup could establish it',
    };
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: topics.events,
      messages: [
        { type: 'order.quoted', ...envelope(1), rate_id: 'r-123', rate: '0.0003', expires_at: null },
        parked,
      ].map((event) => ({
        key: orderId,
        value: JSON.stringify(event),
        headers: { 'event-type': event.type, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      })),
    });
    await producer.send({
      topic: topics.state,
      messages: [
        {
          key: orderId,
          value: JSON.stringify({
            v: 1,
            order_id: orderId,
            partition: 0,
            fence: 1,
            rev: 4,
            seq: 2,
            updated_at: at(2),
            mode: 'defi',
            create_hash: 'h',
            commands: [],
            unique_reference: null,
            terminal: false,
            machine: {
              version: 1,
              orderId,
              resumeFrom: 'parked',
              stateValue: 'parked',
              done: false,
              context: {},
            },
          }),
        },
      ],
    });
    await producer.disconnect();
    const env = {
      KAFKA_BROKERS: kafkaBrokers.join(','),
      REDIS_URL: redisUrl,
      TOPIC_COMMANDS: topics.commands,
      TOPIC_EVENTS: topics.events,
      CONSUMER_GROUP: `${name}.workers`,
    };

    const text = await inspect([orderId], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('PARKED since');
    expect(text.stdout).toContain('create_outcome_unknown');
    expect(text.stdout).toContain(`window     ${parked.window_from} .. ${parked.window_to}`);
    expect(text.stdout).toMatch(/waits for {2}an operator/);
    expect(text.stdout).toContain(traceId);
    expect(text.stdout).toContain('lease      nobody holds it');
    const settleLines = text.stdout
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.startsWith('npm run -s inspect -- settle'));
    expect(settleLines).toEqual([
      `npm run -s inspect -- settle ${orderId} adopt "\${REF:?set REF to the unique_reference}" --seq 2`,
      `npm run -s inspect -- settle ${orderId} abandon --seq 2`,
    ]);
    expect(text.stdout).not.toContain('kcat -P');
    // The words each line hands to the inspector, as a shell makes them (REF is the operator's).
    const words = (line: string, env: Record<string, string>) =>
      execFileSync('bash', ['-c', line.replace(/^npm run -s inspect -- /, "printf '%s\\n' ")], { env })
        .toString()
        .trimEnd()
        .split('\n');
    expect(words(settleLines[0]!, { REF: 'K8J2M4N6P0' })).toEqual([
      'settle',
      orderId,
      'adopt',
      'K8J2M4N6P0',
      '--seq',
      '2',
    ]);
    expect(words(settleLines[1]!, {})).toEqual(['settle', orderId, 'abandon', '--seq', '2']);
    // Without REF the adopt line stops before anything runs, saying what to set.
    expect(() => execFileSync('bash', ['-c', settleLines[0]!], { env: {}, stdio: 'pipe' })).toThrow(
      /set REF to the unique_reference/,
    );

    const asJson = JSON.parse((await inspect([orderId, '--json'], env)).stdout) as OrderReport;
    expect(asJson.outcome).toBe('order.parked');
    expect(asJson.parked).toMatchObject({ attempts: 3, rateId: 'r-123', tried: parked.tried });
    expect(asJson.timeline.map((e) => e.traceId)).toEqual([traceId, traceId]);
  });
});
