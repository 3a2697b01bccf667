// Trading services that are not kafkajs: kcat (librdkafka, its default consistent_random partitioner, which puts
// most keys on another partition than murmur2) and the Apache Kafka Java client (a ten-line producer, its default
// partitioner), mixed with kafkajs for the same orders, against two real workers. Every order ends as expected with
// one exchange order; commands that arrived on another partition than their order's are forwarded there; two
// partitioners creating one order make one order; consumers of the events topic in both clients read every event
// with its headers. Parked orders are settled with the runbook's lines and the inspector's, each run as printed and
// signed with the test operator's key (OPERATOR_KEY_FILE): the runbook's hand-signed kcat recipe lands on another
// partition, is forwarded with its operator headers and accepted, while kcat's unsigned settle is refused
// `unauthorized` after its forward. Every kcat or curl block and every settle or find-exchange-order line of
// docs/operations.md is run here as printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKafkaJars } from '../../dev/services/kafka-local.ts';
import { demoKeys } from '../../sandbox/index.ts';
import { defaultPartitionOf } from '../../src/kafka/partitioning.ts';
import { seqProblems, type PublishedEvent } from '../support/kafka-helpers.ts';
import { testOperator } from '../support/operator-key.ts';
import { modeSpecs, orderCreateCommand } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';

const root = resolve(import.meta.dirname, '..', '..');
const javaClient = join(root, 'test', 'support', 'foreign', 'ForeignKafkaClient.java');
const partitions = 4;

let cluster: Cluster;
let classpath: string;
let brokers: string;
/** The operator's key for the tools and the hand-signed recipe, as docs/operations.md names them. */
let operatorEnv: Record<string, string>;
let scratch: string;

beforeAll(async () => {
  // No test is skipped for a missing tool: kcat (Debian package) and a JDK must be there.
  await run('kcat', ['-V']);
  classpath = await ensureKafkaJars();
  brokers = services().kafkaBrokers.join(',');
  // No re-check while the test runs: a parked order stays parked until it is settled.
  cluster = await startCluster({ workers: 2, partitions, env: { PARKED_RECHECK_MS: '3600000' } });
  scratch = mkdtempSync(join(tmpdir(), 'foreign-clients-'));
  const keyFile = join(scratch, 'operator.pem');
  writeFileSync(keyFile, testOperator.privateKeyPem, { mode: 0o600 });
  operatorEnv = { OPERATOR_KEY_FILE: keyFile, OPERATOR_KEY_ID: testOperator.keyId };
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

interface Ran {
  stdout: string;
  stderr: string;
  code: number | null;
}

/** Runs a program to its end (stdin given, or closed); rejects on a non-zero exit (unless `exitCode` is it). */
function run(
  command: string,
  args: string[],
  opts: { input?: string; env?: Record<string, string>; exitCode?: number } = {},
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
      code === (opts.exitCode ?? 0)
        ? resolveRun({ stdout, stderr, code })
        : reject(
            new Error(`${command} ${args.join(' ')} exited ${code}:\n${stdout}\n${stderr}`.slice(0, 4000)),
          ),
    );
    child.stdin.end(opts.input ?? '');
  });
}

/** A shell script as an operator pastes it, in bash, with the worker's variables and the script's own. */
function shell(script: string, env: Record<string, string> = {}, exitCode = 0): Promise<Ran> {
  return run('bash', ['-c', `set -o pipefail\n${script}`], {
    env: {
      KAFKA_BROKERS: brokers,
      TOPIC_COMMANDS: cluster.topics.commands,
      TOPIC_EVENTS: cluster.topics.events,
      ...env,
    },
    exitCode,
  });
}

/** An operator's line for the tools (npm run inspect), with the worker's configuration and the operator's key. */
function toolShell(script: string, env: Record<string, string> = {}, exitCode = 0): Promise<Ran> {
  return shell(script, { ...cluster.env, ...operatorEnv, ...env }, exitCode);
}

/** What `npm run inspect -- <order_id>` prints, and its settle lines (each to be run as printed). */
async function inspectorSettleLines(orderId: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, [join(root, 'src', 'inspect', 'main.ts'), orderId], {
    env: cluster.env,
  });
  return settleLinesOf(stdout);
}

const settleLinesOf = (text: string): string[] =>
  text
    .split('\n')
    .map((row) => row.trim())
    .filter((row) => row.startsWith('npm run -s inspect -- settle'));

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
  .filter((block) =>
    block.split('\n').some((row) => !row.trimStart().startsWith('#') && /\b(kcat|curl)\b/.test(row)),
  );
