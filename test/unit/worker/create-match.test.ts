// Whether an exchange order is the one a create asked for, as the exchange may have stored it: an 18-digit amount
// stored with 8 digits is a match; what only a normalisation could explain (an extra id "" against one we never
// sent, a base58 address in another case, an amount just beyond rounding) is a near match, never "another order".
import { describe, expect, it } from 'vitest';
import type { ExchangeOrderView } from '../../../machines/domain.ts';
import type { CreateOrderInput } from '../../../machines/order-types.ts';
import { amountAsStored, matchCreate } from '../../../src/worker/create-match.ts';

const evm = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const base58 = '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2';

const create: CreateOrderInput = {
  orderId: 'o-1',
  mode: 'cefi',
  attempt: 1,
  depositCurrency: 'BTC',
  withdrawCurrency: 'ETH',
  depositAmount: '0.123456789012345678',
  withdrawAmount: null,
  withdrawAddress: evm,
  withdrawAddressExtraId: null,
  refundAddress: null,
  refundAddressExtraId: null,
  referralCode: null,
  markup: null,
  side: null,
  rateId: null,
  isLimitOrder: false,
  limitTtlSeconds: null,
  userTimezone: null,
};

function stored(overrides: Partial<ExchangeOrderView> = {}): ExchangeOrderView {
  return {
    uniqueReference: 'R1',
    status: 'INITIAL',
    createdOn: '2026-11-22T06:00:00Z',
    side: 'BUY',
    depositAmount: '0.12345679',
    withdrawAmount: '1.00000000',
    depositCurrency: 'btc',
    withdrawCurrency: 'eth',
    depositAddress: 'bc1qdeposit',
    depositAddressExtraId: '',
    withdrawAddress: evm.toLowerCase(),
    withdrawAddressExtraId: '',
    refundAddress: '',
    refundAddressExtraId: '',
    paymentWindowMinutes: 60,
    fixedRateDeadline: null,
    rate: '1',
    depositTransaction: '',
    withdrawTransaction: '',
    refundTransaction: '',
    ...overrides,
  };
}

describe('matchCreate', () => {
  it('matches an 18-digit amount the exchange stored with 8 digits, rounded or cut', () => {
    expect(matchCreate(stored(), create)).toEqual({ kind: 'match' });
    expect(matchCreate(stored({ depositAmount: '0.12345678' }), create)).toEqual({ kind: 'match' });
    expect(amountAsStored('0.1', '0.10000000')).toBe(true);
  });

  it('takes an amount beyond what rounding explains, but within 1%, as a near match', () => {
    expect(matchCreate(stored({ depositAmount: '0.12345680' }), create)).toMatchObject({
      kind: 'near',
      differences: [{ field: 'deposit_amount', ours: create.depositAmount, theirs: '0.12345680' }],
    });
    // An exchange keeping only 6 digits: not ours as assumed, and not another order either.
    expect(matchCreate(stored({ depositAmount: '0.123457' }), create)).toMatchObject({ kind: 'near' });
    expect(matchCreate(stored({ depositAmount: '0.2' }), create)).toEqual({ kind: 'other' });
  });

  it('takes extra ids, refund addresses and address case that differ as near matches, never as matches', () => {
    expect(matchCreate(stored({ withdrawAddressExtraId: '12345' }), create)).toMatchObject({
      kind: 'near',
      differences: [{ field: 'withdraw_address_extra_id', ours: '', theirs: '12345' }],
    });
    expect(matchCreate(stored({ refundAddress: 'bc1qrefund' }), create)).toMatchObject({ kind: 'near' });
    expect(
      matchCreate(stored({ withdrawAddressExtraId: '' }), { ...create, withdrawAddressExtraId: '' }),
    ).toEqual({ kind: 'match' });
    const b58 = { ...create, withdrawAddress: base58 };
    expect(matchCreate(stored({ withdrawAddress: base58 }), b58)).toEqual({ kind: 'match' });
    expect(matchCreate(stored({ withdrawAddress: base58.toLowerCase() }), b58)).toMatchObject({
      kind: 'near',
      differences: [{ field: 'withdraw_address' }],
    });
  });

  it('is another order for another pair or another withdraw address', () => {
    expect(matchCreate(stored({ depositCurrency: 'LTC' }), create)).toEqual({ kind: 'other' });
    expect(
      matchCreate(stored({ withdrawAddress: '0x0000000000000000000000000000000000000001' }), create),
    ).toEqual({ kind: 'other' });
  });

  it('compares the withdraw amount when the create named only that one', () => {
    const byWithdraw = { ...create, depositAmount: null, withdrawAmount: '1.000000000000000001' };
    expect(matchCreate(stored({ depositAmount: '9' }), byWithdraw)).toEqual({ kind: 'match' });
    expect(matchCreate(stored({ withdrawAmount: '0.99999999' }), byWithdraw)).toMatchObject({
      kind: 'near',
    });
  });
});
