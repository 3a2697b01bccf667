// Read-only indexes over the validated config: who owns which key, code and token; currencies, networks and
// pairs by name. Pair names are `<to><from>` (v1 base then quote), e.g. ETHBTC sends BTC and receives ETH.
import type {
  CurrencyConfig,
  PairConfig,
  PartnerConfig,
  SandboxConfig,
  TradingMode,
  WebhookConfig,
} from '../config.ts';
import { decimal, divide, multiply } from './decimal.ts';

export interface ApiKeyRecord {
  key: string;
  mode: TradingMode;
  partner: PartnerConfig;
}

export interface ReferralCodeRecord {
  code: string;
  token: string | undefined;
  preScreening: 'trusted' | 'refused' | undefined;
  allowReferralRate: boolean;
  partner: PartnerConfig;
}

export interface PairRecord {
  name: string;
  from: CurrencyConfig;
  to: CurrencyConfig;
  rate: bigint;
  withdrawalFee: bigint;
  minDeposit: bigint;
  maxDeposit: bigint;
  minWithdraw: bigint;
  maxWithdraw: bigint;
  disabled: boolean;
  etaSeconds: number;
  /** Same-chain when both currencies live on one network (DeFi quoting distinguishes the two). */
  chainKind: 'same-chain' | 'cross-chain';
  isFiat: boolean;
  config: PairConfig;
}

export interface WebhookRecord {
  config: WebhookConfig;
  partner: PartnerConfig;
}

export interface World {
  config: SandboxConfig;
  apiKey(key: string): ApiKeyRecord | undefined;
  referralCode(code: string): ReferralCodeRecord | undefined;
  referralToken(token: string): ReferralCodeRecord | undefined;
  currency(code: string): CurrencyConfig | undefined;
  currencies(): readonly CurrencyConfig[];
  network(name: string): SandboxConfig['networks'][number] | undefined;
  pair(name: string): PairRecord | undefined;
  pairFor(from: string, to: string): PairRecord | undefined;
  pairs(): readonly PairRecord[];
  partner(id: string): PartnerConfig | undefined;
  webhooks(): readonly WebhookRecord[];
}

function upper(text: string): string {
  return text.toUpperCase();
}

export function buildWorld(config: SandboxConfig): World {
  const apiKeys = new Map<string, ApiKeyRecord>();
  const codes = new Map<string, ReferralCodeRecord>();
  const tokens = new Map<string, ReferralCodeRecord>();
  for (const partner of config.partners) {
    for (const key of partner.apiKeys) apiKeys.set(key.key, { key: key.key, mode: key.mode, partner });
    for (const code of partner.referralCodes) {
      const record: ReferralCodeRecord = {
        code: code.code,
        token: code.token,
        preScreening: code.preScreening,
        allowReferralRate: code.allowReferralRate,
        partner,
      };
      codes.set(upper(code.code), record);
      if (code.token) tokens.set(code.token, record);
    }
  }
  const currencies = new Map(config.currencies.map((c) => [upper(c.code), c]));
  const networks = new Map(config.networks.map((n) => [upper(n.name), n]));
  const pairs = new Map<string, PairRecord>();
  for (const pair of config.pairs) {
    const from = currencies.get(upper(pair.from));
    const to = currencies.get(upper(pair.to));
    if (!from || !to) continue;
    const rate = decimal(pair.rate);
    const fee = decimal(pair.withdrawalFee);
    const minDeposit = decimal(pair.minDepositAmount);
    const maxDeposit = decimal(pair.maxDepositAmount);
    const derive = (deposit: bigint): bigint => {
      const value = multiply(deposit, rate) - fee;
      return value > 0n ? value : 0n;
    };
    const name = `${to.code}${from.code}`;
    pairs.set(upper(name), {
      name,
      from,
      to,
      rate,
      withdrawalFee: fee,
      minDeposit,
      maxDeposit,
      minWithdraw: pair.minWithdrawAmount ? decimal(pair.minWithdrawAmount) : derive(minDeposit),
      maxWithdraw: pair.maxWithdrawAmount ? decimal(pair.maxWithdrawAmount) : derive(maxDeposit),
      disabled: pair.disabled,
      etaSeconds: pair.etaSeconds,
      chainKind: from.network === to.network ? 'same-chain' : 'cross-chain',
      isFiat: from.isFiat || to.isFiat,
      config: pair,
    });
  }
  const webhooks = config.partners.flatMap((partner) =>
    partner.webhooks.map((w) => ({ config: w, partner })),
  );
  return {
    config,
    apiKey: (key) => apiKeys.get(key),
    referralCode: (code) => codes.get(upper(code)),
    referralToken: (token) => tokens.get(token),
    currency: (code) => currencies.get(upper(code)),
    currencies: () => config.currencies,
    network: (name) => networks.get(upper(name)),
    pair: (name) => pairs.get(upper(name)),
    pairFor: (from, to) => pairs.get(upper(`${to}${from}`)),
    pairs: () => [...pairs.values()],
    partner: (id) => config.partners.find((p) => p.id === id),
    webhooks: () => webhooks,
  };
}

/** Deposit needed to receive `withdraw` at `rate` after the fee. */
export function depositFor(withdraw: bigint, rate: bigint, fee: bigint): bigint {
  const exact = divide(withdraw + fee, rate);
  return multiply(exact, rate) - fee < withdraw ? exact + 1n : exact;
}

/** Withdraw amount received for `deposit` at `rate` after the fee (never negative). */
export function withdrawFor(deposit: bigint, rate: bigint, fee: bigint): bigint {
  const value = multiply(deposit, rate) - fee;
  return value > 0n ? value : 0n;
}
