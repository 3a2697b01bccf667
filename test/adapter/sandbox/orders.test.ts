// Document sections "POST /orders/", "GET /orders/", "GET/PATCH /orders/{unique_reference}/", "States and
// transitions", and the request-validation and quote error tables that apply to order creation.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-explicit-any -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { describe, expect, it } from 'vitest';
import {
  BTC_ADDRESS,
  btcToEthOrder,
  call,
  createOrder,
  demoKeys,
  EVM_ADDRESS,
  startTestSandbox,
} from './helpers.ts';

const V2_ORDER_FIELDS = [
  'unique_reference',
  'created_on',
  'side',
  'status',
  'deposit_amount',
  'withdraw_amount',
  'deposit_currency',
  'withdraw_currency',
  'deposit_address',
  'deposit_address_extra_id',
  'withdraw_address',
  'withdraw_address_extra_id',
  'refund_address',
  'refund_address_extra_id',
  'payment_window_minutes',
  'fixed_rate_deadline',
  'rate',
  'deposit_transaction',
  'withdraw_transaction',
  'refund_transaction',
];

describe('POST /orders/', () => {
  it('creates a CeFi order with 201 and the full v2 Order representation', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ refund_address: BTC_ADDRESS }),
    });
    expect(response.status).toBe(201);
    expect(Object.keys(response.body).sort()).toEqual([...V2_ORDER_FIELDS].sort());
    expect(response.body).toMatchObject({
      side: 'BUY',
      status: 'INITIAL',
      deposit_amount: '0.10000000',
      withdraw_amount: '2.99500000',
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      withdraw_address: EVM_ADDRESS,
      refund_address: BTC_ADDRESS,
      deposit_address_extra_id: '',
      deposit_transaction: '',
      payment_window_minutes: 60,
    });
    expect(response.body.deposit_address).toMatch(/^bc1/);
    expect(new Date(response.body.created_on).toISOString()).toBe(response.body.created_on);
  });

  it('computes the deposit from withdraw_amount when that is the amount given', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox, { deposit_amount: undefined, withdraw_amount: '2.995' });
    expect(order.deposit_amount).toBe('0.10000000');
  });

  it('accepts the currency object forms ({code, network} and {contract_address, network})', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', {
      body: {
        deposit_currency: { contract_address: null, network: 'ETH' },
        withdraw_currency: { contract_address: '0xdAC17F958D2ee523a2206206994597C13D831ec7', network: 'ETH' },
        deposit_amount: '1',
        withdraw_address: EVM_ADDRESS,
      },
    });
    expect(response.status).toBe(201);
    expect(response.body.withdraw_currency).toBe('USDT');
  });

  it('reports missing required fields with the exchange field messages', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', { body: {} });
    expect(response.status).toBe(400);
    expect(response.body.errors).toMatchObject({
      deposit_currency: ['This field is required.'],
      withdraw_currency: ['This field is required.'],
    });
  });

  it('answers malformed JSON and non-object bodies with 400, never a crash', async () => {
    const sandbox = await startTestSandbox();
    const bad = await call(sandbox.url, '/orders/', {
      rawBody: '{bad',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/^JSON parse error/);
    const list = await call(sandbox.url, '/orders/', { body: [1, 2] });
    expect(list.status).toBe(400);
    expect(list.text).toContain('Expected a dictionary, but got list.');
    const types = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ deposit_amount: {}, is_limit_order: 'maybe', side: 'UP' }),
    });
    expect(types.status).toBe(400);
    expect(types.body.errors).toMatchObject({
      deposit_amount: ['A valid number is required.'],
      is_limit_order: ['Must be a valid boolean.'],
      side: ['"UP" is not a valid choice.'],
    });
  });

  it('validates withdraw and refund addresses per currency format with real checksums', async () => {
    const sandbox = await startTestSandbox();
    const badChecksum = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
    const evm = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ withdraw_address: badChecksum }),
    });
    expect(evm.status).toBe(400);
    expect(evm.body.errors.withdraw_address).toEqual([
      `${badChecksum} has invalid characters for a valid value`,
    ]);
    const refund = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ refund_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5' }),
    });
    expect(refund.body.errors.refund_address[0]).toContain('has invalid characters for a valid value');
    // Chains sharing a format are not distinguished: an EVM address is fine for any EVM currency.
    const usdt = await call(sandbox.url, '/orders/', {
      body: {
        deposit_currency: 'ETH',
        withdraw_currency: 'USDT',
        deposit_amount: '1',
        withdraw_address: EVM_ADDRESS.toLowerCase(),
      },
    });
    expect(usdt.status).toBe(201);
  });

  it('enforces the amount bounds /rate/ reports', async () => {
    const sandbox = await startTestSandbox();
    const low = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ deposit_amount: '0.0001' }) });
    expect(low.status).toBe(400);
    expect(low.body.errors.deposit_amount).toEqual(['Ensure this value is greater than or equal to 0.001.']);
    const high = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ deposit_amount: '6' }) });
    expect(high.body.errors.deposit_amount).toEqual(['Ensure this value is less than or equal to 5.']);
    const highWithdraw = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ deposit_amount: undefined, withdraw_amount: '1000' }),
    });
    expect(highWithdraw.body.errors.withdraw_amount[0]).toMatch(/less than or equal to 149\.995/);
  });

  it('allows SELL only for fiat orders', async () => {
    const sandbox = await startTestSandbox();
    const crypto = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ side: 'SELL' }) });
    expect(crypto.status).toBe(400);
    expect(crypto.body.errors.side).toBeDefined();
    const fiat = await call(sandbox.url, '/orders/', {
      body: {
        deposit_currency: 'BTC',
        withdraw_currency: 'EUR',
        deposit_amount: '0.01',
        withdraw_address: 'DE89370400440532013000',
        side: 'SELL',
      },
    });
    expect(fiat.status).toBe(201);
    expect(fiat.body.side).toBe('SELL');
  });

  it('applies the limit-order rules: limit_ttl of at least 600 s and no rate_id', async () => {
    const sandbox = await startTestSandbox();
    const short = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ is_limit_order: true, limit_ttl: 599 }),
    });
    expect(short.status).toBe(400);
    expect(short.body.errors.limit_ttl).toEqual(['limit_ttl must be at least 600 seconds (10 minutes).']);
    const rateId = (await call(sandbox.url, '/rate/?pairs=ETHBTC')).body[0].rate_id;
    const withRate = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ is_limit_order: true, rate_id: rateId }),
    });
    expect(withRate.body.errors.rate_id).toEqual([
      'rate_id is not supported for limit orders. Remove rate_id when is_limit_order is true.',
    ]);
    const ok = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ is_limit_order: true }) });
    expect(ok.status).toBe(201);
    expect(ok.body.payment_window_minutes).toBe(24 * 60);
  });

  it('validates referral_code: at most 20 characters of [A-Za-z0-9_-]', async () => {
    const sandbox = await startTestSandbox();
    const long = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ referral_code: 'A'.repeat(21) }),
    });
    expect(long.status).toBe(400);
    expect(long.body.errors.referral_code).toEqual(['Ensure this field has no more than 20 characters.']);
    const chars = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ referral_code: 'bad code!' }),
    });
    expect(chars.status).toBe(400);
    expect(chars.body.errors.referral_code).toBeDefined();
  });

  it('applies markup exclusivity and the markup cap on orders too', async () => {
    const sandbox = await startTestSandbox({ limits: { markupCapBps: 300 } });
    const both = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ markup: 10, referral_rate: '0.001' }),
    });
    expect(both.text).toContain(
      'Provide either markup (basis points, preferred) or the legacy referral_rate (decimal fraction), not both.',
    );
    const capped = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ markup: 301 }) });
    expect(capped.text).toContain(
      'Must not exceed 300 basis points (absolute cap on dynamic referral rates).',
    );
    const referralRate = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ referral_rate: '0.001' }),
    });
    expect(referralRate.text).toContain('referral_rate is not allowed for this referral code');
  });

  it('binds a CeFi order to a rate_id and folds an expired one into "Pair <name> is temporarily unavailable."', async () => {
    const sandbox = await startTestSandbox({ quotes: { ttlSeconds: 30 } });
    const rateId = (await call(sandbox.url, '/rate/?pairs=ETHBTC&markup=50')).body[0].rate_id;
    const bound = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ rate_id: rateId, markup: 50 }),
    });
    expect(bound.status).toBe(201);
    expect(bound.body.rate).toBe('29.85000000');
    sandbox.advanceClock(31_000);
    const expired = await call(sandbox.url, '/orders/', { body: btcToEthOrder({ rate_id: rateId }) });
    expect(expired.status).toBe(400);
    expect(expired.text).toContain('Pair ETHBTC is temporarily unavailable.');
  });

  it('accepts JSON numbers for amounts without float noise', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox, { deposit_amount: 0.1 });
    expect(order.deposit_amount).toBe('0.10000000');
    expect(order.withdraw_amount).toBe('2.99500000');
  });

  it('does not let a CeFi fixed-rate key use a rate_id quoted for a floating CeFi key', async () => {
    const sandbox = await startTestSandbox();
    const rateId = (await call(sandbox.url, '/rate/?pairs=ETHBTC')).body[0].rate_id;
    const response = await call(sandbox.url, '/orders/', {
      key: demoKeys.cefiFixed,
      body: btcToEthOrder({ rate_id: rateId }),
    });
    expect(response.status).toBe(400);
    expect(response.text).toContain('Pair ETHBTC is temporarily unavailable.');
    const own = (await call(sandbox.url, '/rate/?pairs=ETHBTC', { key: demoKeys.cefiFixed })).body[0].rate_id;
    expect(
      (
        await call(sandbox.url, '/orders/', {
          key: demoKeys.cefiFixed,
          body: btcToEthOrder({ rate_id: own }),
        })
      ).status,
    ).toBe(201);
  });

  it('refuses a rate_id whose promised markup no longer matches', async () => {
    const sandbox = await startTestSandbox();
    const rateId = (await call(sandbox.url, '/rate/?pairs=ETHBTC&markup=50')).body[0].rate_id;
    const response = await call(sandbox.url, '/orders/', {
      body: btcToEthOrder({ rate_id: rateId, markup: 60 }),
    });
    expect(response.status).toBe(400);
    expect(response.text).toContain(
      'Promised applied referral rate no longer matches current partner limits; request a new quote (rate_id).',
    );
  });
});

