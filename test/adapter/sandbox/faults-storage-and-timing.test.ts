// Faults of the second money-safety round (issue 50): an exchange that stores amounts with fewer fractional digits
// than it is sent (round_amounts), a first POST answered 200 "reused" with another order's exchange order
// (reuse_other_order), a request that takes effect only after the client gave up (late_landing), and faults aimed
// at one request by its body (whenBody).
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../../sandbox/index.ts';
import {
  btcToEthOrder,
  call,
  createOrder,
  demoKeys,
  EVM_ADDRESS,
  partnersWithWebhooks,
  startTestSandbox,
  startWebhookReceiver,
} from './helpers.ts';

const CREATE = 'POST /orders/';

/** Waits for a condition with a bounded timeout (the faults below act on real-time timers). */
async function until(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A POST /orders/ whose connection may drop without an answer: the status, or 'dropped'. */
async function postOrder(
  sandbox: SandboxHandle,
  body: Record<string, unknown>,
  opts: { key?: string; timeoutMs?: number } = {},
): Promise<number | 'dropped' | 'gave_up'> {
  try {
    const response = await fetch(`${sandbox.url}/orders/`, {
      method: 'POST',
      headers: {
        Authorization: `ApiKey ${opts.key ?? demoKeys.cefi}`,
        'Content-Type': 'application/json',
        Accept: 'application/json',
      },
      body: JSON.stringify(body),
      ...(opts.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(opts.timeoutMs) }),
    });
    await response.text();
    return response.status;
  } catch (error) {
    return (error as Error).name === 'TimeoutError' ? 'gave_up' : 'dropped';
  }
}

async function actionableRateId(sandbox: SandboxHandle, amount: string): Promise<string> {
  const quote = await call(
    sandbox.url,
    `/rate/?pairs=USDTETH&deposit_amount=${amount}&actionable_quote=true`,
    { key: demoKeys.defi },
  );
  expect(quote.status).toBe(200);
  return quote.body[0].rate_id as string;
}

const defiBody = (amount: string, rateId: string) => ({
  deposit_currency: 'ETH',
  withdraw_currency: 'USDT',
  deposit_amount: amount,
  withdraw_address: EVM_ADDRESS,
  rate_id: rateId,
});

describe('round_amounts', () => {
  it('stores an 18-decimal deposit_amount with 8 digits (half-even by default): POST, GET, list, webhook and v1 agree', async () => {
    const receiver = await startWebhookReceiver();
    const sandbox = await startTestSandbox({
      partners: partnersWithWebhooks([{ url: receiver.url, payloadVersion: 'v2' }]),
    });
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'round_amounts' });
    const created = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ deposit_amount: '0.123456789012345678' }),
    });
    expect(created.status).toBe(201);
    // 0.12345678|9012… rounds up; the withdraw amount is worked out from the stored deposit, then stored rounded.
    expect(created.body.deposit_amount).toBe('0.12345679');
    expect(created.body.withdraw_amount).toBe('3.69870370');
    const reference = created.body.unique_reference as string;
    const detail = await call(sandbox.url, `/orders/${reference}/`);
    expect(detail.body.deposit_amount).toBe('0.12345679');
    const list = await call(sandbox.url, '/orders/');
    expect(list.body.results[0].deposit_amount).toBe('0.12345679');
    const v1 = await call(sandbox.v1Url, `/orders/${reference}/`, { key: null });
    expect(v1.body.amount_quote).toBe('0.123456790000000000');
    sandbox.advanceOrder(reference, 'deposit_seen');
    const [webhook] = await receiver.waitFor(1);
    expect(webhook!.body.deposit_amount).toBe('0.12345679');
    // The sandbox's own record keeps what was asked.
    expect(sandbox.orders.get(reference)?.requested).toEqual({
      depositAmount: '0.123456789012345678',
      withdrawAmount: null,
    });
  });

  it.each([
    ['half_even', '0.100000005', '0.10000000'],
    ['half_even', '0.100000015', '0.10000002'],
    ['half_up', '0.100000005', '0.10000001'],
    ['half_up', '0.100000004999999999', '0.10000000'],
    ['truncate', '0.100000019999999999', '0.10000001'],
  ] as const)('rounds %s: %s is stored as %s', async (rounding, sent, stored) => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'round_amounts', rounding });
    expect((await createOrder(sandbox, { deposit_amount: sent })).deposit_amount).toBe(stored);
    // The order as stored, not only as shown: the v1 representation has 18 digits.
    const v1 = await call(sandbox.v1Url, `/orders/`, { key: null });
    expect(v1.body.results[0].amount_quote).toBe(`${stored}0000000000`);
  });

  it('keeps fractionDigits digits, rounds a given withdraw_amount, and without the fault keeps all 18 digits', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'round_amounts',
      fractionDigits: 4,
      times: 1,
    });
    const rounded = await createOrder(sandbox, { deposit_amount: undefined, withdraw_amount: '2.99995' });
    // 2.99995 is a tie at 4 digits: half-even keeps 3.0000 (the even neighbour of 2.9999).
    expect(rounded.withdraw_amount).toBe('3.00000000');
    const plain = await createOrder(sandbox, { deposit_amount: '0.123456789012345678' });
    // No fault: the v2 representation shows 8 digits (truncated), the order keeps all 18 (v1 shows them).
    expect(plain.deposit_amount).toBe('0.12345678');
    const v1 = await call(sandbox.v1Url, `/orders/${plain.unique_reference}/`, { key: null });
    expect(v1.body.amount_quote).toBe('0.123456789012345678');
  });

  it('is refused at the admin API with an unknown rounding', async () => {
    const sandbox = await startTestSandbox();
    const refused = await call(sandbox.adminUrl, '/faults/', {
      key: null,
      body: { target: 'endpoint', endpoint: CREATE, kind: 'round_amounts', rounding: 'banker' },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('rounding');
  });
});