const ranBlocks = new Set<string>();
function runbookBlock(marker: string): string {
  const found = runbookBlocks.filter((block) => block.includes(marker));
  expect(found, `one runbook block with ${marker}`).toHaveLength(1);
  ranBlocks.add(found[0]!);
  return found[0]!;
}

/** The runbook's lines for the operator tools that settle or look up a parked order, each run here as printed. */
const runbookToolLines = [...runbook.matchAll(/```sh\n([\s\S]*?)```/g)]
  .flatMap((match) => match[1]!.split('\n'))
  .filter((row) => /^npm run -s inspect -- (settle|find-exchange-order)\b/.test(row));
const ranLines = new Set<string>();
function runbookLine(what: string, matches: (row: string) => boolean): string {
  const found = runbookToolLines.filter(matches);
  expect(found, `one runbook line: ${what}`).toHaveLength(1);
  ranLines.add(found[0]!);
  return found[0]!;
}
const byRunbook = {
  find: () => runbookLine('find-exchange-order', (row) => row.includes('find-exchange-order')),
  adopt: () => runbookLine('adopt', (row) => row.includes(' adopt ') && !row.includes('--dry-run')),
  abandon: () => runbookLine('abandon', (row) => row.includes(' abandon ')),
  dryRun: () => runbookLine('--dry-run', (row) => row.includes('--dry-run')),
  file: () => runbookLine('--file', (row) => row.includes('--file')),
};

const events = (orderId: string): PublishedEvent[] => cluster.collector.of(orderId);
const typesOf = (orderId: string): string[] => events(orderId).map((e) => e.type);

function exchangeOrdersWith(amount: string): number {
  return cluster.sandbox.orders.list().filter((o) => Number(o.order['deposit_amount']) === Number(amount))
    .length;
}

function referenceOf(amount: string): string {
  const [exchangeOrder] = cluster.sandbox.orders
    .list()
    .filter((o) => Number(o.order['deposit_amount']) === Number(amount));
  return String(exchangeOrder?.order['unique_reference']);
}

/** The order's seq as the tools list it: its last event's. */
const seqOf = (orderId: string): string => String(Math.max(...events(orderId).map((e) => e.seq)));

/** Waits for the order's `count`-th event of this type. */
async function nthEvent(orderId: string, type: string, count: number): Promise<PublishedEvent> {
  await cluster.collector.waitFor(
    () => events(orderId).filter((e) => e.type === type).length >= count,
    `${type} #${count} of ${orderId}`,
    60_000,
  );
  return events(orderId).filter((e) => e.type === type)[count - 1]!;
}

const defi = modeSpecs[0];
const cefi = modeSpecs[1];

