// The built-in world used when SANDBOX_CONFIG is not set. Its keys and tokens are public demo values listed in
// docs/sandbox.md; nothing here is a secret. Rates are round numbers so previews are easy to check by hand.
import type { SandboxConfigInput } from './config.ts';

export const demoKeys = {
  cefi: 'sandbox-demo-cefi-key',
  cefiFixed: 'sandbox-demo-cefi-fixed-key',
  defi: 'sandbox-demo-defi-key',
  otherPartnerCefi: 'sandbox-other-cefi-key',
} as const;

export const demoReferral = {
  code: 'DEMO',
  token: 'sandbox-demo-ref-token',
  defiCode: 'DEMO_DEFI',
  defiToken: 'sandbox-demo-defi-ref-token',
  otherPartnerCode: 'OTHER',
  otherPartnerToken: 'sandbox-other-ref-token',
  refusedCode: 'REFUSED',
  refusedToken: 'sandbox-refused-ref-token',
} as const;

export const demoConfig: SandboxConfigInput = {
  partners: [
    {
      id: 'demo',
      name: 'Demo partner',
      apiKeys: [
        { key: demoKeys.cefi, mode: 'cefi', label: 'demo CeFi' },
        { key: demoKeys.cefiFixed, mode: 'cefi_fixed', label: 'demo CeFi fixed-rate' },
        { key: demoKeys.defi, mode: 'defi', label: 'demo DeFi' },
      ],
      referralCodes: [
        { code: demoReferral.code, token: demoReferral.token, preScreening: 'trusted', allowReferralRate: true },
        { code: demoReferral.defiCode, token: demoReferral.defiToken },
      ],
      webhooks: [],
    },
    {
      id: 'other',
      name: 'Other partner',
      apiKeys: [{ key: demoKeys.otherPartnerCefi, mode: 'cefi', label: 'other CeFi' }],
      referralCodes: [
        { code: demoReferral.otherPartnerCode, token: demoReferral.otherPartnerToken },
        { code: demoReferral.refusedCode, token: demoReferral.refusedToken, preScreening: 'refused' },
      ],
    },
  ],
  networks: [
    { name: 'BTC', displayName: 'Bitcoin', nativeCurrency: 'BTC' },
    { name: 'ETH', displayName: 'Ethereum', nativeCurrency: 'ETH', isEvm: true },
    { name: 'LTC', displayName: 'Litecoin', nativeCurrency: 'LTC' },
    { name: 'DOGE', displayName: 'Dogecoin', nativeCurrency: 'DOGE' },
    { name: 'TRX', displayName: 'Tron', nativeCurrency: 'TRX' },
    { name: 'XRP', displayName: 'XRP Ledger', nativeCurrency: 'XRP' },
    { name: 'SEPA', displayName: 'SEPA bank transfer', nativeCurrency: 'EUR' },
  ],
  currencies: [
    { code: 'BTC', name: 'Bitcoin', network: 'BTC', addressFormat: 'bitcoin', minConfirmations: 2 },
    { code: 'ETH', name: 'Ether', network: 'ETH', addressFormat: 'evm', decimals: 18, minConfirmations: 12 },
    {
      code: 'USDT',
      name: 'Tether USD (ERC-20)',
      network: 'ETH',
      contractAddress: '0xdAC17F958D2ee523a2206206994597C13D831ec7',
      addressFormat: 'evm',
      decimals: 6,
      minConfirmations: 12,
    },
    {
      code: 'USDC',
      name: 'USD Coin (ERC-20)',
      network: 'ETH',
      contractAddress: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      addressFormat: 'evm',
      decimals: 6,
      minConfirmations: 12,
    },
    { code: 'LTC', name: 'Litecoin', network: 'LTC', addressFormat: 'litecoin', minConfirmations: 6 },
    { code: 'DOGE', name: 'Dogecoin', network: 'DOGE', addressFormat: 'dogecoin', minConfirmations: 6 },
    { code: 'TRX', name: 'Tron', network: 'TRX', addressFormat: 'tron', decimals: 6, minConfirmations: 20 },
    {
      code: 'XRP',
      name: 'XRP',
      network: 'XRP',
      addressFormat: { pattern: '^r[1-9A-HJ-NP-Za-km-z]{24,34}$' },
      decimals: 6,
      hasExtraId: true,
    },
    { code: 'EUR', name: 'Euro', network: 'SEPA', addressFormat: 'iban', isFiat: true, decimals: 2, minConfirmations: 0 },
  ],
  pairs: [
    { from: 'BTC', to: 'ETH', rate: '30', withdrawalFee: '0.005', minDepositAmount: '0.001', maxDepositAmount: '5' },
    { from: 'ETH', to: 'BTC', rate: '0.033', withdrawalFee: '0.0001', minDepositAmount: '0.03', maxDepositAmount: '150' },
    { from: 'ETH', to: 'USDT', rate: '3000', withdrawalFee: '5', minDepositAmount: '0.01', maxDepositAmount: '100' },
    { from: 'USDT', to: 'ETH', rate: '0.00033', withdrawalFee: '0.002', minDepositAmount: '20', maxDepositAmount: '300000' },
    { from: 'USDT', to: 'USDC', rate: '0.999', withdrawalFee: '1', minDepositAmount: '20', maxDepositAmount: '100000' },
    { from: 'LTC', to: 'BTC', rate: '0.0011', withdrawalFee: '0.0001', minDepositAmount: '0.5', maxDepositAmount: '1000' },
    { from: 'BTC', to: 'LTC', rate: '900', withdrawalFee: '0.001', minDepositAmount: '0.001', maxDepositAmount: '5' },
    { from: 'TRX', to: 'USDT', rate: '0.12', withdrawalFee: '5', minDepositAmount: '200', maxDepositAmount: '1000000' },
    { from: 'BTC', to: 'XRP', rate: '40000', withdrawalFee: '0.25', minDepositAmount: '0.001', maxDepositAmount: '5' },
    { from: 'EUR', to: 'BTC', rate: '0.0000105', withdrawalFee: '0.0001', minDepositAmount: '50', maxDepositAmount: '20000' },
    { from: 'BTC', to: 'EUR', rate: '95000', withdrawalFee: '1', minDepositAmount: '0.001', maxDepositAmount: '2' },
    { from: 'BTC', to: 'DOGE', rate: '600000', minDepositAmount: '0.001', maxDepositAmount: '1', disabled: true },
  ],
  preScreening: { riskyIps: ['203.0.113.66'] },
  v1Users: [{ username: 'demo-user', password: 'demo-password', email: 'demo@example.com' }],
};