describe('POST /orders/ on DeFi keys', () => {
  async function actionableQuote(sandbox: { url: string }, pair = 'USDTETH', amount = '1'): Promise<string> {
    const response = await call(
      sandbox.url,
      `/rate/?pairs=${pair}&deposit_amount=${amount}&actionable_quote=true`,
      { key: demoKeys.defi },
    );
    expect(response.status).toBe(200);
    return response.body[0].rate_id as string;
  }
  const defiBody = (extra: Record<string, unknown> = {}) => ({
    deposit_currency: 'ETH',
    withdraw_currency: 'USDT',
    deposit_amount: '1',
    withdraw_address: EVM_ADDRESS,
    ...extra,
  });

  it('creates with 201 and reuses the order idempotently with 200 for the same rate_id', async () => {
    const sandbox = await startTestSandbox();
    const rateId = await actionableQuote(sandbox);
    const first = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: defiBody({ rate_id: rateId }),
    });
    expect(first.status).toBe(201);
    const again = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: defiBody({ rate_id: rateId }),
    });
    expect(again.status).toBe(200);
    expect(again.body.unique_reference).toBe(first.body.unique_reference);
  });

  it("answers an unknown rate_id with rate_id '<id>' is invalid or expired.", async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: defiBody({ rate_id: 'abc123' }),
    });
    expect(response.status).toBe(400);
    expect(response.text).toContain("rate_id 'abc123' is invalid or expired.");
  });

  it('answers an expired DeFi quote with the quote-expired message', async () => {
    const sandbox = await startTestSandbox({ quotes: { ttlSeconds: 10 } });
    const rateId = await actionableQuote(sandbox);
    sandbox.advanceClock(11_000);
    const response = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: defiBody({ rate_id: rateId }),
    });
    expect(response.text).toContain('The quote for this rate_id has expired. Please request a new rate.');
  });

  it('refuses a non-actionable quote for a DeFi fixed-rate order', async () => {
    const sandbox = await startTestSandbox();
    const indicative = (
      await call(sandbox.url, '/rate/?pairs=USDTETH&deposit_amount=1', { key: demoKeys.defi })
    ).body[0].rate_id;
    const response = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: defiBody({ rate_id: indicative }),
    });
    expect(response.text).toContain('The provided fixed-rate rate_id is non-actionable for this route.');
  });

  it('requires deposit_amount for cross-chain fixed-rate orders', async () => {
    const sandbox = await startTestSandbox();
    const response = await call(sandbox.url, '/orders/', {
      key: demoKeys.defi,
      body: {
        deposit_currency: 'BTC',
        withdraw_currency: 'ETH',
        withdraw_amount: '1',
        withdraw_address: EVM_ADDRESS,
      },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors.deposit_amount).toEqual([
      'Deposit amount (amount_quote) is required for cross-chain fixed-rate',
    ]);
  });

  it('produces a quote itself when no rate_id is given, taking the configured time', async () => {
    const sandbox = await startTestSandbox({ quotes: { actionableDelayMs: 200 } });
    const started = Date.now();
    const response = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody() });
    expect(response.status).toBe(201);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('keeps DeFi orders out of the order list (CeFi orders only)', async () => {
    const sandbox = await startTestSandbox();
    const defi = await call(sandbox.url, '/orders/', { key: demoKeys.defi, body: defiBody() });
    const cefi = await createOrder(sandbox);
    const list = await call(sandbox.url, '/orders/');
    const refs = list.body.results.map((o: { unique_reference: string }) => o.unique_reference);
    expect(refs).toContain(cefi.unique_reference);
    expect(refs).not.toContain(defi.body.unique_reference);
  });
});