describe('kcat and the Java client as trading services', () => {
  const kcatConsumer = { current: undefined as ReturnType<typeof foreignConsumer> | undefined };
  const javaConsumer = { current: undefined as ReturnType<typeof foreignConsumer> | undefined };
  // Parked orders, each settled another way: A by hand-signed kcat (kcat's partitioner puts its commands
  // elsewhere), B from find-exchange-order (CeFi), C from the inspector's report, D and E with the runbook's lines.
  const parked = {
    a: { id: elsewhereForLibrdkafka('parked-a'), mode: 'defi', amount: (defi.base * 1.411).toFixed(6) },
    b: { id: uniqueName('parked-b'), mode: 'cefi', amount: (cefi.base * 1.412).toFixed(6) },
    c: { id: uniqueName('parked-c'), mode: 'defi', amount: (defi.base * 1.415).toFixed(6) },
    d: { id: uniqueName('parked-d'), mode: 'defi', amount: (defi.base * 1.416).toFixed(6) },
    e: { id: uniqueName('parked-e'), mode: 'defi', amount: (defi.base * 1.417).toFixed(6) },
  } as const;
  const parkedIds = Object.values(parked).map((order) => order.id);
  let referenceA = '';
  const traceId = '5bf92f3577b34da6a3ce929d0e0e4736';

  it('starts a kcat and a Java consumer of the events topic', async () => {
    kcatConsumer.current = foreignConsumer('kcat');
    javaConsumer.current = foreignConsumer('java');
    await Promise.all([kcatConsumer.current.ready, javaConsumer.current.ready]);
  });

  it('parks five orders whose create outcome is unknown', async () => {
    // The answer to each POST /orders/ is lost; DeFi repeats with the same rate_id are refused, CeFi lookups too.
    cluster.sandbox.clearFaults();
    for (const order of Object.values(parked))
      cluster.sandbox.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'lost_response',
        times: 1,
        whenBody: { deposit_amount: order.amount },
      });
    cluster.sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'expired_on_repeat' });
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/',
      kind: 'http_error',
      status: 403,
    });
    await Promise.all(
      Object.values(parked).map((order) =>
        cluster.send(
          orderCreateCommand(order.mode, order.amount, order.id),
          order === parked.a ? { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } } : {},
        ),
      ),
    );
    for (const id of parkedIds) await cluster.collector.waitForOrderEvent(id, 'order.parked', 90_000);
    cluster.sandbox.clearFaults();
    for (const order of Object.values(parked)) expect(exchangeOrdersWith(order.amount), order.id).toBe(1);
    referenceA = referenceOf(parked.a.amount);
  });

  it("refuses kcat's unsigned settle after its forward, and accepts the runbook's hand-signed one, forwarded with its headers", async () => {
    const { id } = parked.a;
    const home = defaultPartitionOf(id, partitions);
    const arrival = crc32(Buffer.from(id)) % partitions;
    // A trading service's settle (no operator key), through kcat's partitioner: forwarded, then refused where the
    // order lives, in its history.
    await viaKcat({
      type: 'order.settle',
      command_id: `${id}-unsigned`,
      order_id: id,
      resolution: 'adopt',
      unique_reference: referenceA,
    });
    const refused = await cluster.collector.waitForOrderEvent(id, 'command.rejected', 60_000);
    expect(refused).toMatchObject({
      reason: 'unauthorized',
      command_id: `${id}-unsigned`,
      source: { partition: home },
      forwarded_from: { partition: arrival },
    });
    expect(refused.seq).toBeGreaterThan(0);

    // The runbook's recipe, as printed: signed by hand with openssl, sent with kcat's default partitioner.
    await shell(runbookBlock('operator-signature=$SIG'), { ORDER_ID: id, REF: referenceA, ...operatorEnv });
    const adopted = await cluster.collector.waitForOrderEvent(id, 'order.created', 60_000);
    expect(adopted).toMatchObject({ unique_reference: referenceA, command_id: `settle-${id}-adopt` });
    const accepted = events(id).find((e) => e.type === 'order.operator_command');
    expect(accepted).toMatchObject({
      command_id: `settle-${id}-adopt`,
      resolution: 'adopt',
      operator: { key_id: testOperator.keyId },
    });
    expect(accepted!.seq).toBe(adopted.seq - 1);
    // It arrived elsewhere: its copy on the order's partition carries the operator headers and where it arrived.
    const copies = await run('kcat', [
      '-C',
      '-b',
      brokers,
      '-t',
      cluster.topics.commands,
      '-p',
      String(home),
      '-e',
      '-q',
      '-X',
      'isolation.level=read_committed',
      '-f',
      '%k\t%h\t%s\n',
    ]);
    const copy = copies.stdout.split('\n').find((row) => row.includes(`"settle-${id}-adopt"`));
    expect(copy).toMatch(
      new RegExp(`forwarded-from=${cluster.topics.commands.replace(/\./g, '\\.')}:${arrival}:\\d+`),
    );
    expect(copy).toMatch(
      /operator-key-id=[^,]+,operator-signed-at=[^,]+,operator-signature=[A-Za-z0-9+/]+=*/,
    );
    expect(exchangeOrdersWith(parked.a.amount)).toBe(1);
  });

  it("adopts a CeFi order with the line find-exchange-order prints for the runbook's lookup", async () => {
    const { id, amount } = parked.b;
    const found = await toolShell(byRunbook.find(), { ORDER_ID: id });
    const reference = referenceOf(amount);
    expect(found.stdout).toMatch(new RegExp(`^pick {7}${reference}:`, 'm'));
    const lines = settleLinesOf(found.stdout);
    expect(lines).toEqual([`npm run -s inspect -- settle ${id} adopt ${reference} --seq ${seqOf(id)}`]);
    await toolShell(lines[0]!);
    const adopted = await cluster.collector.waitForOrderEvent(id, 'order.created', 60_000);
    expect(adopted).toMatchObject({ unique_reference: reference });
    expect(String(adopted['command_id'])).toMatch(/^settle-s\d+-adopt-/);
    expect(typesOf(id).slice(-2)).toEqual(['order.operator_command', 'order.created']);
  });

  it('settles a DeFi order with the lines the inspector prints, run as printed', async () => {
    const { id } = parked.c;
    // find-exchange-order cannot list a DeFi order: it says so, with the settle line to run once REF is known.
    const defiLookup = await toolShell(byRunbook.find(), { ORDER_ID: id }, 1);
    const [fromLookup] = settleLinesOf(defiLookup.stderr.replace(/^.*then: /s, ''));
    expect(fromLookup).toBe(
      `npm run -s inspect -- settle ${id} adopt "\${REF:?set REF to the unique_reference}" --seq ${seqOf(id)}`,
    );
    // Another order's exchange order: the worker refuses it (order.settle_refused), the order stays parked.
    await toolShell(fromLookup!, { REF: referenceA });
    await nthEvent(id, 'order.settle_refused', 1);
    // The report's two lines: its adopt (refused again, for the same reason), then its abandon.
    const [adopt, abandon] = await inspectorSettleLines(id);
    expect([adopt, abandon]).toEqual([
      `npm run -s inspect -- settle ${id} adopt "\${REF:?set REF to the unique_reference}" --seq ${seqOf(id)}`,
      `npm run -s inspect -- settle ${id} abandon --seq ${seqOf(id)}`,
    ]);
    await toolShell(adopt!, { REF: referenceA });
    await nthEvent(id, 'order.settle_refused', 2);
    const [, abandonNow] = await inspectorSettleLines(id);
    await toolShell(abandonNow!);
    const failed = await cluster.collector.waitForOrderEvent(id, 'order.failed', 60_000);
    expect(failed).toMatchObject({ reason: 'abandoned_by_operator' });
    expect(String(failed['command_id'])).toMatch(/^settle-s\d+-abandon$/);
    expect(typesOf(id)).not.toContain('command.rejected');
  });

  it("settles orders with the runbook's adopt, abandon, bulk and --dry-run lines, run as printed", async () => {
    const [d, e] = [parked.d.id, parked.e.id];
    // D: an adopt of another order's exchange order (refused by the worker), then the abandon.
    await toolShell(byRunbook.adopt(), { ORDER_ID: d, REF: referenceA, SEQ: seqOf(d) });
    expect(await nthEvent(d, 'order.settle_refused', 1)).toMatchObject({ code: 'reference_owned' });
    await toolShell(byRunbook.abandon(), { ORDER_ID: d, SEQ: seqOf(d) });
    const failed = await cluster.collector.waitForOrderEvent(d, 'order.failed', 60_000);
    expect(failed).toMatchObject({ reason: 'abandoned_by_operator' });
    // Each accepted settle is recorded with its operator: the refused adopt, then the abandon with its note.
    expect(events(d).filter((event) => event.type === 'order.operator_command')).toMatchObject([
      { resolution: 'adopt', unique_reference: referenceA, note: null },
      {
        resolution: 'abandon',
        note: 'no exchange order in the window',
        operator: { key_id: testOperator.keyId },
      },
    ]);

    // E: a bulk plan with another order's exchange order (refused by the worker), then --dry-run's signed kcat line.
    const plan = join(scratch, 'plan.txt');
    writeFileSync(plan, `${e} ${seqOf(e)} adopt ${referenceA}\n`);
    const bulk = await toolShell(byRunbook.file(), { PLAN: plan });
    expect(bulk.stdout).toMatch(new RegExp(`^sent {2}${e} {2}adopt ${referenceA}`, 'm'));
    await nthEvent(e, 'order.settle_refused', 1);
    const reference = referenceOf(parked.e.amount);
    const dry = await toolShell(byRunbook.dryRun(), { ORDER_ID: e, REF: reference, SEQ: seqOf(e) });
    const kcatLines = dry.stdout
      .split('\n')
      .map((row) => row.trim())
      .filter((row) => row.includes('| kcat -P'));
    expect(kcatLines).toHaveLength(1);
    expect(kcatLines[0]).toContain(
      `-p ${defaultPartitionOf(e, partitions)} -H 'operator-key-id=${testOperator.keyId}'`,
    );
    await shell(kcatLines[0]!);
    const adopted = await cluster.collector.waitForOrderEvent(e, 'order.created', 60_000);
    expect(adopted).toMatchObject({ unique_reference: reference });
    for (const id of parkedIds) expect(seqProblems(events(id)), id).toEqual([]);
  });

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

  it('ran every kcat and curl block of the runbook, and every settle and find-exchange-order line', () => {
    expect(runbookBlocks.filter((block) => !ranBlocks.has(block))).toEqual([]);
    expect(runbookToolLines.filter((row) => !ranLines.has(row))).toEqual([]);
  });

  it('has every event, with its headers, read by the kcat and the Java consumers alike', async () => {
    const ours = [...parkedIds, viaKcatId, viaJavaId, twiceId];
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
      const createdA = consumer.records.find((r) => r.value['event_id'] === `${parked.a.id}:1`);
      expect(createdA?.headers['traceparent']).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      consumer.stop();
    }
  });
});
