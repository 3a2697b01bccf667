import { describe, expect, it } from 'vitest';
import { WorkerError } from '../../../src/errors.ts';
import { toOrderView } from '../../../src/exchange/order-view.ts';
import { parseV1Order, parseV1OrderPage } from '../../../src/exchange/v1-mapping.ts';
import { v1OrderFixture } from '../../support/exchange/v1-fixtures.ts';

describe('v1 order -> v2 vocabulary', () => {
  it('applies the renames table to a BUY order', () => {
    const order = toOrderView(parseV1Order(v1OrderFixture()));
    expect(order).toEqual({
      uniqueReference: 'V1REF42',
      status: 'PAID', // status_name[0][1]
      createdOn: '2026-11-22T06:00:00.000000Z',
      side: 'BUY', // order_type 1
      depositAmount: '0.100000000000000000', // amount_quote, digits kept
      withdrawAmount: '1.234567890000000000', // amount_base
      depositCurrency: 'BTC', // pair.quote
      withdrawCurrency: 'ETH', // pair.base
      depositAddress: 'bc1qdeposit',
      depositAddressExtraId: '',
      withdrawAddress: '0xwithdraw',
      withdrawAddressExtraId: '',
      refundAddress: '',
      refundAddressExtraId: '',
      paymentWindowMinutes: 60, // payment_window
      fixedRateDeadline: '2026-11-22T07:00:00.000000Z', // payment_deadline
      rate: '',
      depositTransaction: 'btc-deposit-hash', // transactions[type D].tx_id
      withdrawTransaction: '',
      refundTransaction: '',
    });
  });

  it('maps payout and refund transactions, extra ids and a SELL order', () => {
    const order = toOrderView(
      parseV1Order(
        v1OrderFixture({
          order_type: 0,
          status_name: [[16, 'COMPLETED']],
          withdraw_extra_id: 'memo-1',
          refund_extra_id: 'memo-2',
          refund_address: { type: 'R', name: null, address: 'bc1qrefund', currency_code: 'BTC' },
          transactions: [
            { type: 'W', tx_id: 'payout-1', amount: '1.0' },
            { type: 'W', tx_id: 'payout-2', amount: '1.0' },
            { type: 'R', tx_id: 'refund-1', amount: '0.1' },
          ],
        }),
      ),
    );
    expect(order).toMatchObject({
      side: 'SELL',
      status: 'COMPLETED',
      // the renames table holds for SELL too: amount_quote/pair.quote are deposited
      depositAmount: '0.100000000000000000',
      withdrawAmount: '1.234567890000000000',
      depositCurrency: 'BTC',
      withdrawCurrency: 'ETH',
      withdrawAddressExtraId: 'memo-1',
      refundAddress: 'bc1qrefund',
      refundAddressExtraId: 'memo-2',
      withdrawTransaction: 'payout-2',
      refundTransaction: 'refund-1',
      depositTransaction: '',
    });
  });

  it('tolerates unknown fields and null addresses', () => {
    const order = parseV1Order(
      v1OrderFixture({ brand_new_field: [1, 2], deposit_address: null, withdraw_address: null }),
    );
    expect(order.deposit_address).toBe('');
    expect(order.withdraw_address).toBe('');
  });

  it('names the field of a malformed v1 order', () => {
    expect(() => parseV1Order(v1OrderFixture({ amount_base: 1.5 }))).toThrow(/field "amount_base"/);
    expect(() => parseV1Order(v1OrderFixture({ status_name: [] }))).toThrow(/field "status_name"/);
    expect(() => parseV1Order(v1OrderFixture({ order_type: 7 }))).toThrow(WorkerError);
  });

  it('converts the v1 list envelope', () => {
    const page = parseV1OrderPage({
      count: 1,
      next: 'http://x/api/v1/orders/?page=2',
      previous: null,
      results: [v1OrderFixture()],
    });
    expect(page.results.map((o) => o.status)).toEqual(['PAID']);
    expect(page.next).toBe('http://x/api/v1/orders/?page=2');
  });
});
