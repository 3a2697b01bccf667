// Trading services that are not kafkajs: kcat (librdkafka, its default consistent_random partitioner, which puts
// most keys on another partition than murmur2) and the Apache Kafka Java client (a ten-line producer, its default
// partitioner), mixed with kafkajs for the same orders, against two real workers. Every order ends as expected with
// one exchange order; commands that arrived on another partition than their order's are forwarded there; two
// partitioners creating one order make one order; consumers of the events topic in both clients read every event
// with its headers. A parked order is settled with the runbook's own kcat line, another with the inspector's, and
// every kcat or curl block of docs/operations.md is run here as printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKafkaJars } from '../../dev/services/kafka-local.ts';
import { demoKeys } from '../../sandbox/index.ts';
import { defaultPartitionOf } from '../../src/kafka/partitioning.ts';
import { seqProblems, type PublishedEvent } from '../support/kafka-helpers.ts';
import { modeSpecs, orderCreateCommand } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';

const root = resolve(import.meta.dirname, '..', '..');
const javaClient = join(root, 'test', 'support', 'foreign', 'ForeignKafkaClient.java');
const partitions = 4;

let cluster: Cluster;
let classpath: string;
let brokers: string;

beforeAll(async () => {
  // No test is skipped for a missing tool: kcat (Debian package) and a JDK must be there.
  await run('kcat', ['-V']);
  classpath = await ensureKafkaJars();
  brokers = services().kafkaBrokers.join(',');
  cluster = await startCluster({ workers: 2, partitions });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

interface Ran {
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (stdin given, or closed); rejects on a non-zero exit with what it printed. */
function run(
  command: string,
  args: string[],
  opts: { input?: string; env?: Record<string, string> } = {},
): Promise<Ran> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolveRun({ stdout, stderr })
        : reject(
            new Error(`${command} ${args.join(' ')} exited ${code}:\n${stdout}\n${stderr}`.slice(0, 4000)),
          ),
    );
    child.stdin.end(opts.input ?? '');
  });
}

/** A shell script as an operator pastes it, in bash, with the worker's variables and the script's own. */
function shell(script: string, env: Record<string, string> = {}): Promise<Ran> {
  return run('bash', ['-c', `set -o pipefail\n${script}`], {
    env: {
      KAFKA_BROKERS: brokers,
      TOPIC_COMMANDS: cluster.topics.commands,
      TOPIC_EVENTS: cluster.topics.events,
      ...env,
    },
  });
}

const line = (command: Record<string, unknown>): string =>
  `${String(command['order_id'])}|${JSON.stringify(command)}`;

/** Commands sent by kcat -P with librdkafka's default partitioner, as a trading service on librdkafka would. */
function viaKcat(...commands: Record<string, unknown>[]): Promise<Ran> {
  return run('kcat', ['-P', '-b', brokers, '-t', cluster.topics.commands, '-K|'], {
    input: commands.map(line).join('\n') + '\n',
  });
}

/** Commands sent by the Java client's default producer; resolves to the partition each went to. */
async function viaJava(...commands: Record<string, unknown>[]): Promise<number[]> {
  const { stdout } = await run(
    'java',
    ['-cp', classpath, javaClient, 'produce', brokers, cluster.topics.commands],
    { input: commands.map(line).join('\n') + '\n' },
  );
  return stdout
    .trim()
    .split('\n')
    .map((row) => Number(row.split('\t')[0]));
}

interface ForeignRecord {
  key: string | null;
  headers: Record<string, string>;
  value: Record<string, unknown>;
}

