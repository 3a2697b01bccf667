// The benchmarks' exchange in a process of its own (bench/lib/exchange-process.ts): the sandbox started there on a
// configuration sent from here, reached through the timing pass-through whose records come back over IPC, driven
// over the sandbox's admin API; and a child that ends when its parent lets go of it.
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- the exchange's raw JSON is read as it comes */
import { afterEach, describe, expect, it } from 'vitest';
import { startExchangeProcess, type ExchangeProcess } from '../../../bench/lib/exchange-process.ts';
import {
  btcToEthOrder,
  call,
  partnersWithWebhooks,
  startWebhookReceiver,
  testConfig,
} from '../sandbox/helpers.ts';

const started: ExchangeProcess[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((exchange) => exchange.close()));
});

async function exchangeProcess(): Promise<ExchangeProcess> {
  const exchange = await startExchangeProcess();
  started.push(exchange);
  return exchange;
}

describe('the exchange in a process of its own', () => {
  it('runs the sandbox behind the pass-through, returns the records and answers the admin calls', async () => {
    const receiver = await startWebhookReceiver();
    const exchange = await exchangeProcess();
    expect(exchange.child.pid).not.toBe(process.pid);
    const sandbox = await exchange.startSandbox({
      config: testConfig({ partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2' }]) }),
      seed: 3,
    });
    const before = performance.timeOrigin + performance.now();
    const created = await call(exchange.url, '/orders/', { body: btcToEthOrder() });
    expect(created.status).toBe(201);
    const reference = String(created.body.unique_reference);
    expect((await call(exchange.url, `/orders/${reference}/`)).status).toBe(200);
    const after = performance.timeOrigin + performance.now();

    const calls = await exchange.calls();
    expect(calls.map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual([
      'POST /orders/ 201',
      `GET /orders/${reference}/ 200`,
    ]);
    // Wall-clock times of the other process, comparable with this one's.
    for (const c of calls) {
      expect(c.startedAt).toBeGreaterThanOrEqual(before - 50);
      expect(c.endedAt ?? Infinity).toBeLessThanOrEqual(after + 50);
    }
    expect(await exchange.callCount()).toBe(2);
    expect((await exchange.calls(1)).map((c) => c.method)).toEqual(['GET']);

    expect(await sandbox.advanceOrders([reference], 'completed')).toEqual([
      ['UNCONFIRMED PAYMENT', 'PAID', 'PRE-RELEASE', 'RELEASED', 'COMPLETED'],
    ]);
    await receiver.waitFor(5);
    const deadline = Date.now() + 5_000;
    while ((await sandbox.webhooksPending()) > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await sandbox.webhookOutcomes()).toEqual([
      { outcome: 'delivered', httpStatus: 200, error: null, count: 5 },
    ]);
    const orders = await sandbox.orders.list();
    expect(orders.map((o) => [o.mode, o.order['status']])).toEqual([['cefi', 'COMPLETED']]);
    // Where it already is, an order passes nothing; an unknown one is refused, and said so.
    await expect(sandbox.advanceOrders([reference, 'NOPE'], 'completed')).rejects.toThrow(
      'sandbox refused to advance 1 of 2 orders: NOPE: 404',
    );

    await exchange.throttle(1);
    expect((await call(exchange.url, '/pair/')).status).toBe(200);
    expect((await call(exchange.url, '/pair/')).status).toBe(429);
    await exchange.throttle(null);
    expect((await call(exchange.url, '/pair/')).status).toBe(200);
  });

  it('refuses a configuration the sandbox would refuse', async () => {
    const exchange = await exchangeProcess();
    await expect(exchange.startSandbox({ config: { ...testConfig(), partners: [] } })).rejects.toThrow(
      /invalid sandbox config/,
    );
  });

  it('ends when its parent lets go of the channel (exits or is killed)', async () => {
    const exchange = await startExchangeProcess();
    const exited = new Promise<number | null>((resolve) => exchange.child.once('exit', resolve));
    exchange.child.disconnect();
    expect(await exited).toBe(0);
  });
});
