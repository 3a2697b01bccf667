// The client over undici's MockAgent (net connect disabled): what the sandbox cannot produce on demand
// (lost connections, slow answers, malformed bodies) and the header/credential contract of every endpoint.
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ExchangeError, toExchangeFailure } from '../../../src/exchange/errors.ts';
import type { ExchangeLogger } from '../../../src/exchange/transport.ts';
import { documentedErrors } from '../../support/exchange/documented-errors.ts';
import {
  RecordingBudget,
  mockExchange,
  mockedClient,
  orderFixture,
  rateFixture,
  referralToken,
  secrets,
  spanRecorder,
  type MockExchange,
} from '../../support/exchange/mock-exchange.ts';

let exchange: MockExchange;
afterEach(async () => {
  await exchange.agent.close();
});

function fresh(): MockExchange {
  exchange = mockExchange();
  return exchange;
}

async function failure(promise: Promise<unknown>): Promise<ExchangeError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ExchangeError) return err;
    throw err;
  }
  throw new Error('expected an ExchangeError');
}

describe('X-User-Timezone and per-mode referral tokens', () => {
  it('drops a timezone the exchange could not use, with a warning, and still sends the request', async () => {
    const ex = fresh();
    for (let i = 0; i < 4; i++) ex.reply('GET', '/orders/X/', 200, orderFixture({ unique_reference: 'X' }));
    const warnings: Record<string, unknown>[] = [];
    const logger: ExchangeLogger = { debug: () => undefined, warn: (fields) => warnings.push(fields) };
    const client = mockedClient(ex, { logger });
    for (const odd of ['Berlin\r\nX-Evil: 1', 'GMT +02:00 (Europe/)', 'GMT +02:00 (Mars/Olympus_Mons)']) {
      expect(
        (await client.getOrder('cefi', { uniqueReference: 'X' }, { userTimezone: odd })).uniqueReference,
      ).toBe('X');
    }
    await client.getOrder(
      'cefi',
      { uniqueReference: 'X' },
      { userTimezone: 'GMT -03:00 (America/Argentina/Buenos_Aires)' },
    );
    expect(ex.requests.map((r) => r.headers['x-user-timezone'])).toEqual([
      undefined,
      undefined,
      undefined,
      'GMT -03:00 (America/Argentina/Buenos_Aires)',
    ]);
    expect(warnings).toHaveLength(3);
    expect(warnings[2]).toMatchObject({ problem: '"Mars/Olympus_Mons" is not a known IANA timezone name' });
  });

  it("sends each mode's own referral token, and the shared one for a mode without its own", async () => {
    const ex = fresh();
    for (let i = 0; i < 3; i++) ex.reply('GET', '/pair/', 200, []);
    const client = mockedClient(ex, {
      referralToken: 'shared-token-0001',
      referralTokens: { cefi: 'cefi-token-0002', defi: '' },
    });
    await client.listPairs('cefi');
    await client.listPairs('defi');
    await client.listPairs('cefi_fixed');
    expect(ex.requests.map((r) => r.headers['x-referral-token'])).toEqual([
      'cefi-token-0002',
      'shared-token-0001',
      'shared-token-0001',
    ]);
  });
});