/** A consumer of the events topic that keeps running (kcat -C, or the Java consumer), and what it has read. */
function foreignConsumer(kind: 'kcat' | 'java'): {
  records: ForeignRecord[];
  ready: Promise<void>;
  stop: () => void;
} {
  const records: ForeignRecord[] = [];
  const child: ChildProcess =
    kind === 'kcat'
      ? spawn('kcat', [
          '-C',
          '-b',
          brokers,
          '-t',
          cluster.topics.events,
          '-o',
          'beginning',
          '-u',
          '-q',
          '-X',
          'isolation.level=read_committed',
          '-f',
          '%k\t%h\t%s\n',
        ])
      : spawn('java', ['-cp', classpath, javaClient, 'consume', brokers, cluster.topics.events]);
  let markReady = (): void => {};
  const ready = new Promise<void>((resolveReady) => (markReady = resolveReady));
  if (kind === 'kcat') markReady();
  createInterface({ input: child.stdout! }).on('line', (text) => {
    if (kind === 'kcat') {
      const [key, headers, ...value] = text.split('\t');
      records.push({
        key: key ?? null,
        // kcat prints headers as name=value,name=value (none of ours holds a comma).
        headers: Object.fromEntries(
          (headers ?? '')
            .split(',')
            .filter(Boolean)
            .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
        ),
        value: JSON.parse(value.join('\t')) as Record<string, unknown>,
      });
      return;
    }
    const parsed = JSON.parse(text) as {
      ready?: boolean;
      key: string;
      headers: Record<string, string>;
      value: string;
    };
    if (parsed.ready) return markReady();
    records.push({
      key: parsed.key,
      headers: parsed.headers,
      value: JSON.parse(parsed.value) as Record<string, unknown>,
    });
  });
  return { records, ready, stop: () => void child.kill('SIGTERM') };
}

/** An order id that librdkafka's consistent_random (CRC32) puts on another partition than murmur2 does. */
function elsewhereForLibrdkafka(prefix: string): string {
  for (;;) {
    const id = uniqueName(prefix);
    if (crc32(Buffer.from(id)) % partitions !== defaultPartitionOf(id, partitions)) return id;
  }
}

/** The runbook's sh blocks that send or read with kcat or curl, each to be run here as printed. */
const runbook = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
const runbookBlocks = [...runbook.matchAll(/```sh\n([\s\S]*?)```/g)]
  .map((match) => match[1]!)
  .filter((block) => /\b(kcat|curl)\b/.test(block));
const ranBlocks = new Set<string>();
function runbookBlock(marker: string): string {
  const found = runbookBlocks.filter((block) => block.includes(marker));
  expect(found, `one runbook block with ${marker}`).toHaveLength(1);
  ranBlocks.add(found[0]!);
  return found[0]!;
}

const events = (orderId: string): PublishedEvent[] => cluster.collector.of(orderId);
const typesOf = (orderId: string): string[] => events(orderId).map((e) => e.type);

function exchangeOrdersWith(amount: string): number {
  return cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === Number(amount))
    .length;
}

const defi = modeSpecs[0];

