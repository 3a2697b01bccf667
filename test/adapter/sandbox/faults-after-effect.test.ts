// Faults for the money-safety work: answers that lie about what happened. An order created behind a 5xx or 408
// (create_then_error), addresses stored in another case (normalise_address_case), a DeFi repeat refused although
// its order exists (expired_on_repeat), and an order detail that describes another order (get_other_order).
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { btcToEthOrder, call, createOrder, demoKeys, EVM_ADDRESS, startTestSandbox } from './helpers.ts';

const LOWER_EVM = EVM_ADDRESS.toLowerCase();

describe('create_then_error', () => {
  it.each([500, 502, 503, 504, 408])('creates the order, then answers %i instead of 201', async (status) => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'create_then_error',
      status,
      times: 1,
    });
    const response = await call(sandbox.url, '/orders/', { body: btcToEthOrder() });
    expect(response.status).toBe(status);
    expect(typeof response.body.detail).toBe('string');
    expect(response.text).not.toContain('unique_reference');
    const orders = sandbox.orders.list();
    expect(orders).toHaveLength(1);
    expect(orders[0]!.order['withdraw_address']).toBe(EVM_ADDRESS);
    // fired once: the next creation answers 201 and makes a second order
    expect((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status).toBe(201);
    expect(sandbox.orders.list()).toHaveLength(2);
  });

  it('defaults to 503, and does not fire on a request that failed validation', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({ target: 'endpoint', endpoint: 'POST /orders/', kind: 'create_then_error' });
    const invalid = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ withdraw_address: 'not-an-address' }),
    });
    expect(invalid.status).toBe(400);
    expect(sandbox.orders.list()).toHaveLength(0);
    expect(sandbox.listFaults()[0]!.fired).toBe(0);
    expect((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status).toBe(503);
    expect(sandbox.orders.list()).toHaveLength(1);
  });

  it('refuses statuses other than 408, 500, 502, 503 and 504', async () => {
    const sandbox = await startTestSandbox();
    const refused = await call(sandbox.adminUrl, '/faults/', {
      key: null,
      body: { target: 'endpoint', endpoint: 'POST /orders/', kind: 'create_then_error', status: 501 },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('create_then_error status must be one of 408, 500, 502, 503, 504');
    expect(() =>
      sandbox.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'create_then_error',
        status: 404,
      }),
    ).toThrow();
  });

  it('follows probability from the seeded PRNG, replaying identically for one seed', async () => {
    const run = async (): Promise<number[]> => {
      const sandbox = await startTestSandbox({}, { seed: 42 });
      sandbox.injectFault({
        target: 'endpoint',
        endpoint: 'POST /orders/',
        kind: 'create_then_error',
        status: 502,
        probability: 0.5,
      });
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++)
        statuses.push((await call(sandbox.url, '/orders/', { body: btcToEthOrder() })).status);
      expect(sandbox.orders.list()).toHaveLength(8);
      return statuses;
    };
    const first = await run();
    expect(first).toContain(502);
    expect(first).toContain(201);
    expect(await run()).toEqual(first);
  });
});

