// The sandbox faults the fault suite added (create_then_error, expired_on_repeat) and its record of throttle
// refusals, which the invariant checker reads for "no 429 from the global throttle" and the quote cooldown.
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- these tests read the exchange's raw JSON */
import { describe, expect, it } from 'vitest';
import { btcToEthOrder, call, demoKeys, EVM_ADDRESS, startTestSandbox } from '../adapter/sandbox/helpers.ts';

describe('sandbox faults of the fault suite', () => {
  it('create_then_error: the order exists although the answer was a 5xx, then a 408', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'create_then_error',
      times: 1,
    });
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'create_then_error',
      status: 408,
      skip: 1,
      times: 1,
    });
    const first = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ deposit_amount: '0.11' }) });
    expect(first.status).toBe(503); // the sandbox's default for create_then_error
    const second = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ deposit_amount: '0.12' }) });
    expect(second.status).toBe(408);
    const amounts = sandbox.orders.list().map((o) => Number(o.order['deposit_amount']));
    expect(amounts.sort()).toEqual([0.11, 0.12]);
    expect((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status).toBe(201);
  });

  it('create_then_error does not fire on a request that failed by itself', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'create_then_error',
      times: 1,
    });
    const refused = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ withdraw_address: 'nope' }),
    });
    expect(refused.status).toBe(400);
    expect(sandbox.listFaults()[0]?.fired).toBe(0);
  });

  it('expired_on_repeat: repeating the rate_id of an existing DeFi order answers expired', async () => {
    const sandbox = await startTestSandbox();
    const body = {
      deposit_currency: 'USDT',
      withdraw_currency: 'ETH',
      deposit_amount: '100',
      withdraw_address: EVM_ADDRESS,
    };
    const quote = await call(sandbox.url, '/rate/?pairs=ETHUSDT&deposit_amount=100&actionable_quote=true', {
      key: demoKeys.defi,
    });
    expect(quote.status).toBe(200);
    const rateId = String(quote.body[0].rate_id);
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'expired_on_repeat',
      times: 1,
    });
    const created = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: { ...body, rate_id: rateId },
    });
    expect(created.status).toBe(201);
    // Without the fault a repeat reuses the order (200); with it, the exchange says the quote expired.
    const repeat = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: { ...body, rate_id: rateId },
    });
    expect(repeat.status).toBe(400);
    // Either documented DeFi wording ("invalid or expired" / "has expired") will do.
    expect(repeat.body.detail).toMatch(/expired/);
    expect(sandbox.orders.list()).toHaveLength(1);
    const reused = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: { ...body, rate_id: rateId },
    });
    expect(reused.status).toBe(200);
  });

  it('records its own throttle refusals (global and cooldown), not injected 429s', async () => {
    const sandbox = await startTestSandbox({ limits: { globalRequestsPerMinute: 2 } });
    sandbox.injectFault({ target: 'endpoint', endpoint: 'GET /pair/', kind: 'throttle', times: 1 });
    expect((await call(sandbox.url, '/pair/')).status).toBe(429);
    await call(sandbox.url, '/pair/');
    await call(sandbox.url, '/pair/');
    expect((await call(sandbox.url, '/pair/')).status).toBe(429);
    const cooldown = '/rate/?pairs=ETHUSDT&deposit_amount=5&actionable_quote=true';
    expect((await call(sandbox.url, cooldown, { key: demoKeys.defi })).status).toBe(200);
    expect((await call(sandbox.url, cooldown, { key: demoKeys.defi })).status).toBe(429);
    expect(sandbox.throttleRefusals().map((r) => [r.rule, r.pair, r.amount])).toEqual([
      ['global', undefined, undefined],
      ['actionable_cooldown', 'ETHUSDT', '5.000000000000000000'],
    ]);
  });
});