describe('kcat and the Java client as trading services', () => {
  const kcatConsumer = { current: undefined as ReturnType<typeof foreignConsumer> | undefined };
  const javaConsumer = { current: undefined as ReturnType<typeof foreignConsumer> | undefined };
  const parkedA = elsewhereForLibrdkafka('parked-a');
  const parkedB = uniqueName('parked-b');
  let referenceA = '';
  const amounts = { parkedA: (defi.base * 1.411).toFixed(6), parkedB: (defi.base * 1.412).toFixed(6) };
  const traceId = '5bf92f3577b34da6a3ce929d0e0e4736';

  it('starts a kcat and a Java consumer of the events topic', async () => {
    kcatConsumer.current = foreignConsumer('kcat');
    javaConsumer.current = foreignConsumer('java');
    await Promise.all([kcatConsumer.current.ready, javaConsumer.current.ready]);
  });

  it("settles a parked order with the runbook's own kcat line, run as printed", async () => {
    // Parked: the answer to its POST /orders/ is lost, and the repeat with the same rate_id is refused.
    cluster.sandbox.clearFaults();
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 1,
    });
    cluster.sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'expired_on_repeat' });
    await cluster.send(orderCreateCommand('defi', amounts.parkedA, parkedA), {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    await cluster.collector.waitForOrderEvent(parkedA, 'order.parked', 90_000);
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 1,
    });
    await cluster.send(orderCreateCommand('defi', amounts.parkedB, parkedB));
    await cluster.collector.waitForOrderEvent(parkedB, 'order.parked', 90_000);
    cluster.sandbox.clearFaults();

    const [onExchange] = cluster.sandbox.orders
      .list()
      .filter((o) => Number(o.order['deposit_amount']) === Number(amounts.parkedA));
    referenceA = String(onExchange?.order['unique_reference']);
    // kcat's partitioner puts this order's commands elsewhere: the settle is forwarded to the order's partition.
    await shell(runbookBlock('"resolution\\":\\"adopt\\"'), { ORDER_ID: parkedA, REF: referenceA });
    const adopted = await cluster.collector.waitForOrderEvent(parkedA, 'order.created', 60_000);
    expect(adopted).toMatchObject({ unique_reference: referenceA, command_id: `settle-${parkedA}-adopt` });

    // The runbook's abandon line reaches the order too: it is no longer parked, so it is refused in its history.
    await shell(runbookBlock('"resolution\\":\\"abandon\\"'), { ORDER_ID: parkedA });
    const refused = await cluster.collector.waitForOrderEvent(parkedA, 'command.rejected', 60_000);
    expect(refused).toMatchObject({ reason: 'not_allowed', command_id: `settle-${parkedA}-abandon` });
    expect(refused.seq).toBeGreaterThan(0);
    expect(exchangeOrdersWith(amounts.parkedA)).toBe(1);
  });

  it("settles another with the inspector's printed lines, run as printed", async () => {
    const inspected = await run(process.execPath, [join(root, 'src', 'inspect', 'main.ts'), parkedB], {
      env: cluster.env,
    });
    const lines = inspected.stdout.split('\n').filter((text) => text.includes('kcat -P'));
    expect(lines).toHaveLength(2);
    // The adopt line names another order's exchange order: refused, the order stays parked...
    await shell(lines[0]!.trim(), { REF: referenceA });
    const refusal = await cluster.collector.waitForOrderEvent(parkedB, 'order.settle_refused', 60_000);
    expect(String(refusal['command_id'])).toMatch(/-adopt$/);
    // ...and the abandon line (its own command_id: not a duplicate_conflict of the refused adopt) ends it.
    await shell(lines[1]!.trim());
    const failed = await cluster.collector.waitForOrderEvent(parkedB, 'order.failed', 60_000);
    expect(failed).toMatchObject({ reason: 'abandoned_by_operator' });
    expect(String(failed['command_id'])).toMatch(/-abandon$/);
    expect(typesOf(parkedB)).not.toContain('command.rejected');
  });

  const cefi = modeSpecs[1];
  const viaKcatId = elsewhereForLibrdkafka('by-kcat');
  const viaJavaId = elsewhereForLibrdkafka('by-java');
  const twiceId = elsewhereForLibrdkafka('twice');
  const amount = (i: number): string => (cefi.base * (1.42 + i / 1000)).toFixed(6);
  let referenceOfKcatOrder = '';

  it('drives orders created, paid, completed and canceled by kcat, Java and kafkajs together', async () => {
    const createByKcat = orderCreateCommand('cefi', amount(1), viaKcatId);
    // A DeFi order whose quote takes a while: it is still quoting (and so may be canceled) when kcat's cancel comes.
    const createByJava = orderCreateCommand('defi', (defi.base * 1.413).toFixed(6), viaJavaId);
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /rate/',
      kind: 'latency',
      latencyMs: 10_000,
      times: 1,
    });
    const createTwice = orderCreateCommand('cefi', amount(3), twiceId);
    // One order created by three partitioners at once: kcat's (another partition), Java's and kafkajs's (its home).
    const [, javaPartitions] = await Promise.all([
      viaKcat(createByKcat, createTwice),
      viaJava(createByJava, createTwice),
      cluster.send(createTwice),
    ]);
    // The Java client's partitioner is the worker's canonical one.
    expect(javaPartitions).toEqual([viaJavaId, twiceId].map((id) => defaultPartitionOf(id, partitions)));
    // The Java order canceled by kcat (forwarded to its partition) while its quote is on its way.
    const quoting = Date.now() + 30_000;
    while (!cluster.sandbox.listFaults().some((f) => f.spec.kind === 'latency' && f.fired === 1)) {
      if (Date.now() > quoting) throw new Error('the DeFi order never asked for its quote');
      await new Promise((r) => setTimeout(r, 100));
    }
    await viaKcat({ type: 'order.cancel', command_id: `${viaJavaId}-cancel`, order_id: viaJavaId });
    const canceled = await cluster.collector.waitForOrderEvent(viaJavaId, 'order.canceled');
    expect(canceled).toMatchObject({ reason: 'command', command_id: `${viaJavaId}-cancel` });
    for (const id of [viaKcatId, twiceId]) await cluster.collector.waitForOrderEvent(id, 'order.created');

    const created = cluster.collector.waitForOrderEvent.bind(cluster.collector);
    referenceOfKcatOrder = String((await created(viaKcatId, 'order.created'))['unique_reference']);
    // The deposit of the kcat order from Java, and the same deposit again from kcat: one deposit, no refusal.
    const deposit = {
      type: 'order.submit_deposit',
      command_id: `${viaKcatId}-deposit`,
      order_id: viaKcatId,
      tx_hash: '0x9b2f6c2d1e0a4b3c5d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c',
    };
    await viaJava(deposit);
    await cluster.collector.waitForOrderEvent(viaKcatId, 'order.deposit_submitted');
    await viaKcat(deposit);
    cluster.sandbox.advanceOrder(referenceOfKcatOrder, 'completed');
    await cluster.collector.waitForOrderEvent(viaKcatId, 'order.completed');
    await cluster.collector.waitForOrderEvent(twiceId, 'order.created');

    expect(typesOf(viaKcatId)).toEqual(
      expect.arrayContaining(['order.created', 'order.deposit_submitted', 'order.completed']),
    );
    expect(events(viaKcatId).find((e) => e.type === 'order.created')?.['command_id']).toBe(`${viaKcatId}-c`);
    expect(events(viaKcatId).filter((e) => e.type === 'order.deposit_submitted')).toMatchObject([
      { command_id: `${viaKcatId}-deposit` },
    ]);
    // Three creates of one order from three partitioners: one order, one exchange order, nothing refused.
    expect(typesOf(twiceId).filter((type) => type === 'order.created')).toHaveLength(1);
    expect(typesOf(twiceId)).not.toContain('command.rejected');
    for (const [id, exchangeOrders] of [
      [viaKcatId, exchangeOrdersWith(amount(1))],
      [twiceId, exchangeOrdersWith(amount(3))],
      // Canceled while quoting: no exchange order was ever created.
      [viaJavaId, exchangeOrdersWith((defi.base * 1.413).toFixed(6))],
    ] as const) {
      expect(exchangeOrders, id).toBe(id === viaJavaId ? 0 : 1);
      expect(typesOf(id)).not.toContain('command.rejected');
      expect(seqProblems(events(id))).toEqual([]);
    }
  });

  it("runs the runbook's reading lines as printed: an order's record, its events and commands, a rejection's source", async () => {
    const record = await shell(runbookBlock('latest state record'), { ORDER: viaKcatId });
    const state = JSON.parse(record.stdout) as {
      partition: number;
      terminal: boolean;
      unique_reference: string;
    };
    expect(state).toMatchObject({
      partition: defaultPartitionOf(viaKcatId, partitions),
      terminal: true,
      unique_reference: referenceOfKcatOrder,
    });

    const history = await shell(runbookBlock('Its events, then the commands'), {
      ORDER: viaKcatId,
      P: String(state.partition),
    });
    const [eventLines, commandLines] = [
      history.stdout.split('\n').filter((text) => text.startsWith('{')),
      history.stdout.split('\n').filter((text) => /^\d+\t/.test(text)),
    ];
    expect(eventLines.map((text) => (JSON.parse(text) as { type: string }).type)).toEqual(typesOf(viaKcatId));
    // kcat's create and deposit arrived elsewhere and were forwarded here; Java's deposit came straight here.
    expect(commandLines.filter((text) => text.includes('forwarded-from='))).toHaveLength(2);
    expect(
      commandLines.some(
        (text) => text.includes('"type":"order.submit_deposit"') && !text.includes('forwarded-from'),
      ),
    ).toBe(true);

    const withHeaders = await shell(runbookBlock('with their headers'), { ORDER: viaKcatId });
    const rows = withHeaders.stdout.trim().split('\n');
    expect(rows.map((row) => /^event-type=([^,\t]+)/.exec(row)?.[1])).toEqual(typesOf(viaKcatId));

    // A command refused (an unknown field), read back at its source and hashed as the runbook says.
    const badId = uniqueName('bad');
    await viaKcat({ type: 'order.cancel', command_id: `${badId}-c`, order_id: badId, please: 'now' });
    const rejection = await cluster.collector.waitForOrderEvent(badId, 'command.rejected');
    expect(rejection['reason']).toBe('malformed');
    const source = rejection['source'] as { partition: number; offset: string };
    const hashed = await shell(runbookBlock('sha256sum'), {
      PARTITION: String(source.partition),
      OFFSET: source.offset,
    });
    expect(hashed.stdout.split(/\s/)[0]).toBe(rejection['command_sha256']);
  });

  it("sends the runbook's signed test webhook as printed", async () => {
    const answer = await shell(runbookBlock('X-Webhook-Signature'), {
      REF: referenceOfKcatOrder,
      WEBHOOK_SECRET: webhookSecret,
      HTTP_PORT: String(cluster.webhookPort),
      EXCHANGE_API_URL: cluster.sandbox.url,
      EXCHANGE_API_KEY_CEFI: demoKeys.cefi,
    });
    expect(JSON.parse(answer.stdout)).toMatchObject({ accepted: true });
  });

  it('ran every kcat and curl block of the runbook', () => {
    expect(runbookBlocks.filter((block) => !ranBlocks.has(block))).toEqual([]);
  });

  it('has every event, with its headers, read by the kcat and the Java consumers alike', async () => {
    const ours = [parkedA, parkedB, viaKcatId, viaJavaId, twiceId];
    const expected = cluster.collector.events
      .filter((e) => ours.includes(String(e.order_id)))
      .map((e) => e.event_id)
      .sort();
    for (const consumer of [kcatConsumer.current!, javaConsumer.current!]) {
      const deadline = Date.now() + 30_000;
      const seen = (): string[] =>
        consumer.records
          .filter((r) => ours.includes(String(r.value['order_id'])))
          .map((r) => String(r.value['event_id']))
          .sort();
      while (seen().length < expected.length && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
      expect(seen()).toEqual(expected);
      for (const record of consumer.records.filter((r) => ours.includes(String(r.value['order_id'])))) {
        expect(record.key).toBe(record.value['order_id']);
        expect(record.headers['event-type']).toBe(record.value['type']);
      }
      // The trace of the kafkajs create that carried one goes on in its events' headers.
      const createdA = consumer.records.find((r) => r.value['event_id'] === `${parkedA}:1`);
      expect(createdA?.headers['traceparent']).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      consumer.stop();
    }
  });
});
