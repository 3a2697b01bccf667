import { describe, expect, it } from 'vitest';
import type { ExchangeOrderView } from '../../../machines/domain.ts';
import { summarizeOrder } from '../../../src/fleet/order-summary.ts';
import { amountMatches, rankCandidates } from '../../../src/inspect/exchange-candidates.ts';

const startedAt = Date.parse('2026-06-01T12:00:00Z');
const parked = summarizeOrder({
  order_id: 'o-1',
  partition: 0,
  fence: 1,
  rev: 3,
  seq: 1,
  updated_at: new Date(startedAt + 70_000).toISOString(),
  mode: 'cefi',
  unique_reference: null,
  terminal: false,
  machine: {
    resumeFrom: 'creating.parked',
    context: {
      request: {
        depositCurrency: 'ETH',
        withdrawCurrency: 'BTC',
        depositAmount: '1.123456789',
        withdrawAmount: null,
        withdrawAddress: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
      },
      parkedAt: startedAt + 70_000,
      pendingIntent: { kind: 'create', startedAt, rateId: null },
      lastFailure: { code: 'http_403', message: 'HTTP 403', at: startedAt + 69_000 },
    },
  },
});

function exchangeOrder(reference: string, fields: Partial<ExchangeOrderView> = {}): ExchangeOrderView {
  return {
    uniqueReference: reference,
    status: 'INITIAL',
    createdOn: new Date(startedAt + 200).toISOString(),
    side: 'BUY',
    depositAmount: '1.12345679',
    withdrawAmount: '0.03',
    depositCurrency: 'ETH',
    withdrawCurrency: 'BTC',
    depositAddress: '0xabc',
    depositAddressExtraId: '',
    withdrawAddress: 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4',
    withdrawAddressExtraId: '',
    refundAddress: '',
    refundAddressExtraId: '',
    paymentWindowMinutes: 60,
    fixedRateDeadline: null,
    rate: '0.03',
    depositTransaction: '',
    withdrawTransaction: '',
    refundTransaction: '',
    ...fields,
  };
}

describe('amountMatches', () => {
  it('takes an amount the exchange rounded or cut to 8 places, and nothing further off', () => {
    expect(amountMatches('1.12345679', '1.123456789')).toBe(true);
    expect(amountMatches('1.12345678', '1.123456789')).toBe(true);
    expect(amountMatches('1.50000000', '1.5')).toBe(true);
    expect(amountMatches('1.12345677', '1.123456789')).toBe(false);
    expect(amountMatches('2', '1')).toBe(false);
    expect(amountMatches('n/a', 'n/a')).toBe(true);
  });
});

describe('rankCandidates', () => {
  it('picks the one order that passes every check and shows why the others do not', () => {
    const report = rankCandidates(
      parked,
      [
        exchangeOrder('OTHER-AMOUNT', { depositAmount: '2.00000000' }),
        exchangeOrder('GOOD'),
        exchangeOrder('TOO-LATE', { createdOn: new Date(startedAt + 3_600_000).toISOString() }),
        exchangeOrder('OTHER-PAIR', { withdrawCurrency: 'LTC' }),
        exchangeOrder('TAKEN'),
      ],
      (reference) => (reference === 'TAKEN' ? 'o-2' : undefined),
    );
    expect(report.pick?.uniqueReference).toBe('GOOD');
    expect(report.candidates.map((c) => c.uniqueReference)).not.toContain('OTHER-PAIR');
    const against = (ref: string) =>
      report.candidates
        .find((c) => c.uniqueReference === ref)
        ?.evidence.filter((e) => !e.ok)
        .map((e) => e.check);
    expect(against('OTHER-AMOUNT')).toEqual(['amount']);
    expect(against('TOO-LATE')).toEqual(['window']);
    expect(against('TAKEN')).toEqual(['unclaimed']);
    expect(report.note).toMatch(/one exchange order passes every check/);
  });

  it('picks nothing, and says to abandon, when no order of the pair passes', () => {
    const report = rankCandidates(
      parked,
      [exchangeOrder('X', { withdrawAddress: 'bc1qother' })],
      () => undefined,
    );
    expect(report.pick).toBeNull();
    expect(report.note).toMatch(/abandon/);
  });
});
