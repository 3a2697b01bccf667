// The two HTTP faces over real sockets: the public webhook server answers POST /webhooks/exchange and nothing
// else, within bounded header/body time, body size and connection count; health, readiness and metrics live on
// the operations server only.
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/telemetry/logger.ts';
import {
  createOpsServer,
  createWebhookServer,
  type WebhookServerDeps,
  type WebhookServerLimits,
} from '../../../src/http/http-server.ts';

const logger = createLogger({ level: 'silent' });
const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function webhookServer(limits: WebhookServerLimits & Pick<WebhookServerDeps, 'onShed'> = {}) {
  const received: Buffer[] = [];
  const server = createWebhookServer({
    logger,
    ...limits,
    handleWebhook: (raw) => {
      received.push(raw);
      return Promise.resolve({ status: 200 as const, result: 'routed' as const, body: { accepted: true } });
    },
  });
  return { server, received };
}

/** Opens a raw connection, sends `text`, and resolves with what the server sent until it closed. */
function rawExchange(base: string, text: string): Promise<{ data: string; closedAfterMs: number }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    sockets.push(socket);
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString()));
    socket.on('close', () => resolve({ data, closedAfterMs: performance.now() - started }));
    socket.on('error', reject);
  });
}

describe('webhook server (HTTP_PORT)', () => {
  it('serves POST /webhooks/exchange with the raw body, and no health, readiness or metrics', async () => {
    const { server, received } = webhookServer();
    const base = await listen(server);
    const res = await fetch(`${base}/webhooks/exchange/`, { method: 'POST', body: ' {"a": 1} ' });
    expect(res.status).toBe(200);
    expect(received.map((raw) => raw.toString())).toEqual([' {"a": 1} ']);
    for (const path of ['/metrics', '/readyz', '/healthz', '/'])
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    expect((await fetch(`${base}/webhooks/exchange`)).status).toBe(405);
  });

  it('refuses a body over the limit, declared or streamed, without handing it on', async () => {
    const { server, received } = webhookServer({ maxBodyBytes: 1_024 });
    const base = await listen(server);
    const declared = await fetch(`${base}/webhooks/exchange`, { method: 'POST', body: 'x'.repeat(2_048) });
    expect(declared.status).toBe(413);
    const streamed = await rawExchange(
      base,
      'POST /webhooks/exchange HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' +
        `800\r\n${'y'.repeat(2_048)}\r\n0\r\n\r\n`,
    );
    expect(streamed.data).toMatch(/^HTTP\/1\.1 413/);
    expect(received).toEqual([]);
  });

  it('cuts off a client that sends its headers or its body too slowly', async () => {
    const { server, received } = webhookServer({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const base = await listen(server);
    const slowHeaders = await rawExchange(base, 'POST /webhooks/exchange HTTP/1.1\r\nHost: x\r\n');
    expect(slowHeaders.data).toMatch(/^HTTP\/1\.1 408/);
    expect(slowHeaders.closedAfterMs).toBeLessThan(2_000);
    const slowBody = await rawExchange(
      base,
      'POST /webhooks/exchange HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"partial":',
    );
    expect(slowBody.closedAfterMs).toBeLessThan(2_500);
    expect(received).toEqual([]);
  });

  it('answers a burst of 1,000 deliveries at once, one connection each, every one with a 2xx', async () => {
    // A refused delivery counts towards the exchange disabling the endpoint (50 % errors): a burst of status
    // changes must all be answered (the cap was 256 and refused most of such a burst).
    const received: Buffer[] = [];
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const server = createWebhookServer({
      logger,
      handleWebhook: async (raw) => {
        received.push(raw);
        await held;
        return { status: 200 as const, result: 'routed' as const, body: { accepted: true } };
      },
    });
    const base = await listen(server);
    const { port } = new URL(base);
    const body = '{"unique_reference":"R","status":"COMPLETED"}';
    const deliveries = Array.from(
      { length: 1_000 },
      () =>
        new Promise<string>((resolve) => {
          const socket = connect(Number(port), '127.0.0.1', () =>
            socket.write(
              `POST /webhooks/exchange HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
            ),
          );
          sockets.push(socket);
          let data = '';
          socket.on('data', (chunk) => (data += chunk.toString()));
          socket.on('close', () => resolve(data.slice(0, 12)));
          socket.on('error', () => resolve('error'));
        }),
    );
    // Every connection is open and its request handed on before any is answered.
    for (let i = 0; i < 200 && received.length < 1_000; i++) await new Promise((r) => setTimeout(r, 25));
    release();
    const answers = await Promise.all(deliveries);
    expect(answers.filter((a) => a !== 'HTTP/1.1 200')).toEqual([]);
    expect(received).toHaveLength(1_000);
  });

  it('shares one budget of unverified body bytes among all deliveries: a flood gets 503s past it, and a delivery after it goes through', async () => {
    const shed: string[] = [];
    const { server, received } = webhookServer({
      maxUnverifiedBytes: 64 * 1_024,
      requestTimeoutMs: 3_000,
      onShed: (reason) => shed.push(reason),
    });
    const base = await listen(server);
    const { port } = new URL(base);
    // 24 unsigned senders: 12 declare 16 KiB and send half, 12 stream chunks of 8 KiB without a length; none finishes.
    const flood = Array.from(
      { length: 24 },
      (_, i) =>
        new Promise<string>((resolve) => {
          const head =
            i % 2 === 0
              ? 'POST /webhooks/exchange HTTP/1.1\r\nHost: x\r\nContent-Length: 16384\r\n\r\n'
              : 'POST /webhooks/exchange HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2000\r\n';
          const socket = connect(Number(port), '127.0.0.1', () => socket.write(head + 'x'.repeat(8_192)));
          sockets.push(socket);
          let data = '';
          socket.on('data', (chunk) => (data += chunk.toString()));
          socket.on('close', () => resolve(data.slice(0, 12)));
          socket.on('error', () => resolve(data.slice(0, 12) || 'error'));
          setTimeout(() => resolve(data.slice(0, 12) || 'held'), 1_500);
        }),
    );
    const answers = await Promise.all(flood);
    const busy = answers.filter((a) => a === 'HTTP/1.1 503');
    // 64 KiB admit at most 4 declared 16 KiB bodies, or 8 streamed 8 KiB ones: the other senders are turned away.
    expect(busy.length).toBeGreaterThanOrEqual(24 - 8);
    expect(answers.filter((a) => a !== 'HTTP/1.1 503' && a !== 'held')).toEqual([]);
    expect(shed.length).toBe(busy.length);
    expect(new Set(shed)).toEqual(new Set(['body_budget']));
    expect(received).toEqual([]);
    // The flood's held bytes come back when its connections go: a real delivery is read and handed on.
    for (const socket of sockets.splice(0)) socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`${base}/webhooks/exchange`, { method: 'POST', body: '{"signed":"later"}' });
    expect(res.status).toBe(200);
    expect(received.map((raw) => raw.toString())).toEqual(['{"signed":"later"}']);
  });

  it('counts a connection refused at accept by the cap', async () => {
    const shed: string[] = [];
    const { server } = webhookServer({ maxConnections: 1, onShed: (reason) => shed.push(reason) });
    const base = await listen(server);
    const { port } = new URL(base);
    for (let i = 0; i < 3; i++)
      await new Promise<void>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => resolve());
        sockets.push(socket);
      });
    for (let i = 0; i < 50 && shed.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(shed).toEqual(['connections', 'connections']);
  });

  it('caps concurrent connections', async () => {
    const { server } = webhookServer({ maxConnections: 2 });
    const base = await listen(server);
    const { port } = new URL(base);
    const open = (): Promise<Socket> =>
      new Promise((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => resolve(socket));
        sockets.push(socket);
      });
    await open();
    await open();
    const third = await open();
    const closed = await new Promise<boolean>((resolve) => {
      third.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 1_000);
    });
    expect(closed).toBe(true);
  });
});

describe('operations server (METRICS_PORT)', () => {
  it('serves /healthz, /readyz and the /metrics body of the one function it is given (sync or async)', async () => {
    let ready = true;
    const server = createOpsServer({
      logger,
      readiness: () => Promise.resolve({ ready, checks: { redis: { ok: ready } } }),
      metrics: () => Promise.resolve('worker_active_orders 3\n'),
    });
    const base = await listen(server);
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'alive' });
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    ready = false;
    expect(await (await fetch(`${base}/readyz`)).json()).toMatchObject({ status: 'not_ready' });
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await metrics.text()).toBe('worker_active_orders 3\n');
    expect((await fetch(`${base}/webhooks/exchange`, { method: 'POST', body: '{}' })).status).toBe(405);
    expect((await fetch(`${base}/webhooks/exchange`)).status).toBe(404);
  });
});
