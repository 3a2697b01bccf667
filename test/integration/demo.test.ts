// `npm run demo` as a newcomer runs it, twice: piped (as CI sees it: plain lines, then the summary) and in a
// terminal (a pty through util-linux `script`: the live table redraws in place). Each run starts its own sandbox
// and two workers on the services the global setup provisioned, and must end with exit status 0.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scenarios } from '../../scripts/demo/scenarios.ts';
import { services } from '../support/services.ts';

const root = resolve(import.meta.dirname, '..', '..');

function run(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(command, args, { cwd: root, env: { PATH: process.env['PATH'] ?? '', ...env } });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => resolveRun({ code, out }));
  });
}

function serviceEnv(): Record<string, string> {
  const { kafkaBrokers, redisUrl } = services();
  return { KAFKA_BROKERS: kafkaBrokers.join(','), REDIS_URL: redisUrl };
}

function expectGoodSummary(out: string): void {
  const summary = out.slice(out.indexOf('\nsummary\n'));
  for (const scenario of scenarios) {
    const row = summary.split('\n').find((line) => line.startsWith(`${scenario.label} `));
    expect(row, `summary row of ${scenario.label}`).toBeDefined();
    const field = scenario.expect.field;
    const outcome = `${scenario.expect.type}${field ? ` (${field[1]})` : ''}`.replace(/[.()]/g, '\\$&');
    expect(row).toMatch(
      new RegExp(`^${scenario.label}\\s+${outcome}\\s+ok\\s+${scenario.exchangeOrders}\\s+\\d+\\s+\\d+`),
    );
  }
  expect(summary).toMatch(
    /RESULT: all 8 orders reached their expected outcome; \d+ events, no gap, no duplicate; nothing lost/,
  );
  expect(out).toMatch(/SIGKILL w2/);
  expect(summary).toMatch(/^trace [\da-f]{32}: \d+ spans over/m);
  // The POST of the in-doubt order, as the exchange client's HTTP span names it, under the operation span.
  expect(summary).toMatch(/exchange createOrder/);
  expect(summary).toMatch(/POST \/orders\//);
}

describe('npm run demo', () => {
  it('piped: prints a plain line per event, every order reaches its expected outcome, exit status 0', async () => {
    const { code, out } = await run(process.execPath, ['scripts/demo.ts'], serviceEnv());
    expect(code, out.slice(-4000)).toBe(0);
    expect(out).not.toContain('\u001b[');
    expect(out).toMatch(/^\[\s*[\d.]+ s\] defi\s+#1 /m);
    expectGoodSummary(out);
  });

  it('in a terminal: redraws the live table in place, then the same summary', async () => {
    const { code, out } = await run(
      'script',
      ['-qfec', `stty cols 120 rows 45; exec ${process.execPath} scripts/demo.ts`, '/dev/null'],
      {
        ...serviceEnv(),
        TERM: 'xterm-256color',
      },
    );
    expect(code, out.slice(-4000)).toBe(0);
    // log-update redraws in place: it moves the cursor up over the previous frame and rewrites the lines that
    // changed (the clock in the header line changes on every frame).
    expect(out.split('\u001b[').filter((part) => /^\d*A/.test(part)).length).toBeGreaterThan(20);
    const clocks = new Set(out.match(/exchange-order-worker demo {2}[\d.]+ s/g) ?? []);
    expect(clocks.size).toBeGreaterThan(10);
    expect(out).toMatch(/order\s+mode\s+exchange\s+last event\s+seq\s+replica\s+elapsed/);
    expectGoodSummary(out.replace(/\r/g, ''));
  });
});
