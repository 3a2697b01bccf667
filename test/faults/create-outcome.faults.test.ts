// POST /orders/ answers after which the order may exist on the exchange: any 5xx, a 408, or a 2xx whose body we
// cannot read. Repeating such a create blindly is how a second exchange order is made, so the client must report
// the outcome as unknown (the machine then looks the order up before anything else), never as "try again" or
// "failed". Fuzzed with the exchange as an undici MockAgent. Runs in `npm run test:faults` only: it fails on main
// until the lead's money-safety fix (a 5xx to POST /orders/ is classified "backoff" there).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExchangeError } from '../../src/exchange/errors.ts';
import { mockExchange, mockedClient, orderFixture } from '../support/exchange/mock-exchange.ts';
import { faultProfile, replayable } from './profile.ts';
import { recordFigures } from './harness.ts';

const profile = faultProfile();

const mayHaveCreated = fc.oneof(
  fc.record({
    status: fc.integer({ min: 500, max: 599 }),
    body: fc.constantFrom('', '{"detail":"A server error occurred."}', '<html>bad gateway</html>'),
  }),
  fc.record({ status: fc.constant(408), body: fc.constantFrom('', '{"detail":"Request timeout."}') }),
  fc.record({
    status: fc.constantFrom(200, 201),
    body: fc.oneof(
      fc.constant(''),
      fc.constant('{"unique_reference":'),
      fc.constant(JSON.stringify({ ...orderFixture(), unique_reference: 42 })),
      fc.string({ maxLength: 30 }),
    ),
  }),
);

describe('POST /orders/ answers after which the order may exist', () => {
  it('are reported as unknown_outcome, never retried or failed', async () => {
    const actions: Record<string, number> = {};
    const wrong: string[] = [];
    await fc.assert(
      fc.asyncProperty(mayHaveCreated, async ({ status, body }) => {
        const exchange = mockExchange();
        exchange.reply('POST', '/orders/', status, body, { times: 5 });
        const client = mockedClient(exchange);
        const outcome = await client
          .createOrder('cefi', {
            deposit_currency: 'ETH',
            withdraw_currency: 'BTC',
            deposit_amount: '1',
            withdraw_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
          })
          .then(
            () => 'created',
            (error: unknown) => (error instanceof ExchangeError ? error.action : 'not an ExchangeError'),
          );
        await exchange.agent.close();
        actions[`${status >= 500 ? '5xx' : status} -> ${outcome}`] =
          (actions[`${status >= 500 ? '5xx' : status} -> ${outcome}`] ?? 0) + 1;
        if (outcome !== 'unknown_outcome')
          wrong.push(`${status} ${JSON.stringify(body).slice(0, 60)}: ${outcome}`);
        // The create was sent once: a repeat is exactly what must not happen.
        if (exchange.requests.length !== 1)
          wrong.push(`${status}: POST /orders/ sent ${exchange.requests.length} times`);
      }),
      replayable(Math.min(profile.fuzzRuns, 500)),
    );
    recordFigures({ test: 'create-outcome', actions });
    expect([...new Set(wrong)].slice(0, 15).join('\n')).toBe('');
  });
});