describe('GET /orders/ and GET /orders/{unique_reference}/', () => {
  it('pages with pagination.next / pagination.previous cursors and no total count', async () => {
    const sandbox = await startTestSandbox({ orders: { v2PageSize: 2 } });
    const created = [];
    for (let i = 0; i < 5; i++) created.push((await createOrder(sandbox)).unique_reference);
    const first = await call(sandbox.url, '/orders/');
    expect(Object.keys(first.body).sort()).toEqual(['pagination', 'results']);
    expect(first.body.pagination.previous).toBeNull();
    expect(first.body.results.map((o: any) => o.unique_reference)).toEqual([created[4], created[3]]);
    const nextPath =
      new URL(first.body.pagination.next).pathname + new URL(first.body.pagination.next).search;
    const second = await call(new URL(sandbox.url).origin, nextPath);
    expect(second.body.results.map((o: any) => o.unique_reference)).toEqual([created[2], created[1]]);
    const third = await call(
      new URL(sandbox.url).origin,
      new URL(second.body.pagination.next).pathname + new URL(second.body.pagination.next).search,
    );
    expect(third.body.results.map((o: any) => o.unique_reference)).toEqual([created[0]]);
    expect(third.body.pagination.next).toBeNull();
    const back = await call(
      new URL(sandbox.url).origin,
      new URL(third.body.pagination.previous).pathname + new URL(third.body.pagination.previous).search,
    );
    expect(back.body.results.map((o: any) => o.unique_reference)).toEqual([created[2], created[1]]);
  });

  it('filters by the numeric status code', async () => {
    const sandbox = await startTestSandbox();
    const done = await createOrder(sandbox);
    await createOrder(sandbox);
    sandbox.advanceOrder(done.unique_reference, 'completed');
    const completed = await call(sandbox.url, '/orders/?status=16');
    expect(completed.body.results.map((o: any) => o.unique_reference)).toEqual([done.unique_reference]);
    expect((await call(sandbox.url, '/orders/?status=11')).body.results).toHaveLength(1);
    const bad = await call(sandbox.url, '/orders/?status=PAID');
    expect(bad.status).toBe(400);
    expect(bad.body.errors.status).toBeDefined();
  });

  it("lists only the orders of the key owner's partner", async () => {
    const sandbox = await startTestSandbox();
    await createOrder(sandbox);
    expect(
      (await call(sandbox.url, '/orders/', { key: demoKeys.otherPartnerCefi })).body.results,
    ).toHaveLength(0);
  });

  it('answers the order detail, and 404 for unknown references', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    const detail = await call(sandbox.url, `/orders/${order.unique_reference}/`);
    expect(detail.body).toEqual(order);
    expect((await call(sandbox.url, '/orders/NOPE/')).status).toBe(404);
  });
});

