// The console's guards, in process: sign-in, the form token, the confirmation step, and a settle refused when the
// order moved since its page was shown. The browser test (test/integration/console.test.ts) covers the happy path.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createConsoleServer } from '../../../src/console/console-server.ts';
import { FleetView } from '../../../src/fleet/fleet-view.ts';
import { bearerCheck } from '../../../src/http/bearer-auth.ts';
import type { PreparedCommand } from '../../../src/inspect/operator-commands.ts';
import { testOperator } from '../../support/operator-key.ts';

const token = 'console-unit-token';
const now = Date.parse('2026-06-01T12:00:00Z');
let server: Server | undefined;
afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

function parkedRecord(seq: number) {
  return {
    order_id: 'o-1',
    partition: 0,
    fence: 1,
    rev: seq,
    seq,
    updated_at: new Date(now - 60_000).toISOString(),
    mode: 'cefi',
    unique_reference: null,
    terminal: false,
    machine: {
      resumeFrom: 'creating.parked',
      context: { parkedAt: now - 60_000, request: { depositCurrency: 'ETH', withdrawCurrency: 'BTC' } },
    },
  };
}

async function start(): Promise<{ base: string; view: FleetView; sent: PreparedCommand[] }> {
  const view = new FleetView();
  view.apply(parkedRecord(1));
  const sent: PreparedCommand[] = [];
  server = createConsoleServer({
    auth: bearerCheck([token]),
    view,
    timelineOf: () => ({ timeline: [], parkedEvent: null }),
    replicaOf: () => Promise.resolve(null),
    candidatesOf: () => Promise.resolve({ unavailable: 'no exchange here' }),
    send: (command) => {
      sent.push(command);
      return Promise.resolve();
    },
    signer: testOperator,
    traceUiUrl: undefined,
    stalledAfterMs: 3_600_000,
    now: () => now,
  });
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', () => done()));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, view, sent };
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
  redirect: 'manual' as const,
});

async function signIn(base: string): Promise<{ cookie: string; csrf: string }> {
  const login = await fetch(`${base}/login`, form({ token }));
  expect(login.status).toBe(303);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  expect(login.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
  const page = await (await fetch(`${base}/orders/o-1`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
  expect(csrf).not.toBe('');
  return { cookie, csrf };
}

describe('the console server', () => {
  it('sends an unsigned visitor to sign in, and refuses a wrong token', async () => {
    const { base } = await start();
    const anonymous = await fetch(`${base}/`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/login');
    expect((await fetch(`${base}/login`, form({ token: 'nope' }))).status).toBe(401);
    expect((await fetch(`${base}/`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });

  it('asks for a confirmation, then sends one signed command; refuses a stale form token', async () => {
    const { base, sent } = await start();
    const { cookie, csrf } = await signIn(base);
    const fields = { csrf, seq: '1', resolution: 'abandon' };
    const forged = await fetch(`${base}/orders/o-1/settle`, {
      ...form({ ...fields, csrf: 'x' }),
      headers: { ...form({}).headers, cookie },
    });
    expect(forged.status).toBe(403);
    const confirm = await fetch(`${base}/orders/o-1/settle`, {
      ...form(fields),
      headers: { ...form({}).headers, cookie },
    });
    expect(await confirm.text()).toContain('Confirm: settle o-1');
    expect(sent).toHaveLength(0);
    const done = await fetch(`${base}/orders/o-1/settle`, {
      ...form({ ...fields, confirm: 'yes' }),
      headers: { ...form({}).headers, cookie },
    });
    expect(done.status).toBe(303);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ orderId: 'o-1', command: { resolution: 'abandon' } });
    expect(sent[0]!.headers['operator-key-id']).toBe(testOperator.keyId);
  });

  it('refuses to send when the order moved since its page was shown', async () => {
    const { base, view, sent } = await start();
    const { cookie, csrf } = await signIn(base);
    view.apply(parkedRecord(2));
    const moved = await fetch(`${base}/orders/o-1/settle`, {
      ...form({ csrf, seq: '1', resolution: 'abandon', confirm: 'yes' }),
      headers: { ...form({}).headers, cookie },
    });
    expect(await moved.text()).toContain('its state changed since it was listed');
    expect(sent).toHaveLength(0);
  });
});
