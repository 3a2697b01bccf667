// The operator console in a real browser (Debian's headless Chromium, driven by playwright-core) against a real
// worker, Kafka, Redis and the sandbox: it signs in, finds a parked order in the queue, opens its timeline, adopts
// the exchange order the console picked (after a confirmation page), and sees order.created follow. Screenshots go
// to .services/console-screenshots/ (UPDATE_DOCS_SCREENSHOTS=1: docs/console/, as checked in).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../dev/services/index.ts';
import { testOperator } from '../support/operator-key.ts';
import { modeSpecs } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

const root = resolve(import.meta.dirname, '..', '..');
const chromiumPath = '/usr/bin/chromium';
const token = 'console-token-93b1f0d2';
const shots =
  process.env['UPDATE_DOCS_SCREENSHOTS'] === '1'
    ? join(root, 'docs', 'console')
    : join(root, '.services', 'console-screenshots');

let cluster: Cluster;
let consoleProcess: ChildProcess | undefined;
let browser: BrowserContext | undefined;
let profile: string;
let base: string;

async function startConsole(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'src', 'console', 'main.ts')], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '', ...env, CONSOLE_PORT: String(port) },
  });
  consoleProcess = child;
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const deadline = Date.now() + 60_000;
  while (!out.includes('console: http')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`console did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return `http://127.0.0.1:${port}`;
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  if (!existsSync(chromiumPath))
    throw new Error(`${chromiumPath} is missing: apt-get install -y chromium (.ci/run installs it)`);
  mkdirSync(shots, { recursive: true });
  cluster = await startCluster({ workers: 1, partitions: 2, env: { PARKED_RECHECK_MS: '3600000' } });
  const dir = mkdtempSync(join(tmpdir(), 'console-'));
  const keyFile = join(dir, 'operator.pem');
  writeFileSync(keyFile, testOperator.privateKeyPem, { mode: 0o600 });
  base = await startConsole({
    ...cluster.env,
    OPS_API_TOKEN: token,
    OPERATOR_KEY_FILE: keyFile,
    OPERATOR_KEY_ID: testOperator.keyId,
    TRACE_UI_URL: 'http://localhost:16686/trace/{trace_id}',
  });
  profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  consoleProcess?.kill('SIGTERM');
  await cluster?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('the operator console in Chromium', () => {
  it('finds a parked order, opens its timeline, settles it with a confirmation and sees order.created follow', async () => {
    const { base: amountBase, ...fields } = modeSpecs.find((s) => s.mode === 'cefi')!;
    const orderId = uniqueName('console');
    const amount = (amountBase * 1.911).toFixed(6);
    cluster.sandbox.clearFaults();
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'lost_response',
      times: 1,
    });
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/',
      kind: 'http_error',
      status: 403,
    });
    await cluster.send({
      type: 'order.create',
      command_id: `${orderId}-c`,
      order_id: orderId,
      ...fields,
      deposit_amount: amount,
    });
    await cluster.collector.waitForOrderEvent(orderId, 'order.parked', 90_000);
    cluster.sandbox.clearFaults();
    const reference = String(
      cluster.sandbox.orders.list().find((o) => Number(o.order['deposit_amount']) === Number(amount))?.order[
        'unique_reference'
      ],
    );

    const page = await browser!.newPage();
    await page.goto(`${base}/`);
    expect(page.url()).toBe(`${base}/login`);
    await page.fill('input[name=token]', token);
    await page.click('form[action="/login"] button');
    // The console's view follows the state topic: the parked order shows up in the queue.
    const deadline = Date.now() + 30_000;
    while (!(await page.content()).includes(orderId)) {
      if (Date.now() > deadline)
        throw new Error(`${orderId} not in the parked queue:\n${await page.content()}`);
      await page.reload();
    }
    expect(await page.textContent('h1')).toMatch(/Parked orders/);
    await shot(page, 'parked-queue');

    await page.click(`a[href="/orders/${orderId}"]`);
    await page.waitForSelector('#timeline');
    expect(await page.textContent('#timeline')).toContain('order.parked');
    expect(await page.content()).toContain(`★ ${reference}`);
    await shot(page, 'order-timeline');

    await page.click(`button:has-text("Adopt ${reference}")`);
    expect(await page.textContent('h1')).toMatch(/Confirm: settle/);
    expect(await page.content()).toContain(reference);
    await shot(page, 'settle-confirmation');
    await page.click('#confirm');
    expect(await page.textContent('.box.ok')).toMatch(/Sent settle-/);

    const settled = Date.now() + 60_000;
    while (!((await page.textContent('#timeline')) ?? '').includes('order.created')) {
      if (Date.now() > settled) throw new Error(`no order.created in the timeline:\n${await page.content()}`);
      await new Promise((r) => setTimeout(r, 500));
      await page.reload();
    }
    expect(await page.textContent('#timeline')).toContain('order.operator_command');
    await shot(page, 'order-settled');
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 10_000);
    expect(created['unique_reference']).toBe(reference);
    expect(cluster.collector.of(orderId).find((e) => e.type === 'order.operator_command')).toMatchObject({
      operator: { key_id: testOperator.keyId },
    });
  });
});
