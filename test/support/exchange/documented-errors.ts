// One documented error per classification row, as the exchange would send it (status, body, headers), with ids and
// values interpolated. Shared by the unit test of the table and the adapter tests that replay them over HTTP.
import type { FailureAction } from '../../../machines/domain.ts';

export interface DocumentedError {
  readonly code: string;
  readonly action: FailureAction;
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  readonly retryAfterMs?: number;
  /** The endpoint the document names for it. */
  readonly where: 'rate' | 'orders' | 'patch' | 'pre_screening' | 'any';
}

export const documentedErrors: readonly DocumentedError[] = [
  {
    code: 'rate_id_invalid_or_expired',
    action: 'requote',
    status: 400,
    where: 'orders',
    body: { detail: "rate_id 'q_7f3a9c01' is invalid or expired." },
  },
  {
    code: 'rate_id_quote_expired',
    action: 'requote',
    status: 400,
    where: 'orders',
    body: { errors: { rate_id: ['The quote for this rate_id has expired. Please request a new rate.'] } },
  },
  {
    code: 'pair_temporarily_unavailable',
    action: 'requote',
    status: 400,
    where: 'orders',
    body: { detail: 'Pair ETHBTC is temporarily unavailable.' },
  },
  {
    code: 'cross_chain_quote_unavailable',
    action: 'backoff',
    status: 400,
    where: 'orders',
    body: { errors: { non_field_errors: ['Unable to fetch a cross-chain fixed-rate quote. Please retry.'] } },
  },
  {
    code: 'actionable_quote_unavailable',
    action: 'backoff',
    status: 400,
    where: 'rate',
    retryAfterMs: 15_000,
    body: {
      detail:
        'Unable to fetch actionable same-chain DeFi fixed-rate quote for the provided deposit_amount. Please retry.',
    },
  },
  {
    code: 'quote_provider_unavailable',
    action: 'backoff',
    status: 400,
    where: 'orders',
    body: { detail: 'Quote provider is unavailable. Please request a new rate.' },
  },
  {
    code: 'rate_id_non_actionable',
    action: 'non_actionable',
    status: 400,
    where: 'orders',
    body: { detail: 'The provided fixed-rate rate_id is non-actionable for this route.' },
  },
  {
    code: 'rate_id_mode_mismatch',
    action: 'mode_mismatch',
    status: 400,
    where: 'orders',
    body: {
      detail:
        'This rate_id was issued for a DeFi quote and cannot be used to create a standard (CeFi) order.',
    },
  },
  {
    code: 'referral_rate_no_longer_matches',
    action: 'requote',
    status: 400,
    where: 'orders',
    body: {
      detail:
        'Promised applied referral rate no longer matches current partner limits; request a new quote (rate_id).',
    },
  },
  {
    code: 'markup_and_referral_rate',
    action: 'fatal',
    status: 400,
    where: 'rate',
    body: {
      errors: {
        markup: [
          'Provide either markup (basis points, preferred) or the legacy referral_rate (decimal fraction), not both.',
        ],
      },
    },
  },
  {
    code: 'markup_over_cap',
    action: 'fatal',
    status: 400,
    where: 'orders',
    body: {
      errors: { markup: ['Must not exceed 150 basis points (absolute cap on dynamic referral rates).'] },
    },
  },
  {
    code: 'referral_rate_not_allowed',
    action: 'fatal',
    status: 400,
    where: 'rate',
    body: { errors: { referral_rate: ['referral_rate is not allowed for this referral code'] } },
  },
  {
    code: 'rate_id_on_limit_order',
    action: 'fatal',
    status: 400,
    where: 'orders',
    body: {
      errors: {
        rate_id: ['rate_id is not supported for limit orders. Remove rate_id when is_limit_order is true.'],
      },
    },
  },
  {
    code: 'limit_ttl_too_short',
    action: 'fatal',
    status: 400,
    where: 'orders',
    body: { errors: { limit_ttl: ['limit_ttl must be at least 600 seconds (10 minutes).'] } },
  },
  {
    code: 'deposit_amount_required_cross_chain',
    action: 'fatal',
    status: 400,
    where: 'orders',
    body: {
      errors: { deposit_amount: ['Deposit amount (amount_quote) is required for cross-chain fixed-rate'] },
    },
  },
  {
    code: 'address_invalid',
    action: 'fatal',
    status: 400,
    where: 'orders',
    body: { errors: { withdraw_address: ['0xZZnot-an-address has invalid characters for a valid value'] } },
  },
  {
    // Not in the interface document: the shape EdgeApp's client reads from /rate/ and /orders/ (DRF's top level).
    code: 'ip_risk',
    action: 'fatal',
    status: 400,
    where: 'orders',
    body: { non_field_errors: ["User's IP has risk."] },
  },
  {
    code: 'pre_screening_amounts_exclusive',
    action: 'fatal',
    status: 400,
    where: 'pre_screening',
    body: { status: 'failed', message: 'Only one of deposit_amount or withdraw_amount can be provided' },
  },
  {
    code: 'deposit_already_recorded',
    action: 'idempotent_success',
    status: 400,
    where: 'patch',
    body: {
      errors: {
        deposit_transaction: ['External deposit notification with tx_id 0x9f2c44d1e0already exists'],
      },
    },
  },
  {
    code: 'same_chain_quote_throttled',
    action: 'throttled',
    status: 429,
    where: 'rate',
    body: { detail: 'Too many same-chain fixed-rate quote requests. Slow down.' },
  },
  {
    code: 'cross_chain_quote_throttled',
    action: 'throttled',
    status: 429,
    where: 'rate',
    retryAfterMs: 7_000,
    headers: { 'retry-after': '7' },
    body: { detail: 'Too many cross-chain fixed-rate quote requests for this key.' },
  },
  {
    code: 'throttled',
    action: 'throttled',
    status: 429,
    where: 'any',
    retryAfterMs: 3_000,
    headers: { 'retry-after': '3' },
    body: { detail: 'Request was throttled. Expected available in 3 seconds.' },
  },
  {
    code: 'credentials_missing',
    action: 'fatal',
    status: 401,
    where: 'any',
    body: { detail: 'Authentication credentials were not provided.' },
  },
  {
    // The document gives the rule (a referral code not owned by the key's owner -> 401), not its wording.
    code: 'referral_code_not_owned',
    action: 'fatal',
    status: 401,
    where: 'any',
    body: { detail: 'This referral code belongs to another partner.' },
  },
];
