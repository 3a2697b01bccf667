// A v1 order as the legacy API and v1 webhooks send it (the document's v1 field table).
export function v1OrderFixture(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    order_type: 1,
    amount_base: '1.234567890000000000',
    amount_quote: '0.100000000000000000',
    is_default_rule: false,
    from_default_rule: false,
    unique_reference: 'V1REF42',
    pair: {
      name: 'ETHBTC',
      base: { code: 'ETH', name: 'Ethereum' },
      quote: { code: 'BTC', name: 'Bitcoin' },
      fee_ask: '0.00500000',
      fee_bid: '0.00500000',
    },
    withdraw_address: { type: 'W', name: '', address: '0xwithdraw', currency_code: 'ETH' },
    deposit_address: { type: 'D', name: '', address: 'bc1qdeposit', currency_code: 'BTC' },
    refund_address: null,
    user_marked_as_paid: false,
    created_on: '2026-11-22T06:00:00.000000Z',
    payment_window: 60,
    payment_deadline: '2026-11-22T07:00:00.000000Z',
    kyc_deadline: null,
    status_name: [[13, 'PAID']],
    transactions: [
      {
        created_on: '2026-11-22T06:10:00Z',
        modified_on: '2026-11-22T06:11:00Z',
        type: 'D',
        address_to: 17,
        tx_id: 'btc-deposit-hash',
        confirmations: 2,
        amount: '0.10000000',
        is_verified: true,
        is_completed: false,
        time: null,
        currency: 'BTC',
      },
    ],
    referral_code: [
      { code: 'partner_1', created_on: '2026-01-01T00:00:00Z', modified_on: '2026-01-01T00:00:00Z' },
    ],
    withdrawal_fee: 0.001,
    withdrawal_fee_quote: 0.0001,
    user_provided_amount: 1,
    ...overrides,
  };
}
