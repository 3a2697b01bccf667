import { describe, expect, it } from 'vitest';
import { isExchangeFailure } from '../../../machines/domain.ts';
import { WorkerError } from '../../../src/errors.ts';
import { ExchangeError, toExchangeFailure } from '../../../src/exchange/errors.ts';

describe('ExchangeError', () => {
  it('is a WorkerError whose retryable flag follows the action', () => {
    const backoff = new ExchangeError({
      code: 'http_503',
      action: 'backoff',
      message: 'HTTP 503',
      endpoint: 'GET /rate/',
      httpStatus: 503,
    });
    expect(backoff).toBeInstanceOf(WorkerError);
    expect(backoff.retryable).toBe(true);
    expect(backoff.message).toBe('GET /rate/: HTTP 503');
    const fatal = new ExchangeError({
      code: 'http_400',
      action: 'fatal',
      message: 'bad',
      endpoint: 'POST /orders/',
    });
    expect(fatal.retryable).toBe(false);
    const unknown = new ExchangeError({
      code: 'timeout',
      action: 'unknown_outcome',
      message: 't',
      endpoint: 'POST /orders/',
    });
    // Retryable only after verifying (the one retry table, machines/domain.ts), so not "never".
    expect(unknown.retryable).toBe(true);
    const modeMismatch = new ExchangeError({
      code: 'rate_id_mode_mismatch',
      action: 'mode_mismatch',
      message: 'm',
      endpoint: 'POST /orders/',
    });
    expect(modeMismatch.retryable).toBe(false);
  });

  it('becomes the plain, serialisable ExchangeFailure of the machine', () => {
    const err = new ExchangeError({
      code: 'throttled',
      action: 'throttled',
      message: 'Request was throttled.',
      endpoint: 'GET /orders/{unique_reference}/',
      httpStatus: 429,
      retryAfterMs: 3000,
    });
    const failure = toExchangeFailure(err);
    expect(failure).toEqual({
      kind: 'exchange_failure',
      action: 'throttled',
      code: 'throttled',
      message: 'Request was throttled.',
      httpStatus: 429,
      retryAfterMs: 3000,
    });
    expect(isExchangeFailure(JSON.parse(JSON.stringify(failure)))).toBe(true);
  });

  it('omits absent optional fields and reports foreign errors as unexpected (or in doubt after a side effect)', () => {
    const failure = toExchangeFailure(
      new ExchangeError({ code: 'timeout', action: 'backoff', message: 't', endpoint: 'GET /rate/' }),
    );
    expect(Object.keys(failure)).not.toContain('httpStatus');
    expect(toExchangeFailure(new TypeError('boom'))).toEqual({
      kind: 'exchange_failure',
      action: 'unexpected',
      code: 'unexpected_error',
      message: 'boom',
    });
    expect(toExchangeFailure(new TypeError('boom'), { mayHaveTakenEffect: true })).toMatchObject({
      action: 'unknown_outcome',
    });
  });
});