describe('every v2 endpoint over HTTP', () => {
  it('lists and reads currencies and networks, tolerating any record fields', async () => {
    const ex = fresh();
    ex.reply('GET', '/currency/', 200, [{ code: 'BTC', name: 'Bitcoin', whatever: { nested: true } }]);
    ex.reply('GET', '/currency/BTC/', 200, { code: 'BTC' });
    ex.reply('GET', '/network/', 200, [{ name: 'ETH' }]);
    ex.reply('GET', '/network/ETH/', 200, { name: 'ETH', chain_id: 1 });
    const client = mockedClient(ex);
    expect(await client.listCurrencies('cefi')).toEqual([
      { code: 'BTC', name: 'Bitcoin', whatever: { nested: true } },
    ]);
    expect(await client.getCurrency('cefi', { code: 'BTC' })).toEqual({ code: 'BTC' });
    expect(await client.listNetworks('defi')).toEqual([{ name: 'ETH' }]);
    expect(await client.getNetwork('defi', { name: 'ETH' })).toEqual({ name: 'ETH', chain_id: 1 });
  });

  it('lists pairs, reads one and draws a random one', async () => {
    const ex = fresh();
    const pair = { name: 'ETHBTC', from: 'BTC', to: 'ETH', disabled: false, extra_field: 1 };
    ex.reply('GET', '/pair/', 200, [pair]);
    ex.reply('GET', '/pair/ETHBTC/', 200, pair);
    ex.reply('GET', '/pair/random/', 200, { name: 'LTCBTC', anything: 'else' });
    const client = mockedClient(ex);
    expect(await client.listPairs('cefi')).toEqual([
      { name: 'ETHBTC', from: 'BTC', to: 'ETH', disabled: false },
    ]);
    expect((await client.getPair('cefi', { name: 'ETHBTC' })).name).toBe('ETHBTC');
    expect((await client.getRandomPair('cefi')).name).toBe('LTCBTC');
  });

  it('surfaces the 417 of an exhausted random pair draw as a backoff failure', async () => {
    const ex = fresh();
    ex.reply('GET', '/pair/random/', 417, '');
    const err = await failure(mockedClient(ex).getRandomPair('cefi'));
    expect(err).toMatchObject({ code: 'http_417', action: 'backoff', httpStatus: 417 });
  });

  it('sends every /rate/ query parameter and keeps amounts as decimal strings', async () => {
    const ex = fresh();
    ex.reply('GET', (p) => p.startsWith('/rate/?'), 200, [
      rateFixture({ withdraw_amount: '1.10000000', eta: { minutes: 5 } }),
    ]);
    const rates = await mockedClient(ex).getRates('defi', {
      pairs: 'ETHBTC',
      deposit_amount: '0.10000000',
      include_eta: true,
      actionable_quote: true,
      markup: 25,
      from_contract_address: '',
      from_network: 'BTC',
      to_contract_address: '0xdac17f958d2ee523a2206206994597c13d831ec7',
      to_network: 'ETH',
      fiat_only: false,
      crypto_only: true,
    });
    const query = new URL(`http://x${ex.requests[0]?.path ?? ''}`).searchParams;
    expect(Object.fromEntries(query)).toEqual({
      pairs: 'ETHBTC',
      deposit_amount: '0.10000000',
      include_eta: 'true',
      actionable_quote: 'true',
      markup: '25',
      from_contract_address: '',
      from_network: 'BTC',
      to_contract_address: '0xdac17f958d2ee523a2206206994597c13d831ec7',
      to_network: 'ETH',
      fiat_only: 'false',
      crypto_only: 'true',
    });
    expect(rates[0]).toMatchObject({
      rate: '12.34567890',
      withdraw_amount: '1.10000000',
      eta: { minutes: 5 },
    });
    expect(typeof rates[0]?.min_deposit_amount).toBe('string');
  });

  it('sends the legacy referral_rate as a decimal fraction', async () => {
    const ex = fresh();
    ex.reply('GET', '/rate/?pairs=ETHBTC&referral_rate=0.005', 200, [rateFixture()]);
    await mockedClient(ex).getRates('cefi', { pairs: 'ETHBTC', referral_rate: '0.005' });
    expect(ex.requests).toHaveLength(1);
  });

  it('creates an order (201) with the mode key and tells a reused DeFi order (200) apart', async () => {
    const ex = fresh();
    ex.reply('POST', '/orders/', 201, orderFixture());
    ex.reply('POST', '/orders/', 200, orderFixture({ unique_reference: 'REUSED1' }));
    const client = mockedClient(ex);
    const params = {
      deposit_currency: 'BTC',
      withdraw_currency: 'ETH',
      deposit_amount: '0.10000000',
      withdraw_address: '0xwithdraw',
      rate_id: 'rate_abc',
      referral_code: 'partner_1',
    };
    const created = await client.createOrder('defi', params, { userTimezone: 'GMT +02:00 (Europe/Berlin)' });
    expect(created.reused).toBe(false);
    expect(created.order).toMatchObject({
      uniqueReference: 'ORD123ABC',
      depositAmount: '0.10000000',
      paymentWindowMinutes: 60,
    });
    const reused = await client.createOrder('defi', params);
    expect(reused).toMatchObject({ reused: true, order: { uniqueReference: 'REUSED1' } });
    const first = ex.requests[0];
    expect(first?.headers['authorization']).toBe(`ApiKey ${secrets.defi}`);
    expect(first?.headers['x-referral-token']).toBe(referralToken);
    expect(first?.headers['x-user-timezone']).toBe('GMT +02:00 (Europe/Berlin)');
    expect(first?.headers['content-type']).toBe('application/json');
    expect(first?.headers['accept']).toBe('application/json');
    expect(JSON.parse(first?.body ?? '{}')).toEqual(params);
    expect(ex.requests[1]?.headers['x-user-timezone']).toBeUndefined();
  });

  it('creates a limit order with a ttl and no rate_id, and accepts contract-address currencies', async () => {
    const ex = fresh();
    ex.reply(
      'POST',
      '/orders/',
      201,
      orderFixture({
        deposit_currency: { contract_address: null, network: 'BTC' },
        withdraw_currency: { code: 'USDT', network: 'ETH' },
      }),
    );
    const { order } = await mockedClient(ex).createOrder('cefi', {
      deposit_currency: { contract_address: null, network: 'BTC' },
      withdraw_currency: 'USDT',
      withdraw_amount: '100.00000000',
      withdraw_address: '0xabc',
      is_limit_order: true,
      limit_ttl: 600,
    });
    expect(order.depositCurrency).toBe('BTC');
    expect(order.withdrawCurrency).toBe('USDT');
  });

  it('lists orders with the numeric status filter and follows the cursor', async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/?status=13', 200, {
      results: [orderFixture({ status: 'PAID' })],
      pagination: { next: 'http://exchange.test/en/api/v2/orders/?cursor=cD0y&status=13', previous: null },
    });
    ex.reply('GET', '/orders/?cursor=cD0y&status=13', 200, {
      results: [],
      pagination: { next: null, previous: 'cD0x' },
    });
    ex.reply('GET', '/orders/?cursor=cD0x', 200, {
      results: [orderFixture()],
      pagination: { next: null, previous: null },
    });
    const client = mockedClient(ex);
    const page = await client.listOrders('cefi', { status: 'PAID' });
    expect(page.results.map((o) => o.status)).toEqual(['PAID']);
    expect(page.next).toContain('cursor=cD0y');
    const second = await client.listOrders('cefi', { cursor: page.next ?? '' });
    expect(second).toEqual({ results: [], next: null, previous: 'cD0x' });
    const third = await client.listOrders('cefi', { cursor: 'cD0x' });
    expect(third.results).toHaveLength(1);
    expect(ex.requests[0]?.headers['authorization']).toBe(`ApiKey ${secrets.cefi}`);
  });

  it('follows a pagination link on another origin at its own base URL, never sending the key there', async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/?cursor=x', 200, {
      results: [orderFixture()],
      pagination: { next: null, previous: null },
    });
    // An exchange behind a proxy builds its links from the address it was reached at (here another host and path).
    const page = await mockedClient(ex).listOrders('cefi', {
      cursor: 'http://internal-name:8000/api/v2/orders/?cursor=x',
    });
    expect(page.results).toHaveLength(1);
    expect(ex.requests).toHaveLength(1);
    // Intercepted on the exchange's own origin (the mock allows no other connection), with the link's cursor.
    expect(ex.requests[0]?.path).toBe('/orders/?cursor=x');
    expect(ex.requests[0]?.headers['authorization']).toBe(`ApiKey ${secrets.cefi}`);
  });

  it('reads one order and patches its referral code', async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/ORD123ABC/', 200, orderFixture({ status: 'PAID', unknown_new_field: 'x' }));
    ex.reply('PATCH', '/orders/ORD123ABC/', 200, orderFixture());
    const client = mockedClient(ex);
    expect((await client.getOrder('cefi_fixed', { uniqueReference: 'ORD123ABC' })).status).toBe('PAID');
    expect(ex.requests[0]?.headers['authorization']).toBe(`ApiKey ${secrets.cefi_fixed}`);
    const updated = await client.updateOrder('cefi', {
      uniqueReference: 'ORD123ABC',
      referral_code: 'partner-2',
    });
    expect(updated.order?.uniqueReference).toBe('ORD123ABC');
    expect(JSON.parse(ex.requests[1]?.body ?? '{}')).toEqual({ referral_code: 'partner-2' });
  });

  it('submits a deposit transaction and counts "already exists" as success', async () => {
    const ex = fresh();
    ex.reply('PATCH', '/orders/ORD123ABC/', 200, orderFixture({ deposit_transaction: '0xhash' }));
    ex.reply('PATCH', '/orders/ORD123ABC/', 400, {
      errors: { deposit_transaction: ['External deposit notification with tx_id 0xhashalready exists'] },
    });
    const client = mockedClient(ex);
    const first = await client.submitDepositTransaction('defi', {
      uniqueReference: 'ORD123ABC',
      depositTransaction: '0xhash',
    });
    expect(first).toMatchObject({ alreadyRecorded: false, order: { depositTransaction: '0xhash' } });
    const again = await client.submitDepositTransaction('defi', {
      uniqueReference: 'ORD123ABC',
      depositTransaction: '0xhash',
    });
    expect(again).toEqual({ alreadyRecorded: true, order: undefined });
    expect(JSON.parse(ex.requests[0]?.body ?? '{}')).toEqual({ deposit_transaction: '0xhash' });
  });

  it('pre-screens with the referral token; a compliance rejection is a result, not an error', async () => {
    const ex = fresh();
    ex.reply('POST', '/pre_screening/', 200, { status: 'success', message: '' });
    ex.reply('POST', '/pre_screening/', 200, { status: 'failed', message: 'Address is sanctioned.' });
    const client = mockedClient(ex);
    const body = { ip: '203.0.113.7', pair: 'ETHBTC', deposit_amount: '0.5' };
    expect(await client.preScreen('cefi', body)).toEqual({ status: 'success', message: '' });
    expect(await client.preScreen('cefi', body)).toEqual({
      status: 'failed',
      message: 'Address is sanctioned.',
    });
    expect(ex.requests[0]?.headers['x-referral-token']).toBe(referralToken);
  });

  it('accepts GET /rate/ on the referral token alone when the mode has no key', async () => {
    const ex = fresh();
    ex.reply('GET', '/rate/?pairs=ETHBTC', 200, [rateFixture()]);
    const client = mockedClient(ex, { credentials: {} });
    await client.getRates('cefi', { pairs: 'ETHBTC' });
    expect(ex.requests[0]?.headers['authorization']).toBeUndefined();
    expect(ex.requests[0]?.headers['x-referral-token']).toBe(referralToken);
    const err = await failure(client.getOrder('cefi', { uniqueReference: 'X' }));
    expect(err.code).toBe('credentials_missing_for_mode');
  });
});

