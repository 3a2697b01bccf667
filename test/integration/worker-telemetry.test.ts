// Traces leave the worker over OTLP/HTTP: a span per command and per exchange call reach a collector (here a plain
// HTTP server standing in for one), and no key, token or webhook secret appears in what is exported.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoKeys, demoReferral } from '../../src/sandbox/index.ts';
import { freePort } from '../../dev/services/index.ts';
import { modeSpecs } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
let collector: http.Server;
const exported: string[] = [];

beforeAll(async () => {
  const port = await freePort();
  collector = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') exported.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(port, '127.0.0.1', resolve));
  cluster = await startCluster({
    workers: 1,
    partitions: 1,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await new Promise((resolve) => collector?.close(resolve));
});

describe('tracing', () => {
  it('exports a span per command and per exchange call, without secrets', async () => {
    const { base: _base, ...fields } = modeSpecs.find((s) => s.mode === 'defi')!;
    const orderId = uniqueName('traced');
    await cluster.send({
      type: 'order.create',
      command_id: `${orderId}-c`,
      order_id: orderId,
      ...fields,
      deposit_amount: '140.25',
    });
    await cluster.collector.waitForOrderEvent(orderId, 'order.created');
    const deadline = Date.now() + 30_000;
    const all = (): string => exported.join('\n');
    while (
      !(all().includes('order command') && all().includes('exchange POST /orders/')) &&
      Date.now() < deadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const text = all();
    expect(text).toContain('order command');
    expect(text).toContain('exchange GET /rate/');
    expect(text).toContain('exchange POST /orders/');
    expect(text).toContain(orderId);
    for (const secret of [
      demoKeys.defi,
      demoKeys.cefi,
      demoKeys.cefiFixed,
      demoReferral.token,
      webhookSecret,
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});
