// An exchange client (every v2 endpoint) wired to a sandbox started for one test, with the sandbox's demo keys per trading mode.
import { ExchangeError } from '../../../src/exchange/errors.ts';
import { LocalRequestBudget } from '../../../src/exchange/request-budget.ts';
import type { SandboxHandle } from '../../../sandbox/index.ts';
import { demoKeys, demoReferral } from '../../adapter/sandbox/helpers.ts';
import { FullExchangeClient, type FullExchangeClientOptions } from './full-client.ts';

export function sandboxClient(
  handle: SandboxHandle,
  overrides: Partial<FullExchangeClientOptions> = {},
): FullExchangeClient {
  return new FullExchangeClient({
    baseUrl: handle.url,
    credentials: { cefi: demoKeys.cefi, cefi_fixed: demoKeys.cefiFixed, defi: demoKeys.defi },
    referralToken: demoReferral.token,
    budget: new LocalRequestBudget(),
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    ...overrides,
  });
}

export async function exchangeFailure(promise: Promise<unknown>): Promise<ExchangeError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ExchangeError) return err;
    throw err;
  }
  throw new Error('expected an ExchangeError');
}
