// Every message text the exchange document names, in one table, so handlers and tests quote the same words.
// Clients match these by stable substrings; the sandbox reproduces the document's wording exactly, including
// its quirks (no space before "already" in the idempotent-conflict message).

export const messages = {
  // Authentication and throttling (DRF wording, which the exchange uses).
  credentialsNotProvided: 'Authentication credentials were not provided.',
  referralNotOwned: 'The referral code does not belong to the owner of this API key.',
  throttled: (seconds: number) => `Request was throttled. Expected available in ${seconds} seconds.`,
  sameChainThrottled: (seconds: number) =>
    `Too many same-chain fixed-rate quote requests. Expected available in ${seconds} seconds.`,
  crossChainThrottled: (seconds: number) =>
    `Too many cross-chain fixed-rate quote requests. Expected available in ${seconds} seconds.`,
  sameChainCooldown: (seconds: number) =>
    `Too many same-chain fixed-rate quote requests for this pair and amount. Expected available in ${seconds} seconds.`,
  crossChainCooldown: (seconds: number) =>
    `Too many cross-chain fixed-rate quote requests for this pair and amount. Expected available in ${seconds} seconds.`,

  // Quote and rate errors.
  rateIdInvalidOrExpired: (rateId: string) => `rate_id '${rateId}' is invalid or expired.`,
  quoteExpired: 'The quote for this rate_id has expired. Please request a new rate.',
  pairTemporarilyUnavailable: (pair: string) => `Pair ${pair} is temporarily unavailable.`,
  crossChainQuoteFailed: 'Unable to fetch a cross-chain fixed-rate quote. Please retry.',
  sameChainActionableQuoteFailed:
    'Unable to fetch actionable same-chain DeFi fixed-rate quote for the provided deposit_amount. Please retry.',
  quoteProviderUnavailable: 'Quote provider is unavailable. Please request a new rate.',
  rateIdNonActionable: 'The provided fixed-rate rate_id is non-actionable for this route.',
  defiRateIdForCefiOrder:
    'This rate_id was issued for a DeFi quote and cannot be used to create a standard (CeFi) order.',
  promisedReferralRateMismatch:
    'Promised applied referral rate no longer matches current partner limits; request a new quote (rate_id).',

  // Request validation errors.
  markupAndReferralRate:
    'Provide either markup (basis points, preferred) or the legacy referral_rate (decimal fraction), not both.',
  markupCap: (cap: number) => `Must not exceed ${cap} basis points (absolute cap on dynamic referral rates).`,
  referralRateNotAllowed: 'referral_rate is not allowed for this referral code',
  rateIdWithLimitOrder:
    'rate_id is not supported for limit orders. Remove rate_id when is_limit_order is true.',
  limitTtlTooShort: 'limit_ttl must be at least 600 seconds (10 minutes).',
  crossChainDepositAmountRequired: 'Deposit amount (amount_quote) is required for cross-chain fixed-rate',
  invalidAddress: (value: string) => `${value} has invalid characters for a valid value`,
  preScreeningOneAmount: 'Only one of deposit_amount or withdraw_amount can be provided',
  depositTransactionExists: (hash: string) =>
    `External deposit notification with tx_id ${hash}already exists`,

  // Generic DRF field messages (the exchange is a Django REST framework service).
  required: 'This field is required.',
  mayNotBeNull: 'This field may not be null.',
  mayNotBeBlank: 'This field may not be blank.',
  notAString: 'Not a valid string.',
  invalidNumber: 'A valid number is required.',
  invalidInteger: 'A valid integer is required.',
  invalidBoolean: 'Must be a valid boolean.',
  invalidChoice: (value: string) => `"${value}" is not a valid choice.`,
  maxLength: (n: number) => `Ensure this field has no more than ${n} characters.`,
  minValue: (min: string) => `Ensure this value is greater than or equal to ${min}.`,
  maxValue: (max: string) => `Ensure this value is less than or equal to ${max}.`,
  notFound: 'Not found.',
  methodNotAllowed: (method: string) => `Method "${method}" not allowed.`,
  jsonParseError: (reason: string) => `JSON parse error - ${reason}`,
  expectedObject: (got: string) => `Invalid data. Expected a dictionary, but got ${got}.`,
} as const;