describe('every documented error message, replayed over HTTP', () => {
  const endpoints = {
    rate: {
      method: 'GET',
      path: '/rate/?pairs=ETHBTC',
      call: (c: ReturnType<typeof mockedClient>) => c.getRates('defi', { pairs: 'ETHBTC' }),
    },
    orders: {
      method: 'POST',
      path: '/orders/',
      call: (c: ReturnType<typeof mockedClient>) =>
        c.createOrder('defi', {
          deposit_currency: 'BTC',
          withdraw_currency: 'ETH',
          deposit_amount: '0.1',
          withdraw_address: '0xa',
          rate_id: 'r1',
        }),
    },
    patch: {
      method: 'PATCH',
      path: '/orders/ORD1/',
      call: (c: ReturnType<typeof mockedClient>) =>
        c.updateOrder('cefi', { uniqueReference: 'ORD1', referral_code: 'p1' }),
    },
    pre_screening: {
      method: 'POST',
      path: '/pre_screening/',
      call: (c: ReturnType<typeof mockedClient>) =>
        c.preScreen('cefi', { ip: '203.0.113.1', pair: 'ETHBTC', withdraw_amount: '1' }),
    },
    any: { method: 'GET', path: '/pair/', call: (c: ReturnType<typeof mockedClient>) => c.listPairs('cefi') },
  } as const;

  it.each(documentedErrors.map((example) => [example.code, example] as const))(
    'classifies "%s"',
    async (_code, example) => {
      const ex = fresh();
      const endpoint = endpoints[example.where];
      // a GET that is throttled is retried after the budget's back-off: answer every attempt the same way
      ex.reply(endpoint.method, endpoint.path, example.status, example.body, {
        headers: example.headers ?? {},
        times: 3,
      });
      const budget = new RecordingBudget();
      const client = mockedClient(ex, { budget });
      const err = await failure(endpoint.call(client));
      expect(err).toMatchObject({ code: example.code, action: example.action, httpStatus: example.status });
      expect(err.retryAfterMs).toBe(example.retryAfterMs);
      expect(toExchangeFailure(err)).toMatchObject({
        kind: 'exchange_failure',
        code: example.code,
        action: example.action,
      });
      // only the global throttle makes every replica back off the key (once per throttled attempt)
      if (example.code === 'throttled')
        expect(budget.penalties[0]).toEqual({ key: client.budgetKey('cefi'), retryAfterMs: 3000 });
      else expect(budget.penalties).toEqual([]);
    },
  );

  it('falls back on the HTTP status for an unknown message', async () => {
    const ex = fresh();
    ex.reply('GET', '/pair/ETHBTC/', 404, { detail: 'Not found.' });
    ex.reply('POST', '/orders/', 403, { detail: 'You do not have permission.' });
    const client = mockedClient(ex);
    expect(await failure(client.getPair('cefi', { name: 'ETHBTC' }))).toMatchObject({
      code: 'http_404',
      action: 'fatal',
    });
    const err = await failure(
      client.createOrder('cefi', {
        deposit_currency: 'BTC',
        withdraw_currency: 'ETH',
        withdraw_amount: '1',
        withdraw_address: '0xa',
      }),
    );
    expect(err).toMatchObject({ code: 'http_403', action: 'fatal', httpStatus: 403 });
  });
});

