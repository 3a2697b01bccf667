// The sandbox's world, as a JSON file (SANDBOX_CONFIG) validated by zod: partners with their API keys per trading
// mode, referral codes and tokens, trusted pre-screening flags and webhook configurations; networks, currencies,
// pairs with rates and bounds; and the knobs of every limit. Types are inferred from the schema, never restated.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { addressFormatNames } from './addresses/address-formats.ts';
import { parseDecimal } from './domain/decimal.ts';

const decimalString = z
  .string()
  .refine(
    (value) => parseDecimal(value) !== undefined && !value.startsWith('-'),
    'must be a non-negative decimal',
  );

export const tradingModeSchema = z.enum(['cefi', 'cefi_fixed', 'defi']);
export type TradingMode = z.infer<typeof tradingModeSchema>;

const apiKeySchema = z.object({
  key: z.string().min(8),
  mode: tradingModeSchema,
  /** Only used in logs and docs; the key value itself is a secret. */
  label: z.string().optional(),
});

const referralCodeSchema = z.object({
  code: z
    .string()
    .max(20)
    .regex(/^[A-Za-z0-9_-]+$/),
  /** The value of the x-referral-token header that stands for this code. */
  token: z.string().min(8).optional(),
  /** Pre-screening access: `trusted` may call /pre_screening/, `refused` gets 403, absent gets 404. */
  preScreening: z.enum(['trusted', 'refused']).optional(),
  /** Whether the legacy referral_rate may be supplied with this code. */
  allowReferralRate: z.boolean().default(false),
});

export const webhookConfigSchema = z.object({
  id: z.string().min(1),
  url: z.url(),
  categories: z
    .array(z.enum(['order_status', 'kyc_status']))
    .min(1)
    .default(['order_status']),
  /** Legacy configurations default to v1, as documented. */
  payloadVersion: z.enum(['v1', 'v2']).default('v1'),
  secret: z.string().min(1).optional(),
  enabled: z.boolean().default(true),
});
export type WebhookConfig = z.infer<typeof webhookConfigSchema>;

const partnerSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  apiKeys: z.array(apiKeySchema).default([]),
  referralCodes: z.array(referralCodeSchema).default([]),
  webhooks: z.array(webhookConfigSchema).default([]),
  /** Partner-specific markup cap in basis points (lower than the global cap); quotes promising more go stale. */
  markupCapBps: z.int().nonnegative().optional(),
});
export type PartnerConfig = z.infer<typeof partnerSchema>;

const addressFormatSchema = z.union([z.enum(addressFormatNames), z.object({ pattern: z.string().min(1) })]);

const networkSchema = z.object({
  name: z.string().min(1),
  displayName: z.string().min(1),
  nativeCurrency: z.string().min(1),
  isEvm: z.boolean().default(false),
});

const currencySchema = z.object({
  code: z.string().min(1),
  name: z.string().min(1),
  network: z.string().min(1),
  /** null for the network's native currency. */
  contractAddress: z.string().nullable().default(null),
  isFiat: z.boolean().default(false),
  decimals: z.int().min(0).max(18).default(8),
  addressFormat: addressFormatSchema,
  /** Memo / destination-tag currencies mint a deposit_address_extra_id. */
  hasExtraId: z.boolean().default(false),
  minConfirmations: z.int().nonnegative().default(1),
});
export type CurrencyConfig = z.infer<typeof currencySchema>;

const pairSchema = z.object({
  /** Currency the user sends (v1 quote). */
  from: z.string().min(1),
  /** Currency the user receives (v1 base). */
  to: z.string().min(1),
  /** Units of `to` received per unit of `from`, before markup and withdrawal fee. */
  rate: decimalString,
  withdrawalFee: decimalString.default('0'),
  minDepositAmount: decimalString,
  maxDepositAmount: decimalString,
  /** Derived from the deposit bounds at the pair rate when omitted. */
  minWithdrawAmount: decimalString.optional(),
  maxWithdrawAmount: decimalString.optional(),
  disabled: z.boolean().default(false),
  /** Estimated completion time reported by include_eta. */
  etaSeconds: z.int().positive().default(900),
});
export type PairConfig = z.infer<typeof pairSchema>;

/** A section of knobs, each with its default, so the whole section may be left out of the file. */
function knobs<Shape extends z.ZodRawShape>(shape: Shape) {
  return z.object(shape).prefault({} as z.input<z.ZodObject<Shape>>);
}