describe('normalise_address_case', () => {
  it('stores and returns the withdraw and refund addresses lowercased by default', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'normalise_address_case',
      times: 1,
    });
    const created = await call(sandbox.url, '/orders/', {
      body: {
        deposit_currency: 'ETH',
        withdraw_currency: 'USDT',
        deposit_amount: '1',
        withdraw_address: EVM_ADDRESS,
        refund_address: EVM_ADDRESS,
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.withdraw_address).toBe(LOWER_EVM);
    expect(created.body.refund_address).toBe(LOWER_EVM);
    const detail = await call(sandbox.url, `/orders/${created.body.unique_reference}/`);
    expect(detail.body.withdraw_address).toBe(LOWER_EVM);
    expect(detail.body.refund_address).toBe(LOWER_EVM);
    // times: 1, so the next order keeps the case it was given
    expect((await createOrder(sandbox)).withdraw_address).toBe(EVM_ADDRESS);
  });

  it('can store EIP-55 checksum case or upper case instead', async () => {
    const sandbox = await startTestSandbox();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'normalise_address_case',
      addressCase: 'checksum',
      times: 1,
    });
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'normalise_address_case',
      addressCase: 'upper',
      skip: 1,
      times: 1,
    });
    expect((await createOrder(sandbox, { withdraw_address: LOWER_EVM })).withdraw_address).toBe(EVM_ADDRESS);
    expect((await createOrder(sandbox)).withdraw_address).toBe(`0x${EVM_ADDRESS.slice(2).toUpperCase()}`);
  });

  it('still reuses a DeFi order idempotently when the repeat carries the address as first submitted', async () => {
    const sandbox = await startTestSandbox();
    const quote = await call(sandbox.url, '/rate/?pairs=USDTETH&deposit_amount=1&actionable_quote=true', {
      key: demoKeys.defi,
    });
    const body = {
      deposit_currency: 'ETH',
      withdraw_currency: 'USDT',
      deposit_amount: '1',
      withdraw_address: EVM_ADDRESS,
      rate_id: quote.body[0].rate_id,
    };
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'normalise_address_case',
      times: 1,
    });
    const first = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(first.status).toBe(201);
    expect(first.body.withdraw_address).toBe(LOWER_EVM);
    const again = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(again.status).toBe(200);
    expect(again.body.unique_reference).toBe(first.body.unique_reference);
  });
});

describe('expired_on_repeat', () => {
  it("answers a DeFi repeat with rate_id '<id>' is invalid or expired. although the order exists", async () => {
    const sandbox = await startTestSandbox();
    const quote = await call(sandbox.url, '/rate/?pairs=USDTETH&deposit_amount=1&actionable_quote=true', {
      key: demoKeys.defi,
    });
    const rateId = quote.body[0].rate_id as string;
    const body = {
      deposit_currency: 'ETH',
      withdraw_currency: 'USDT',
      deposit_amount: '1',
      withdraw_address: EVM_ADDRESS,
      rate_id: rateId,
    };
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'POST /orders/',
      kind: 'expired_on_repeat',
      times: 1,
    });
    const first = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(first.status).toBe(201);
    // the first creation is not a repeat: the fault did not fire on it
    expect(sandbox.listFaults()[0]!.fired).toBe(0);
    const repeat = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(repeat.status).toBe(400);
    expect(repeat.body.detail).toBe(`rate_id '${rateId}' is invalid or expired.`);
    expect(repeat.body.errors.rate_id).toEqual([`rate_id '${rateId}' is invalid or expired.`]);
    expect(sandbox.orders.list()).toHaveLength(1);
    expect(sandbox.orders.get(first.body.unique_reference as string)).toBeDefined();
    // the fault fired once; the next repeat is the documented idempotent 200
    const third = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body });
    expect(third.status).toBe(200);
    expect(third.body.unique_reference).toBe(first.body.unique_reference);
  });
});

describe('get_other_order', () => {
  it("answers GET /orders/{ref}/ with the newest other order's representation", async () => {
    const sandbox = await startTestSandbox();
    const mine = await createOrder(sandbox);
    const other = await createOrder(sandbox, { deposit_amount: '0.2' });
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'get_other_order',
      times: 1,
    });
    const wrong = await call(sandbox.url, `/orders/${mine.unique_reference}/`);
    expect(wrong.status).toBe(200);
    expect(wrong.body.unique_reference).toBe(other.unique_reference);
    expect(wrong.body.deposit_amount).toBe('0.20000000');
    const right = await call(sandbox.url, `/orders/${mine.unique_reference}/`);
    expect(right.body.unique_reference).toBe(mine.unique_reference);
  });

  it('answers the order named by otherReference, and does not fire while no other order exists', async () => {
    const sandbox = await startTestSandbox();
    const first = await createOrder(sandbox);
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'get_other_order',
      times: 1,
    });
    expect((await call(sandbox.url, `/orders/${first.unique_reference}/`)).body.unique_reference).toBe(
      first.unique_reference,
    );
    expect(sandbox.listFaults()[0]!.fired).toBe(0);
    const second = await createOrder(sandbox);
    await createOrder(sandbox);
    sandbox.clearFaults();
    sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'get_other_order',
      otherReference: second.unique_reference,
      times: 1,
    });
    expect((await call(sandbox.url, `/orders/${first.unique_reference}/`)).body.unique_reference).toBe(
      second.unique_reference,
    );
  });
});