describe('refused before a request is spent', () => {
  const order = {
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    withdraw_amount: '1.0',
    withdraw_address: '0xa',
  };
  it.each([
    [
      'markup with referral_rate',
      { ...order, markup: 10, referral_rate: '0.01' },
      'markup_and_referral_rate',
    ],
    [
      'a referral code over 20 characters',
      { ...order, referral_code: 'a'.repeat(21) },
      'referral_code_invalid',
    ],
    ['a referral code off its pattern', { ...order, referral_code: 'bad code!' }, 'referral_code_invalid'],
    ['limit_ttl under 600', { ...order, is_limit_order: true, limit_ttl: 599 }, 'limit_ttl_too_short'],
    ['rate_id on a limit order', { ...order, is_limit_order: true, rate_id: 'r1' }, 'rate_id_on_limit_order'],
    ['SELL on a crypto pair', { ...order, side: 'SELL' as const }, 'sell_on_crypto_pair'],
    ['an amount given as a number', { ...order, withdraw_amount: 1 as unknown as string }, 'invalid_request'],
  ])('refuses %s', async (_what, params, code) => {
    const ex = fresh();
    const budget = new RecordingBudget();
    const err = await failure(mockedClient(ex, { budget }).createOrder('cefi', params));
    expect(err).toMatchObject({ code, action: 'fatal' });
    expect(ex.requests).toHaveLength(0);
    expect(budget.acquired).toHaveLength(0);
  });

  it('allows SELL on a fiat pair in CeFi but never in DeFi', async () => {
    const ex = fresh();
    ex.reply('POST', '/orders/', 201, orderFixture({ side: 'SELL' }));
    const client = mockedClient(ex);
    const sell = {
      deposit_currency: 'BTC',
      withdraw_currency: 'EUR',
      deposit_amount: '0.1',
      withdraw_address: 'IBAN',
      side: 'SELL' as const,
    };
    expect((await client.createOrder('cefi', sell)).order.side).toBe('SELL');
    expect((await failure(client.createOrder('defi', sell))).code).toBe('sell_on_crypto_pair');
  });

  it('refuses markup with referral_rate on /rate/, and pre-screening without a token or with two amounts', async () => {
    const ex = fresh();
    const client = mockedClient(ex);
    expect((await failure(client.getRates('cefi', { markup: 5, referral_rate: '0.01' }))).code).toBe(
      'markup_and_referral_rate',
    );
    const both = { ip: '1.2.3.4', pair: 'ETHBTC', deposit_amount: '1', withdraw_amount: '2' };
    expect((await failure(client.preScreen('cefi', both))).code).toBe('pre_screening_amounts_exclusive');
    const noToken = mockedClient(ex, { referralToken: '' });
    expect(
      (await failure(noToken.preScreen('cefi', { ip: '1.2.3.4', pair: 'ETHBTC', deposit_amount: '1' }))).code,
    ).toBe('referral_token_required');
    expect(
      (await failure(client.updateOrder('cefi', { uniqueReference: 'X', referral_code: 'x'.repeat(21) })))
        .code,
    ).toBe('referral_code_invalid');
    expect(ex.requests).toHaveLength(0);
  });
});