describe('PATCH /orders/{unique_reference}/', () => {
  it('records deposit_transaction and answers a known hash with the idempotent-conflict message', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    const hash = 'a'.repeat(64);
    const patched = await call(sandbox.url, `/orders/${order.unique_reference}/`, {
      method: 'PATCH',
      body: { deposit_transaction: hash },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.deposit_transaction).toBe(hash);
    const again = await call(sandbox.url, `/orders/${order.unique_reference}/`, {
      method: 'PATCH',
      body: { deposit_transaction: hash },
    });
    expect(again.status).toBe(400);
    expect(again.text).toContain(`External deposit notification with tx_id ${hash}already exists`);
  });

  it('answers a hash already recorded on another order with the same "already exists" error', async () => {
    const sandbox = await startTestSandbox();
    const first = await createOrder(sandbox);
    const second = await createOrder(sandbox);
    const hash = 'b'.repeat(64);
    const recorded = await call(sandbox.url, `/orders/${first.unique_reference}/`, {
      method: 'PATCH',
      body: { deposit_transaction: hash },
    });
    expect(recorded.status).toBe(200);
    for (const submitted of [hash, hash.toUpperCase()]) {
      const elsewhere = await call(sandbox.url, `/orders/${second.unique_reference}/`, {
        method: 'PATCH',
        body: { deposit_transaction: submitted },
      });
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.detail).toBe(
        `External deposit notification with tx_id ${submitted}already exists`,
      );
      expect(elsewhere.body.errors.deposit_transaction).toEqual([elsewhere.body.detail]);
    }
    // the second order did not take the hash
    expect((await call(sandbox.url, `/orders/${second.unique_reference}/`)).body.deposit_transaction).toBe(
      '',
    );
    // a hash the exchange saw on chain itself (deposit seen, no PATCH) conflicts the same way
    const third = await createOrder(sandbox);
    sandbox.advanceOrder(second.unique_reference, 'deposit_seen');
    const minted = sandbox.orders.get(second.unique_reference)!.order['deposit_transaction'] as string;
    expect(minted).not.toBe('');
    const conflict = await call(sandbox.url, `/orders/${third.unique_reference}/`, {
      method: 'PATCH',
      body: { deposit_transaction: minted },
    });
    expect(conflict.status).toBe(400);
    expect(conflict.text).toContain(`External deposit notification with tx_id ${minted}already exists`);
  });

  it('sets referral_code with the same constraints and ownership rule as creation', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    const path = `/orders/${order.unique_reference}/`;
    expect((await call(sandbox.url, path, { method: 'PATCH', body: { referral_code: 'DEMO' } })).status).toBe(
      200,
    );
    expect(
      (await call(sandbox.url, path, { method: 'PATCH', body: { referral_code: 'OTHER' } })).status,
    ).toBe(401);
    expect(
      (await call(sandbox.url, path, { method: 'PATCH', body: { referral_code: 'no spaces' } })).status,
    ).toBe(400);
  });
});