describe('reuse_other_order', () => {
  it('answers a first CeFi POST 200 with the newest order of the same content, and creates nothing', async () => {
    const sandbox = await startTestSandbox();
    const first = await createOrder(sandbox);
    const second = await createOrder(sandbox);
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'reuse_other_order', times: 1 });
    const reused = await call(sandbox.url, '/orders/', { body: btcToEthOrder() });
    expect(reused.status).toBe(200);
    expect(reused.body.unique_reference).toBe(second.unique_reference);
    expect(reused.body.unique_reference).not.toBe(first.unique_reference);
    expect(sandbox.orders.list()).toHaveLength(2);
    expect(sandbox.listFaults()[0]!.fired).toBe(1);
    // times: 1, so the next one is created
    expect((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status).toBe(201);
  });

  it('does not fire while no order has the same content (amount, address), and answers otherReference when named', async () => {
    const sandbox = await startTestSandbox();
    const other = await createOrder(sandbox, { deposit_amount: '0.3' });
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'reuse_other_order', times: 1 });
    expect((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status).toBe(201);
    expect(sandbox.listFaults()[0]!.fired).toBe(0);
    sandbox.clearFaults();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'reuse_other_order',
      otherReference: other.unique_reference,
      times: 1,
    });
    const named = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ deposit_amount: '0.4' }) });
    expect(named.status).toBe(200);
    expect(named.body.unique_reference).toBe(other.unique_reference);
    expect(named.body.deposit_amount).toBe('0.30000000');
  });

  it("answers a DeFi POST with a fresh rate_id with a sibling's order; its rate_id stays unbound, so a repeat creates", async () => {
    const sandbox = await startTestSandbox();
    const siblingRate = await actionableRateId(sandbox, '1');
    const sibling = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: defiBody('1', siblingRate),
    });
    expect(sibling.status).toBe(201);
    sandbox.advanceClock(16_000); // past the actionable quote's cooldown for the same pair and amount
    const rateId = await actionableRateId(sandbox, '1');
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'reuse_other_order', times: 1 });
    const reused = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody('1', rateId) });
    expect(reused.status).toBe(200);
    expect(reused.body.unique_reference).toBe(sibling.body.unique_reference);
    expect(sandbox.orders.list()).toHaveLength(1);
    const repeat = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody('1', rateId) });
    expect(repeat.status).toBe(201);
    expect(repeat.body.unique_reference).not.toBe(sibling.body.unique_reference);
  });
});