describe('malformed responses', () => {
  it('names the endpoint and the field when a required field is missing or malformed', async () => {
    const ex = fresh();
    const withoutStatus = orderFixture();
    delete withoutStatus['status'];
    ex.reply('GET', '/orders/A/', 200, withoutStatus);
    ex.reply('GET', '/orders/B/', 200, orderFixture({ deposit_amount: 0.1 }));
    ex.reply('GET', '/rate/', 200, [rateFixture({ rate: 'twelve' })]);
    const client = mockedClient(ex);
    const missing = await failure(client.getOrder('cefi', { uniqueReference: 'A' }));
    expect(missing).toMatchObject({ code: 'invalid_response', action: 'fatal' });
    expect(missing.message).toContain('GET /orders/{unique_reference}/');
    expect(missing.message).toContain('"status"');
    const numeric = await failure(client.getOrder('cefi', { uniqueReference: 'B' }));
    expect(numeric.message).toContain('"deposit_amount"');
    const rate = await failure(client.getRates('cefi'));
    expect(rate.message).toMatch(/GET \/rate\/: response field "0\.rate": expected a decimal string/);
  });

  it('treats an unreadable created order as an unknown outcome, not as a reason to create again', async () => {
    const ex = fresh();
    ex.reply('POST', '/orders/', 201, '<html>oops</html>');
    const err = await failure(
      mockedClient(ex).createOrder('cefi', {
        deposit_currency: 'BTC',
        withdraw_currency: 'ETH',
        withdraw_amount: '1',
        withdraw_address: '0xa',
      }),
    );
    expect(err).toMatchObject({ code: 'invalid_response', action: 'unknown_outcome', httpStatus: 201 });
    expect(ex.requests).toHaveLength(1);
  });
});

