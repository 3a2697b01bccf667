// Document sections "v1 Order (legacy representation)", "Legacy v1 endpoints" and "Versioning".
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import { call, createOrder, EVM_ADDRESS, startTestSandbox } from './helpers.ts';

describe('Legacy v1', () => {
  it('creates v1 orders (amount_base, pair_name, withdraw_address, order_type) in the v1 representation', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.v1Url, '/orders/', {
      key: null,
      body: { amount_base: '2.995', pair_name: 'ETHBTC', withdraw_address: EVM_ADDRESS, order_type: 1 },
    });
    expect(response.status).toBe(201);
    const order = response.body;
    expect(order).toMatchObject({
      order_type: 1,
      amount_base: '2.995000000000000000',
      amount_quote: '0.100000000000000000',
      status_name: [[11, 'INITIAL']],
      payment_window: 60,
      kyc_deadline: null,
      user_provided_amount: 1,
      withdraw_address: { type: 'W', address: EVM_ADDRESS, currency_code: 'ETH' },
      pair: { name: 'ETHBTC', base: { code: 'ETH' }, quote: { code: 'BTC' }, fee_ask: '0.00500000' },
      refund_address: null,
      referral_code: [],
      transactions: [],
    });
    expect(order.deposit_address.type).toBe('D');
    expect(new Date(order.payment_deadline).getTime() - new Date(order.created_on).getTime()).toBe(
      60 * 60_000,
    );
  });

  it('shares one order store: v1 orders are visible in v2 and v2 orders in v1', async () => {
    const sandbox = await startTestSandbox();
    const v1 = await call(sandbox.v1Url, '/orders/', {
      key: null,
      body: { amount_base: '2.995', pair_name: 'ETHBTC', withdraw_address: EVM_ADDRESS },
    });
    const inV2 = await call(sandbox.url, `/orders/${v1.body.unique_reference}/`);
    expect(inV2.body).toMatchObject({
      withdraw_amount: '2.99500000',
      deposit_amount: '0.10000000',
      status: 'INITIAL',
      side: 'BUY',
    });
    const v2 = await createOrder(sandbox);
    sandbox.advanceOrder(v2.unique_reference, 'released');
    const inV1 = await call(sandbox.v1Url, `/orders/${v2.unique_reference}/`, { key: null });
    expect(inV1.body.status_name).toEqual([[15, 'RELEASED']]);
    expect(inV1.body.transactions.map((t: { type: string }) => t.type)).toEqual(['D', 'W']);
    expect(inV1.body.transactions[1]).toMatchObject({
      tx_id: expect.any(String),
      currency: 'ETH',
      confirmations: 0,
    });
  });

  it('lists with page-number pagination: count, next, previous, results', async () => {
    const sandbox = await startTestSandbox({ orders: { v1PageSize: 2 } });
    for (let i = 0; i < 3; i++) await createOrder(sandbox);
    const first = await call(sandbox.v1Url, '/orders/', { key: null });
    expect(first.body.count).toBe(3);
    expect(first.body.results).toHaveLength(2);
    expect(first.body.previous).toBeNull();
    expect(new URL(first.body.next).searchParams.get('page')).toBe('2');
    const second = await call(sandbox.v1Url, '/orders/?page=2', { key: null });
    expect(second.body.results).toHaveLength(1);
    expect(second.body.next).toBeNull();
    expect(second.body.previous).not.toBeNull();
    expect((await call(sandbox.v1Url, '/orders/?page=9', { key: null })).status).toBe(404);
  });

  it('answers /info/bulk/, /get_price/{pair}/, /pair/ and /currency/ in v1 shapes', async () => {
    const sandbox = await startTestSandbox();
    const bulk = await call(sandbox.v1Url, '/info/bulk/', { key: null });
    expect(bulk.body.find((r: { pair: string }) => r.pair === 'ETHBTC')).toMatchObject({
      base: 'ETH',
      quote: 'BTC',
      max_amount: '5.00000000',
    });
    const price = await call(sandbox.v1Url, '/get_price/ETHBTC/?amount_quote=0.1', { key: null });
    expect(price.body).toMatchObject({ amount_quote: 0.1, amount_base: 2.995 });
    const pair = await call(sandbox.v1Url, '/pair/ETHBTC/', { key: null });
    expect(pair.body).toMatchObject({
      name: 'ETHBTC',
      base: { code: 'ETH' },
      quote: { code: 'BTC' },
      fee_ask: '0.00500000',
      test_mode: false,
    });
    expect((await call(sandbox.v1Url, '/currency/', { key: null })).body.length).toBeGreaterThan(1);
  });

  it('answers v1 validation errors in v1 bodies (fields at the top level, v1 names)', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.v1Url, '/orders/', {
      key: null,
      body: { amount_base: '99999', pair_name: 'ETHBTC', withdraw_address: EVM_ADDRESS },
    });
    expect(response.status).toBe(400);
    expect(response.body.amount_base[0]).toMatch(/less than or equal to/);
    const badAddress = await call(sandbox.v1Url, '/orders/', {
      key: null,
      body: { amount_base: '1', pair_name: 'ETHBTC', withdraw_address: 'nope' },
    });
    expect(badAddress.body.withdraw_address).toEqual(['nope has invalid characters for a valid value']);
  });

  it('issues OAuth2 tokens for the user-scoped /users/me and /user/me/orders', async () => {
    const sandbox = await startTestSandbox();
    const token = await call(sandbox.v1Url, '/oauth2/token', {
      key: null,
      rawBody: 'grant_type=password&username=demo-user&password=demo-password',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(token.status).toBe(200);
    const bearer = { Authorization: `Bearer ${token.body.access_token}` };
    expect((await call(sandbox.v1Url, '/users/me', { key: null, headers: bearer })).body.username).toBe(
      'demo-user',
    );
    await call(sandbox.v1Url, '/orders/', {
      key: null,
      headers: bearer,
      body: { amount_base: '1', pair_name: 'ETHBTC', withdraw_address: EVM_ADDRESS },
    });
    const mine = await call(sandbox.v1Url, '/user/me/orders', { key: null, headers: bearer });
    expect(mine.body.count).toBe(1);
    expect((await call(sandbox.v1Url, '/users/me', { key: null })).status).toBe(401);
  });

  it('has no OAuth2 endpoint in v2', async () => {
    const sandbox = await startTestSandbox();
    expect((await call(sandbox.url, '/oauth2/token', { body: { grant_type: 'password' } })).status).toBe(404);
  });
});
