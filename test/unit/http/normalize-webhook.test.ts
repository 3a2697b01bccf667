import { describe, expect, it } from 'vitest';
import { normalizeWebhook } from '../../../src/http/normalize-webhook.ts';
import { v1OrderFixture } from '../../support/exchange/v1-fixtures.ts';

const v2Order = {
  id: 'delivery-7',
  unique_reference: 'ABC123',
  created_on: '2026-11-22T06:00:00Z',
  side: 'BUY',
  status: 'PAID',
  deposit_amount: '1.00000000',
  withdraw_amount: '0.03000000',
  deposit_currency: 'ETH',
  withdraw_currency: 'BTC',
  deposit_address: '0x52908400098527886E0F7030069857D2E4169EE7',
  deposit_address_extra_id: '',
  withdraw_address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
  withdraw_address_extra_id: '',
  refund_address: '',
  refund_address_extra_id: '',
  payment_window_minutes: 60,
  fixed_rate_deadline: '2026-11-22T07:00:00Z',
  rate: '0.03000000',
  deposit_transaction: '',
  withdraw_transaction: '',
  refund_transaction: '',
};

describe('webhook payload recognition', () => {
  it('reads a v2 order-status webhook as (unique_reference, status)', () => {
    expect(normalizeWebhook(v2Order)).toEqual({
      kind: 'order',
      uniqueReference: 'ABC123',
      status: 'PAID',
      payloadVersion: 'v2',
    });
  });

  it('reads a v1 order-status webhook through the v1-to-v2 renames (status_name pair -> status)', () => {
    const v1 = v1OrderFixture({ unique_reference: 'V1REF', status_name: [[8, 'REFUNDED']] });
    expect(normalizeWebhook(v1)).toEqual({
      kind: 'order',
      uniqueReference: 'V1REF',
      status: 'REFUNDED',
      payloadVersion: 'v1',
    });
  });

  it('refuses an order-status webhook missing a required field, naming the field', () => {
    const { unique_reference: _dropped, ...partial } = v2Order;
    const result = normalizeWebhook(partial);
    expect(result).toHaveProperty('error');
    expect((result as { error: string }).error).toMatch(/unique_reference/);
  });

  it('recognises a KYC notification and keeps its body as received', () => {
    const kyc = { id: 'k1', event: 'kyc_status_changed', unique_reference: 'ABC123', kyc_status: 'approved' };
    expect(normalizeWebhook(kyc)).toEqual({ kind: 'kyc', uniqueReference: 'ABC123', payload: kyc });
  });

  it('refuses bodies that are neither', () => {
    expect(normalizeWebhook([1, 2])).toEqual({ error: 'webhook body must be a JSON object' });
    expect(normalizeWebhook({ hello: 'world' })).toHaveProperty('error');
  });
});