export const sandboxConfigSchema = z
  .object({
    partners: z.array(partnerSchema).min(1),
    networks: z.array(networkSchema).min(1),
    currencies: z.array(currencySchema).min(2),
    pairs: z.array(pairSchema).min(1),
    limits: knobs({
      globalRequestsPerMinute: z.int().positive().default(2500),
      actionableCooldownMs: z.int().nonnegative().default(15_000),
      sameChainFixedRateQuotesPerMinute: z.int().positive().default(20),
      crossChainFixedRateQuotesPerMinute: z.int().positive().default(10),
      /** Whether the tighter fixed-rate throttles send Retry-After (the document says they may not). */
      fixedRateThrottleRetryAfter: z.boolean().default(false),
      markupCapBps: z.int().nonnegative().default(500),
    }),
    quotes: knobs({
      /** Lifetime of a rate_id. */
      ttlSeconds: z.int().positive().default(60),
      /** How long producing an actionable DeFi quote takes (GET /rate/?actionable_quote=true, DeFi POST /orders/). */
      actionableDelayMs: z.int().nonnegative().default(2_000),
    }),
    orders: knobs({
      paymentWindowMinutes: z.int().positive().default(60),
      defaultLimitTtlSeconds: z.int().positive().default(86_400),
      v1PageSize: z.int().positive().default(20),
      v2PageSize: z.int().positive().default(20),
    }),
    webhooks: knobs({
      timeoutMs: z.int().positive().default(5_000),
      /** Monitoring window of the auto-disable rule. */
      errorWindowMs: z.int().positive().default(600_000),
      /** Fewest deliveries in the window before the error rate can disable an endpoint. */
      minDeliveriesInWindow: z.int().positive().default(4),
    }),
    schedule: knobs({
      /** Advance every order automatically (deposit seen, confirmed, ... completed) on the sandbox clock. */
      enabled: z.boolean().default(false),
      stepMs: z.int().positive().default(5_000),
      outcome: z.enum(['completed', 'refunded', 'canceled']).default('completed'),
    }),
    preScreening: knobs({
      /** IPs (exact) whose pre-screening answers `failed`. */
      riskyIps: z.array(z.string()).default([]),
    }),
    randomPairAttempts: z.int().positive().default(10),
    v1Users: z
      .array(
        z.object({ username: z.string().min(1), password: z.string().min(1), email: z.string().default('') }),
      )
      .default([]),
  })
  .superRefine((config, ctx) => {
    const codes = new Set(config.currencies.map((c) => c.code));
    const networks = new Set(config.networks.map((n) => n.name));
    for (const currency of config.currencies) {
      if (!networks.has(currency.network)) {
        ctx.addIssue({
          code: 'custom',
          message: `currency ${currency.code}: unknown network ${currency.network}`,
        });
      }
    }
    for (const pair of config.pairs) {
      for (const code of [pair.from, pair.to]) {
        if (!codes.has(code))
          ctx.addIssue({ code: 'custom', message: `pair ${pair.to}${pair.from}: unknown ${code}` });
      }
    }
    const keys = config.partners.flatMap((p) => p.apiKeys.map((k) => k.key));
    if (new Set(keys).size !== keys.length)
      ctx.addIssue({ code: 'custom', message: 'API keys must be unique' });
    const refCodes = config.partners.flatMap((p) => p.referralCodes.map((r) => r.code));
    if (new Set(refCodes).size !== refCodes.length) {
      ctx.addIssue({ code: 'custom', message: 'referral codes must be unique' });
    }
  });

export type SandboxConfig = z.infer<typeof sandboxConfigSchema>;
/** What a config file or a test may write: every defaulted field optional. */
export type SandboxConfigInput = z.input<typeof sandboxConfigSchema>;

export function parseSandboxConfig(input: unknown): SandboxConfig {
  const result = sandboxConfigSchema.safeParse(input);
  if (!result.success) throw new Error(`invalid sandbox config:\n${z.prettifyError(result.error)}`);
  return result.data;
}

export async function loadSandboxConfigFile(path: string): Promise<SandboxConfig> {
  const text = await readFile(path, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`sandbox config ${path} is not JSON: ${(error as Error).message}`, { cause: error });
  }
  return parseSandboxConfig(json);
}
