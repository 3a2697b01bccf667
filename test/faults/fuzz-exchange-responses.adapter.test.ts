// Fuzzing what the exchange answers (undici MockAgent, net connect disabled): any status, Retry-After and body on
// the calls the worker makes gives either a parsed result or one ExchangeError with a classification action the
// machine knows, within a bounded time, with no secret in its message. Never another exception, never a hang.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { failureActions } from '../../machines/domain.ts';
import { ExchangeError } from '../../src/exchange/errors.ts';
import {
  mockExchange,
  mockedClient,
  orderFixture,
  rateFixture,
  referralToken,
  secrets,
} from '../support/exchange/mock-exchange.ts';
import { fuzzedExchangeResponse } from './fuzz-inputs.ts';
import { recordFigures } from './harness.ts';
import { faultProfile, replayable } from './profile.ts';

const profile = faultProfile();
const secretValues = [...Object.values(secrets), referralToken];

const calls = [
  {
    name: 'GET /orders/{ref}/',
    method: 'GET',
    path: '/orders/ORD123ABC/',
    call: (c: ReturnType<typeof mockedClient>) => c.getOrder('cefi', { uniqueReference: 'ORD123ABC' }),
  },
  {
    name: 'POST /orders/',
    method: 'POST',
    path: '/orders/',
    call: (c: ReturnType<typeof mockedClient>) =>
      c.createOrder('defi', {
        deposit_currency: 'USDT',
        withdraw_currency: 'ETH',
        deposit_amount: '100',
        withdraw_address: '0x52908400098527886E0F7030069857D2E4169EE7',
        rate_id: 'rate_abc',
      }),
  },
  {
    name: 'GET /rate/ (actionable)',
    method: 'GET',
    path: (p: string) => p.startsWith('/rate/'),
    call: (c: ReturnType<typeof mockedClient>) =>
      c.getRates('defi', { pairs: 'ETHUSDT', deposit_amount: '100', actionable_quote: true }),
  },
  {
    name: 'GET /orders/ (list)',
    method: 'GET',
    path: (p: string) => p.startsWith('/orders/') && !p.startsWith('/orders/ORD'),
    call: (c: ReturnType<typeof mockedClient>) => c.listOrders('cefi', {}),
  },
  {
    name: 'PATCH deposit_transaction',
    method: 'PATCH',
    path: '/orders/ORD123ABC/',
    call: (c: ReturnType<typeof mockedClient>) =>
      c.submitDepositTransaction('cefi', {
        uniqueReference: 'ORD123ABC',
        depositTransaction: `0x${'b'.repeat(64)}`,
      }),
  },
] as const;

describe('exchange client under fuzzed responses', () => {
  it(`${profile.fuzzRuns} fuzzed responses: a parsed result or one classified ExchangeError, in bounded time`, async () => {
    const tally: Record<string, number> = {};
    const fixtures = [
      orderFixture(),
      rateFixture(),
      { results: [orderFixture()], pagination: { next: null, previous: null } },
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...calls.keys()),
        fuzzedExchangeResponse(fixtures),
        async (index, response) => {
          const target = calls[index]!;
          const exchange = mockExchange();
          exchange.reply(target.method, target.path, response.status, response.body, {
            headers: response.headers,
            times: 5,
          });
          const client = mockedClient(exchange, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
          const started = Date.now();
          const settled = await Promise.race([
            target.call(client).then(
              (value) => ({ ok: true as const, value }),
              (error: unknown) => ({ ok: false as const, error }),
            ),
            new Promise<'hang'>((resolve) => setTimeout(() => resolve('hang'), 5_000).unref()),
          ]);
          await client.close();
          await exchange.agent.close();
          expect(
            settled,
            `${target.name} answered ${response.status} ${JSON.stringify(response.headers)} ${response.body.slice(0, 200)}`,
          ).not.toBe('hang');
          if (settled === 'hang') return;
          if (settled.ok) {
            tally[`${target.name} ok`] = (tally[`${target.name} ok`] ?? 0) + 1;
            return;
          }
          const error = settled.error;
          expect(
            error,
            `${target.name} threw a non-ExchangeError for ${response.status} ${response.body.slice(0, 200)}`,
          ).toBeInstanceOf(ExchangeError);
          const exchangeError = error as ExchangeError;
          expect(failureActions).toContain(exchangeError.action);
          expect(exchangeError.code.length).toBeGreaterThan(0);
          for (const secret of secretValues) expect(exchangeError.message).not.toContain(secret);
          expect(Date.now() - started).toBeLessThan(5_000);
          tally[exchangeError.action] = (tally[exchangeError.action] ?? 0) + 1;
        },
      ),
      replayable(profile.fuzzRuns),
    );
    recordFigures({ test: 'fuzz-exchange-responses', runs: profile.fuzzRuns, outcomes: tally });
  });
});
