// The read API in process (the operations server with its routes): authentication, answers that validate against
// docs/openapi.json, and no secret in any answer.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetView } from '../../../src/fleet/fleet-view.ts';
import { bearerCheck } from '../../../src/http/bearer-auth.ts';
import { createOpsServer } from '../../../src/http/http-server.ts';
import { createOrdersApi } from '../../../src/http/orders-api.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

const openapi = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8'),
) as { paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };

const ajv = new Ajv2020({ strict: false, validateFormats: false });
ajv.addSchema({ $id: 'openapi', components: openapi.components }, 'openapi');
const validator = (name: string) => ajv.getSchema(`openapi#/components/schemas/${name}`)!;

const token = 'ops-token-7f3a9c1e5b';
const now = Date.parse('2026-06-01T12:00:00Z');
let server: Server | undefined;
afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

async function start(tokens: string[]): Promise<string> {
  const view = new FleetView();
  view.apply({
    order_id: 'o-parked',
    partition: 1,
    fence: 2,
    rev: 4,
    seq: 2,
    updated_at: new Date(now - 60_000).toISOString(),
    mode: 'cefi',
    unique_reference: null,
    terminal: false,
    machine: {
      resumeFrom: 'creating.parked',
      context: {
        request: {
          depositCurrency: 'ETH',
          withdrawCurrency: 'BTC',
          depositAmount: '1',
          withdrawAddress: 'bc1q',
        },
        parkedAt: now - 60_000,
        createAttempts: 1,
        pendingIntent: { kind: 'create', startedAt: now - 120_000, rateId: null },
        lastFailure: { code: 'http_403', message: 'HTTP 403', at: now - 61_000 },
      },
    },
  });
  view.apply({
    order_id: 'o-done',
    partition: 0,
    fence: 1,
    rev: 9,
    seq: 6,
    updated_at: new Date(now - 5_000).toISOString(),
    mode: 'defi',
    unique_reference: 'REF1',
    terminal: true,
    machine: { resumeFrom: 'completed', context: { lastStatus: 'COMPLETED' } },
  });
  const routes = createOrdersApi({
    auth: bearerCheck(tokens),
    view,
    replicaOf: (orderId) =>
      Promise.resolve(
        orderId === 'o-parked' ? { worker_id: 'w-2', fence: 2, lease_remaining_ms: 4000 } : null,
      ),
    workerId: 'w-1',
    now: () => now,
  });
  server = createOpsServer({
    logger: createLogger({ level: 'silent' }),
    readiness: () => Promise.resolve({ ready: true, checks: {} }),
    metrics: () => '',
    routes,
  });
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', () => done()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const authorized = { authorization: `Bearer ${token}` };

describe('the read API', () => {
  it('does not exist without a configured token (404), and leaves the other routes alone', async () => {
    const base = await start([]);
    expect((await fetch(`${base}/orders/o-parked`, { headers: authorized })).status).toBe(404);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('answers 401 without the token or with a wrong one, and 405 to anything but GET', async () => {
    const base = await start(['old-token-1', token]);
    const none = await fetch(`${base}/orders/o-parked`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await fetch(`${base}/orders`, { headers: { authorization: `Bearer ${token}x` } })).status).toBe(
      401,
    );
    expect((await fetch(`${base}/orders`, { headers: { authorization: token } })).status).toBe(401);
    expect((await fetch(`${base}/orders`, { headers: { authorization: 'Bearer old-token-1' } })).status).toBe(
      200,
    );
    expect((await fetch(`${base}/orders/o-parked`, { method: 'POST', headers: authorized })).status).toBe(
      405,
    );
  });

  it('answers an order by id or reference with its replica, in the documented shape', async () => {
    const base = await start([token]);
    const answer = await fetch(`${base}/orders/o-parked`, { headers: authorized });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as Record<string, unknown>;
    expect(validator('OrderAnswer')(body), JSON.stringify(validator('OrderAnswer').errors)).toBe(true);
    expect(body).toMatchObject({
      order: { order_id: 'o-parked', phase: 'parked', parked: { reason: 'create_outcome_unknown' } },
      replica: { worker_id: 'w-2' },
      answered_by: 'w-1',
    });
    const byReference = (await (await fetch(`${base}/orders/REF1`, { headers: authorized })).json()) as {
      order: { order_id: string };
      replica: unknown;
    };
    expect(validator('OrderAnswer')(byReference)).toBe(true);
    expect(byReference).toMatchObject({ order: { order_id: 'o-done' }, replica: null });
    const missing = await fetch(`${base}/orders/nobody`, { headers: authorized });
    expect(missing.status).toBe(404);
    expect(validator('Problem')(await missing.json())).toBe(true);
  });

  it('lists by state, mode and age in the documented shape, and explains a bad query', async () => {
    const base = await start([token]);
    const page = (await (
      await fetch(`${base}/orders?state=parked&older_than=30s&mode=cefi`, { headers: authorized })
    ).json()) as { orders: Array<{ order_id: string }> };
    expect(validator('OrderPage')(page), JSON.stringify(validator('OrderPage').errors)).toBe(true);
    expect(page.orders.map((o) => o.order_id)).toEqual(['o-parked']);
    const bad = await fetch(`${base}/orders?older_than=soon`, { headers: authorized });
    expect(bad.status).toBe(400);
    const problem = (await bad.json()) as { problems: string[] };
    expect(validator('Problem')(problem)).toBe(true);
    expect(problem.problems.join()).toMatch(/older_than/);
  });

  it('documents exactly the routes it serves', () => {
    expect(Object.keys(openapi.paths).sort()).toEqual(['/orders', '/orders/{order_id}']);
  });
});
