// Public face of src/exchange/: the v2 client, its errors and classification table, the request budget, the v1
// mapping and webhook verification. The rest of the worker imports from here only.
export {
  ExchangeClient,
  defaultPriorities,
  defaultTimeoutsMs,
  minimumSlowQuoteTimeoutMs,
  type CallOptions,
  type ExchangeClientOptions,
  type ExchangeLogger,
  type ExchangeOperation,
  type ListOrdersParams,
  type OrderPage,
  type RetryOptions,
} from './client.ts';
export {
  ExchangeError,
  isExchangeError,
  toExchangeFailure,
  type EndpointName,
  type ExchangeErrorInit,
} from './errors.ts';
export {
  classificationTable,
  classifyErrorResponse,
  classifyHttpStatus,
  type Classification,
  type ClassificationRow,
} from './error-classification.ts';
export {
  LocalRequestBudget,
  apiKeyFingerprint,
  budgetPolicy,
  exchangeThrottle,
  type BudgetPolicy,
  type BudgetPolicyInput,
  type RequestBudget,
  type RequestPriority,
} from './request-budget.ts';
export {
  RedisRequestBudget,
  type BudgetRedis,
  type RedisRequestBudgetOptions,
} from './redis-request-budget.ts';
export { toOrderView, currencyRefCode } from './order-view.ts';
export type {
  CreateOrderRequest,
  DecimalString,
  PreScreeningRequest,
  PreScreeningResult,
  RateQuery,
  WireCurrency,
  WireNetwork,
  WireOrder,
  WirePair,
  WireRandomPair,
  WireRate,
} from './schemas.ts';
export { parseV1Order, parseV1OrderPage, v1OrderToV2, v1OrderTypes } from './v1-mapping.ts';
export {
  defaultWebhookToleranceMs,
  signWebhook,
  verifyWebhookSignature,
  webhookVerifier,
  webhookSignatureHeader,
  webhookTimestampHeader,
  type VerifyWebhookInput,
  type WebhookVerification,
} from './webhook-signature.ts';
export {
  parseOrderWebhook,
  readOrderWebhook,
  webhookPayloadVersion,
  type OrderWebhook,
  type WebhookPayloadVersion,
} from './order-webhook.ts';
export {
  ADDRESS_PAIRING_FAILURE_REASON,
  addressPairingReasons,
  checkAddressPairing,
  type AddressPairingReason,
  type AddressPairingRequest,
  type AddressPairingResult,
} from './address-pairing.ts';
export {
  CurrencyCatalog,
  buildCatalogSnapshot,
  catalogUnavailable,
  type CatalogCurrency,
  type CatalogCurrencyNetwork,
  type CatalogNetwork,
  type CatalogSnapshot,
  type CatalogSource,
  type CurrencyCatalogOptions,
} from './currency-catalog.ts';