describe('retries only where they are safe', () => {
  const order = {
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    withdraw_amount: '1',
    withdraw_address: '0xa',
  };

  it('retries a GET after a 503 and after a lost connection', async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/A/', 503, '');
    ex.replyWithError(
      'GET',
      '/orders/A/',
      Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    );
    ex.reply('GET', '/orders/A/', 200, orderFixture({ unique_reference: 'A' }));
    const logs: unknown[] = [];
    const logger: ExchangeLogger = { debug: () => undefined, warn: (fields) => logs.push(fields) };
    const order = await mockedClient(ex, { logger }).getOrder('cefi', { uniqueReference: 'A' });
    expect(order.uniqueReference).toBe('A');
    expect(logs).toHaveLength(2);
  });

  it('gives up on a GET after the attempt limit with the last classification', async () => {
    const ex = fresh();
    ex.reply('GET', '/pair/', 502, '', { times: 3 });
    expect(await failure(mockedClient(ex).listPairs('cefi'))).toMatchObject({
      code: 'http_502',
      action: 'backoff',
    });
    expect(ex.requests).toHaveLength(3);
  });

  it('retries a GET after a global 429 once the budget has been told to back off', async () => {
    const ex = fresh();
    ex.reply(
      'GET',
      '/pair/',
      429,
      { detail: 'Request was throttled. Expected available in 2 seconds.' },
      { headers: { 'retry-after': '2' } },
    );
    ex.reply('GET', '/pair/', 200, []);
    const budget = new RecordingBudget();
    const client = mockedClient(ex, { budget });
    expect(await client.listPairs('cefi')).toEqual([]);
    expect(budget.penalties).toEqual([{ key: client.budgetKey('cefi'), retryAfterMs: 2000 }]);
    expect(budget.acquired).toHaveLength(2);
  });

  it('holds a key no longer than the Retry-After cap, however long the header says, and tells the observer', async () => {
    const ex = fresh();
    ex.reply(
      'GET',
      '/pair/',
      429,
      { detail: 'Request was throttled.' },
      { headers: { 'retry-after': '3600' } },
    );
    ex.reply('GET', '/pair/', 200, []);
    const budget = new RecordingBudget();
    const capped: Array<{ operation: string; statedMs: number; honouredMs: number }> = [];
    const observer = {
      callFinished: () => undefined,
      attemptFailed: () => undefined,
      budgetWaited: () => undefined,
      retryAfterCapped: (event: { operation: string; statedMs: number; honouredMs: number }) =>
        void capped.push(event),
    };
    const client = mockedClient(ex, { budget, observer, retryAfterMaxMs: 60_000 });
    expect(await client.listPairs('cefi')).toEqual([]);
    expect(budget.penalties).toEqual([{ key: client.budgetKey('cefi'), retryAfterMs: 60_000 }]);
    expect(capped).toEqual([{ operation: 'listPairs', statedMs: 3_600_000, honouredMs: 60_000 }]);
  });

  it('caps the wait an unretried throttled call reports to its order too', async () => {
    const ex = fresh();
    ex.reply(
      'GET',
      '/pair/',
      429,
      { detail: 'Request was throttled.' },
      {
        headers: { 'retry-after': '86400' },
        times: 3,
      },
    );
    const err = await failure(mockedClient(ex, { retryAfterMaxMs: 30_000 }).listPairs('cefi'));
    expect(err).toMatchObject({ code: 'throttled', retryAfterMs: 30_000 });
  });

  it('holds the key for every replica on a 429 only, not on a "throttled" body of another status', async () => {
    const ex = fresh();
    ex.reply(
      'GET',
      '/pair/',
      503,
      { detail: 'Request was throttled. Expected available in 900 seconds.' },
      {
        times: 3,
      },
    );
    const budget = new RecordingBudget();
    const err = await failure(mockedClient(ex, { budget }).listPairs('cefi'));
    expect(err).toMatchObject({ code: 'http_503', action: 'backoff' });
    expect(budget.penalties).toEqual([]);
  });

  it('never repeats POST /orders/ after a 5xx or 408, and reports it as unknown_outcome (it may have been created)', async () => {
    for (const status of [500, 502, 503, 504, 408]) {
      const ex = fresh();
      ex.reply('POST', '/orders/', status, { detail: 'Server Error' });
      const err = await failure(mockedClient(ex).createOrder('cefi', order));
      expect(err, `HTTP ${status}`).toMatchObject({ code: `http_${status}`, action: 'unknown_outcome' });
      expect(err.message).toContain('look it up');
      expect(ex.requests).toHaveLength(1);
      await ex.agent.close();
    }
    // A 4xx is a definite refusal, and a documented message on a 5xx does not make it one.
    const refused = fresh();
    refused.reply('POST', '/orders/', 400, {
      errors: { withdraw_address: ['xyz has invalid characters for a valid value'] },
    });
    expect(await failure(mockedClient(refused).createOrder('cefi', order))).toMatchObject({
      action: 'fatal',
    });
    await refused.agent.close();
    const busy = fresh();
    busy.reply('POST', '/orders/', 503, {
      detail: 'Quote provider is unavailable. Please request a new rate.',
    });
    expect(await failure(mockedClient(busy).createOrder('defi', order))).toMatchObject({
      code: 'quote_provider_unavailable',
      action: 'unknown_outcome',
    });
  });

  it('answers a GET of one order with another order as an invalid response', async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/A/', 200, orderFixture({ unique_reference: 'B' }), { times: 3 });
    const err = await failure(mockedClient(ex).getOrder('cefi', { uniqueReference: 'A' }));
    expect(err).toMatchObject({ code: 'invalid_response', action: 'fatal' });
    expect(err.message).toContain('not the one requested');
  });

  it('checks the lease hook as each attempt leaves, and sends nothing when it refuses', async () => {
    const ex = fresh();
    ex.reply('POST', '/orders/', 201, orderFixture());
    const refusal = new Error('not the owner any more');
    await expect(
      mockedClient(ex).createOrder('cefi', order, {
        beforeSend: () => {
          throw refusal;
        },
      }),
    ).rejects.toBe(refusal);
    expect(ex.requests).toHaveLength(0);
  });

  it('reports a POST /orders/ whose connection dropped after sending as unknown_outcome, without repeating it', async () => {
    const ex = fresh();
    ex.replyWithError(
      'POST',
      '/orders/',
      Object.assign(new Error('socket hang up'), { code: 'UND_ERR_SOCKET' }),
    );
    const err = await failure(mockedClient(ex).createOrder('cefi', order));
    expect(err).toMatchObject({ code: 'connection_lost', action: 'unknown_outcome' });
  });

  it('repeats a POST /orders/ that provably never left (connection refused)', async () => {
    const ex = fresh();
    ex.replyWithError(
      'POST',
      '/orders/',
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    );
    ex.reply('POST', '/orders/', 201, orderFixture());
    const { order: created } = await mockedClient(ex).createOrder('cefi', order);
    expect(created.uniqueReference).toBe('ORD123ABC');
  });

  it('times out a POST /orders/ as unknown_outcome and a GET as a retried backoff', async () => {
    const ex = fresh();
    ex.reply('POST', '/orders/', 201, orderFixture(), { delayMs: 400 });
    ex.reply('GET', '/orders/A/', 200, orderFixture({ unique_reference: 'A' }), { delayMs: 400, times: 2 });
    const client = mockedClient(ex, {
      timeouts: { createOrder: 100, getOrder: 100 },
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    const post = await failure(client.createOrder('cefi', order));
    expect(post).toMatchObject({ code: 'timeout', action: 'unknown_outcome' });
    const get = await failure(client.getOrder('cefi', { uniqueReference: 'A' }));
    expect(get).toMatchObject({ code: 'timeout', action: 'backoff' });
  });

  it('gives actionable quotes and DeFi fixed-rate creation at least 15 s', async () => {
    const ex = fresh();
    ex.reply('GET', (p) => p.startsWith('/rate/'), 200, [rateFixture()], { delayMs: 300 });
    ex.reply('POST', '/orders/', 201, orderFixture(), { delayMs: 300 });
    const client = mockedClient(ex, { timeouts: { actionableQuote: 100, createOrder: 100, getRates: 100 } });
    await expect(client.getRates('defi', { pairs: 'ETHBTC', actionable_quote: true })).resolves.toHaveLength(
      1,
    );
    await expect(client.createOrder('defi', order)).resolves.toMatchObject({ reused: false });
  });

  it("stops at the caller's AbortSignal", async () => {
    const ex = fresh();
    ex.reply('GET', '/pair/', 200, [], { delayMs: 500 });
    ex.reply('POST', '/orders/', 201, orderFixture(), { delayMs: 500 });
    const client = mockedClient(ex);
    const get = client.listPairs('cefi', { signal: AbortSignal.timeout(50) });
    await expect(get).rejects.toMatchObject({ name: 'TimeoutError' });
    // A POST that has left is not abandoned (its answer says whether the order exists); one not yet sent is.
    const sent = await client.createOrder('cefi', order, { signal: AbortSignal.timeout(50) });
    expect(sent.order.uniqueReference).toBe('ORD123ABC');
    const before = ex.requests.length;
    await expect(client.createOrder('cefi', order, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(ex.requests).toHaveLength(before);
  });
});

describe('secrets and telemetry', () => {
  it('records a span per call with the budget wait and one HTTP client span per attempt under it', async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/A/', 503, '');
    ex.reply('GET', '/orders/A/', 200, orderFixture({ unique_reference: 'A' }));
    const { exporter, provider } = spanRecorder();
    await mockedClient(ex, { tracer: provider.getTracer('test') }).getOrder('cefi', { uniqueReference: 'A' });
    const spans = exporter.getFinishedSpans();
    const call = spans.find((s) => s.name === 'exchange getOrder');
    const attempts = spans.filter((s) => s.name === 'GET /orders/{unique_reference}/');
    expect(call?.attributes).toMatchObject({
      'exchange.operation': 'getOrder',
      'exchange.trading_mode': 'cefi',
    });
    expect(spans.filter((s) => s.name === 'exchange budget wait')).toHaveLength(2);
    expect(attempts).toHaveLength(2);
    for (const span of spans.filter((s) => s !== call))
      expect(span.parentSpanContext?.spanId).toBe(call?.spanContext().spanId);
    expect(attempts[0]?.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.full': 'http://exchange.test/en/api/v2/orders/A/',
      'url.template': '/orders/{unique_reference}/',
      'server.address': 'exchange.test',
      'server.port': 80,
      'exchange.attempt': 1,
      'http.response.status_code': 503,
      'error.type': 'http_503',
      'exchange.failure_action': 'backoff',
    });
    expect(attempts[0]?.attributes['http.request.resend_count']).toBeUndefined();
    expect(attempts[1]?.attributes).toMatchObject({
      'exchange.attempt': 2,
      'http.request.resend_count': 1,
      'http.response.status_code': 200,
    });
    await provider.shutdown();
  });

  it("masks a credential-like query parameter of a request in its span's url.full (a cursor link may carry one)", async () => {
    const ex = fresh();
    ex.reply('GET', '/orders/?access_token=s3cret&cursor=c1&status=13', 200, {
      results: [],
      pagination: { next: null, previous: null },
    });
    const { exporter, provider } = spanRecorder();
    await mockedClient(ex, { tracer: provider.getTracer('test') }).listOrders('cefi', {
      cursor: 'http://exchange.test/en/api/v2/orders/?cursor=c1&access_token=s3cret&status=13',
    });
    const attempt = exporter.getFinishedSpans().find((s) => s.name === 'GET /orders/');
    expect(attempt?.attributes['url.full']).toBe(
      'http://exchange.test/en/api/v2/orders/?cursor=c1&access_token=REDACTED&status=13',
    );
    expect(attempt?.attributes).toMatchObject({ 'server.address': 'exchange.test', 'server.port': 80 });
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain('s3cret');
    await provider.shutdown();
  });

  it("keeps keys and tokens out of errors, logs, spans, the budget and the client's own rendering", async () => {
    const ex = fresh();
    ex.reply('GET', '/pair/', 500, { detail: 'boom' }, { times: 3 });
    const logs: string[] = [];
    const logger: ExchangeLogger = {
      debug: (f, m) => logs.push(JSON.stringify(f) + m),
      warn: (f, m) => logs.push(JSON.stringify(f) + m),
    };
    const { exporter, provider } = spanRecorder();
    const budget = new RecordingBudget();
    const client = mockedClient(ex, { logger, budget, tracer: provider.getTracer('test') });
    const err = await failure(client.listPairs('cefi'));
    const rendered = [
      err.message,
      err.stack ?? '',
      JSON.stringify(toExchangeFailure(err)),
      inspect(err, { depth: 5 }),
      ...logs,
      JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.status, s.events])),
      JSON.stringify(budget.acquired),
      inspect(client, { depth: 5 }),
      JSON.stringify(client),
    ].join('\n');
    for (const secret of [...Object.values(secrets), referralToken]) expect(rendered).not.toContain(secret);
    await provider.shutdown();
  });
});