describe('late_landing', () => {
  it('drops the connection at once (holdMs 0) and creates the order only landAfterMs later', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'late_landing',
      holdMs: 0,
      landAfterMs: 1_500,
      times: 1,
    });
    const sentAt = Date.now();
    expect(await postOrder(sandbox, btcToEthOrder())).toBe('dropped');
    // Before it lands: a lookup (the list) finds nothing, the landing is pending.
    expect((await call(sandbox.url, '/orders/')).body.results).toEqual([]);
    expect(sandbox.lateLandings()).toMatchObject([
      { endpoint: CREATE, state: 'pending', status: null, uniqueReference: null },
    ]);
    // Dropped at once: long before it lands.
    const dropped = sandbox.lateLandings()[0]!;
    expect(dropped.droppedAt).not.toBeNull();
    expect(dropped.droppedAt! - dropped.arrivedAt).toBeLessThan(dropped.landsAt - dropped.arrivedAt);
    await until('the landing', () => sandbox.orders.list().length === 1);
    const [landing] = sandbox.lateLandings();
    const [order] = sandbox.orders.list();
    expect(landing).toMatchObject({ state: 'landed', status: 201 });
    expect(landing!.uniqueReference).toBe(order!.order['unique_reference']);
    // created_on is when it landed, not when it was sent.
    expect(Date.parse(String(order!.order['created_on']))).toBeGreaterThanOrEqual(sentAt + 1_400);
    expect((await call(sandbox.url, '/orders/')).body.results).toHaveLength(1);
  });

  it('holds the request past the client timeout (holdMs = landAfterMs by default), then creates the order', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'late_landing', landAfterMs: 1_500 });
    expect(await postOrder(sandbox, btcToEthOrder(), { timeoutMs: 150 })).toBe('gave_up');
    expect(sandbox.orders.list()).toHaveLength(0);
    await until('the landing', () => sandbox.lateLandings()[0]?.state === 'landed');
    expect(sandbox.orders.list()).toHaveLength(1);
    // The client left first: the drop is when it gave up, before the landing.
    const [landing] = sandbox.lateLandings();
    expect(landing!.droppedAt!).toBeLessThan(landing!.landsAt);
  });

  it('is admitted on arrival: authentication and the global throttle apply when it arrives, not when it lands', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({ target: 'endpoint', endpoint: CREATE, kind: 'late_landing', landAfterMs: 50 });
    expect(await postOrder(sandbox, btcToEthOrder(), { key: 'not-a-key-at-all' })).toBe(401);
    expect(sandbox.listFaults()[0]!.fired).toBe(0);
    expect(sandbox.lateLandings()).toEqual([]);
  });

  it('lands a DeFi create after its repeat made the order: the rate_id binding answers the landing 200, one order', async () => {
    const sandbox = await startTestSandbox();
    const rateId = await actionableRateId(sandbox, '1');
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'late_landing',
      holdMs: 0,
      landAfterMs: 2_000,
      times: 1,
    });
    expect(await postOrder(sandbox, defiBody('1', rateId), { key: demoKeys.defi })).toBe('dropped');
    const repeat = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody('1', rateId) });
    expect(repeat.status).toBe(201);
    await until('the landing', () => sandbox.lateLandings()[0]?.state !== 'pending');
    expect(sandbox.lateLandings()[0]).toMatchObject({
      state: 'landed',
      status: 200,
      uniqueReference: repeat.body.unique_reference,
    });
    expect(sandbox.orders.list()).toHaveLength(1);
  });

  it('records a landing refused by then (its quote expired meanwhile) and creates nothing', async () => {
    const sandbox = await startTestSandbox();
    const rateId = await actionableRateId(sandbox, '2');
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'late_landing',
      holdMs: 0,
      landAfterMs: 1_000,
    });
    expect(await postOrder(sandbox, defiBody('2', rateId), { key: demoKeys.defi })).toBe('dropped');
    sandbox.advanceClock(10 * 60_000);
    await until('the landing', () => sandbox.lateLandings()[0]?.state !== 'pending');
    expect(sandbox.lateLandings()[0]).toMatchObject({ state: 'refused', status: 400, uniqueReference: null });
    expect(sandbox.orders.list()).toHaveLength(0);
  });

  it('discards what has not landed when the sandbox closes; the admin API lists landings and refuses holdMs > landAfterMs', async () => {
    const sandbox = await startTestSandbox();
    const refused = await call(sandbox.adminUrl, '/faults/', {
      key: null,
      body: { target: 'endpoint', endpoint: CREATE, kind: 'late_landing', landAfterMs: 100, holdMs: 200 },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('holdMs must not exceed landAfterMs');
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'late_landing',
      holdMs: 0,
      landAfterMs: 60_000,
    });
    expect(await postOrder(sandbox, btcToEthOrder())).toBe('dropped');
    const listed = await call(sandbox.adminUrl, '/faults/late-landings/', { key: null });
    expect(listed.body.pending).toBe(1);
    expect(listed.body.landings[0].state).toBe('pending');
    await sandbox.close();
    await until('the discard', () => sandbox.lateLandings()[0]?.state === 'discarded');
    expect(sandbox.orders.list()).toHaveLength(0);
  });
});

describe('whenBody', () => {
  it('aims a fault at the requests whose body has the given fields (amounts compared as decimals)', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'lost_response',
      whenBody: { deposit_amount: '0.2', withdraw_address: EVM_ADDRESS },
      times: 1,
    });
    expect(await postOrder(sandbox, btcToEthOrder({ deposit_amount: '0.1' }))).toBe(201);
    expect(sandbox.listFaults()[0]!.fired).toBe(0);
    expect(await postOrder(sandbox, btcToEthOrder({ deposit_amount: '0.200000000000000000' }))).toBe(
      'dropped',
    );
    expect(sandbox.listFaults()[0]!.fired).toBe(1);
    expect(sandbox.orders.list()).toHaveLength(2);
    // times counts matching requests: the next one of that body goes through
    expect(await postOrder(sandbox, btcToEthOrder({ deposit_amount: '0.2' }))).toBe(201);
  });

  it('aims faults drawn inside the create too (expired_on_repeat on one order only)', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: CREATE,
      kind: 'expired_on_repeat',
      whenBody: { deposit_amount: '3' },
    });
    const aimed = await actionableRateId(sandbox, '3');
    const spared = await actionableRateId(sandbox, '4');
    for (const [amount, rateId] of [
      ['3', aimed],
      ['4', spared],
    ] as const)
      expect(
        (await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody(amount, rateId) })).status,
      ).toBe(201);
    expect(
      (await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody('3', aimed) })).status,
    ).toBe(400);
    expect(
      (await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody('4', spared) })).status,
    ).toBe(200);
  });
});
