import { describe, expect, it } from 'vitest';
import { exchangeMessageMaxChars } from '../../../machines/domain.ts';
import {
  classificationTable,
  classifyErrorResponse,
  classifyHttpStatus,
  errorMessages,
  parseRetryAfter,
} from '../../../src/exchange/error-classification.ts';
import { documentedErrors } from '../../support/exchange/documented-errors.ts';

describe('classification table', () => {
  it('has a documented example for every row, and every example names a row', () => {
    const rowCodes = classificationTable.map((row) => row.code).sort();
    const exampleCodes = documentedErrors.map((example) => example.code).sort();
    expect(exampleCodes).toEqual(rowCodes);
  });

  it.each(documentedErrors.map((example) => [example.code, example] as const))(
    'classifies the documented "%s" message',
    (_code, example) => {
      const result = classifyErrorResponse({
        status: example.status,
        body: example.body,
        retryAfter: example.headers?.['retry-after'],
      });
      expect(result.code).toBe(example.code);
      expect(result.action).toBe(example.action);
      expect(result.retryAfterMs).toBe(example.retryAfterMs);
    },
  );

  it('tolerates interpolated ids and values and changed letter case', () => {
    expect(
      classifyErrorResponse({ status: 400, body: { detail: "RATE_ID 'abc-123-XYZ' IS INVALID OR EXPIRED." } })
        .code,
    ).toBe('rate_id_invalid_or_expired');
    expect(
      classifyErrorResponse({ status: 400, body: { detail: 'Pair USDTTRXBTC is temporarily unavailable.' } })
        .code,
    ).toBe('pair_temporarily_unavailable');
    expect(
      classifyErrorResponse({
        status: 400,
        body: { errors: { markup: ['Must not exceed 9999 basis points'] } },
      }).code,
    ).toBe('markup_over_cap');
    // with the space the document says is missing, too
    expect(
      classifyErrorResponse({
        status: 400,
        body: { detail: 'External deposit notification with tx_id abc already exists' },
      }).action,
    ).toBe('idempotent_success');
  });

  it('reads the wait stated in a throttle message when Retry-After is absent', () => {
    const result = classifyErrorResponse({
      status: 429,
      body: { detail: 'Request was throttled. Expected available in 12 seconds.' },
    });
    expect(result).toMatchObject({
      code: 'throttled',
      action: 'throttled',
      retryAfterMs: 12_000,
      globalThrottle: true,
    });
  });

  it('lets only the global throttle penalise the key, not the quote throttles', () => {
    const quote = classifyErrorResponse({
      status: 429,
      body: { detail: 'Too many same-chain fixed-rate quote requests' },
    });
    expect(quote.globalThrottle).toBe(false);
    expect(classifyErrorResponse({ status: 429, body: 'slow down' }).globalThrottle).toBe(true);
  });
});

describe('fallback on the HTTP status', () => {
  it.each([
    [429, 'throttled', 'throttled'],
    [500, 'http_500', 'backoff'],
    [502, 'http_502', 'backoff'],
    [503, 'http_503', 'backoff'],
    [408, 'http_408', 'backoff'],
    [417, 'http_417', 'backoff'],
    [400, 'http_400', 'fatal'],
    [403, 'http_403', 'fatal'],
    [404, 'http_404', 'fatal'],
  ] as const)('classifies an unknown %i as %s (%s)', (status, code, action) => {
    expect(classifyHttpStatus(status)).toMatchObject({ code, action });
    const result = classifyErrorResponse({ status, body: { detail: 'Something nobody documented.' } });
    expect(result).toMatchObject({ code, action, message: 'Something nobody documented.' });
  });

  it('reads an explained 401 other than missing credentials as the referral ownership rule, and nothing else', () => {
    const owned = classifyErrorResponse({ status: 401, body: { detail: 'Something nobody documented.' } });
    expect(owned).toMatchObject({ code: 'referral_code_not_owned', action: 'fatal' });
    expect(
      classifyErrorResponse({
        status: 401,
        body: { detail: 'Authentication credentials were not provided.' },
      }).code,
    ).toBe('credentials_missing');
    expect(classifyErrorResponse({ status: 401, body: undefined }).code).toBe('http_401');
    expect(classifyErrorResponse({ status: 401, body: '<html>Unauthorized</html>' }).code).toBe('http_401');
    expect(
      classifyErrorResponse({ status: 400, body: { detail: 'Something nobody documented.' } }).code,
    ).toBe('http_400');
  });

  it("cuts the exchange's message to the cap on exchange text, matched row or not", () => {
    const megabyte = 'y'.repeat(1 << 20);
    const unexplained = classifyErrorResponse({ status: 400, body: { detail: megabyte } });
    expect(unexplained.message.length).toBeLessThanOrEqual(exchangeMessageMaxChars);
    const matched = classifyErrorResponse({
      status: 400,
      body: { detail: `The quote for this rate_id has expired. Please request a new rate. ${megabyte}` },
    });
    expect(matched.code).not.toMatch(/^http_/);
    expect(matched.message.length).toBeLessThanOrEqual(exchangeMessageMaxChars);
  });

  it('uses a status line as the message of an empty or HTML body', () => {
    expect(classifyErrorResponse({ status: 503, body: undefined }).message).toBe('HTTP 503');
    expect(classifyErrorResponse({ status: 502, body: '<html>Bad gateway</html>' }).code).toBe('http_502');
  });
});

describe('error bodies', () => {
  it('collects detail, field errors, DRF field lists and the pre-screening message', () => {
    expect(
      errorMessages({
        detail: 'a',
        errors: { withdraw_address: ['b', 'c'] },
        non_field_errors: ['d'],
        deposit_amount: ['e'],
      }),
    ).toEqual(['withdraw_address: b', 'withdraw_address: c', 'd', 'deposit_amount: e', 'a']);
    expect(errorMessages({ status: 'failed', message: 'm' })).toEqual(['m']);
    expect(errorMessages(null)).toEqual([]);
  });
});

describe('Retry-After', () => {
  it('reads delta-seconds and HTTP dates', () => {
    expect(parseRetryAfter('5', 0)).toBe(5_000);
    expect(parseRetryAfter('0.5', 0)).toBe(500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