describe('States and transitions', () => {
  it('walks INITIAL -> UNCONFIRMED PAYMENT -> PAID -> PRE-RELEASE -> RELEASED -> COMPLETED', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    const seen = [];
    for (const step of ['deposit_seen', 'confirmed', 'pre_release', 'released', 'completed'] as const) {
      sandbox.advanceOrder(order.unique_reference, step);
      seen.push((await call(sandbox.url, `/orders/${order.unique_reference}/`)).body.status);
    }
    expect(seen).toEqual(['UNCONFIRMED PAYMENT', 'PAID', 'PRE-RELEASE', 'RELEASED', 'COMPLETED']);
    const final = (await call(sandbox.url, `/orders/${order.unique_reference}/`)).body;
    expect(final.deposit_transaction).not.toBe('');
    expect(final.withdraw_transaction).not.toBe('');
  });

  it('refunds from PAID and never goes back', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'confirmed');
    sandbox.advanceOrder(order.unique_reference, 'refunded');
    const refunded = (await call(sandbox.url, `/orders/${order.unique_reference}/`)).body;
    expect(refunded.status).toBe('REFUNDED');
    expect(refunded.refund_transaction).not.toBe('');
    expect(() => sandbox.advanceOrder(order.unique_reference, 'completed')).toThrow(/never goes back/);
  });

  it('cancels INITIAL orders when the payment window lapses on the sandbox clock', async () => {
    const sandbox = await startTestSandbox({ orders: { paymentWindowMinutes: 30 } });
    const order = await createOrder(sandbox);
    sandbox.advanceClock(29 * 60_000);
    expect((await call(sandbox.url, `/orders/${order.unique_reference}/`)).body.status).toBe('INITIAL');
    sandbox.advanceClock(2 * 60_000);
    expect((await call(sandbox.url, `/orders/${order.unique_reference}/`)).body.status).toBe('CANCELED');
  });

  it('refuses to cancel an order once paid', async () => {
    const sandbox = await startTestSandbox();
    const order = await createOrder(sandbox);
    sandbox.advanceOrder(order.unique_reference, 'confirmed');
    expect(() => sandbox.advanceOrder(order.unique_reference, 'canceled')).toThrow();
    sandbox.advanceClock(3 * 60 * 60_000);
    expect((await call(sandbox.url, `/orders/${order.unique_reference}/`)).body.status).toBe('PAID');
  });
});
