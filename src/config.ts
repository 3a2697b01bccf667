// Configuration: parsed once from the environment by one zod schema and frozen. Nothing else reads process.env.
// An invalid configuration stops start-up with one line per problem, naming the variable, never its value
// when the variable is a secret.
import { hostname } from 'node:os';
import { z } from 'zod';

const secretVariables = new Set([
  'EXCHANGE_API_KEY_DEFI',
  'EXCHANGE_API_KEY_CEFI',
  'EXCHANGE_API_KEY_CEFI_FIXED',
  'EXCHANGE_REFERRAL_TOKEN',
  'WEBHOOK_SECRET',
]);

const httpUrl = z
  .string()
  .trim()
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL')
  .transform((value) => value.replace(/\/+$/, ''));

const optionalSecret = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const intFromEnv = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

/** The state topic: TOPIC_STATE, else `<TOPIC_COMMANDS>.state`. */
function stateTopicOf(value: { TOPIC_COMMANDS: string; TOPIC_STATE?: string | undefined }): string {
  return value.TOPIC_STATE ?? `${value.TOPIC_COMMANDS}.state`;
}

const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a valid Kafka topic name');

export const configSchema = z
  .object({
    KAFKA_BROKERS: z
      .string({ error: 'is required (comma-separated host:port list)' })
      .transform((value) =>
        value
          .split(',')
          .map((broker) => broker.trim())
          .filter(Boolean),
      )
      .pipe(
        z
          .array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'each broker must be host:port'))
          .min(1, 'needs at least one broker'),
      ),
    REDIS_URL: z
      .string({ error: 'is required' })
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://'),
    EXCHANGE_API_URL: httpUrl,
    EXCHANGE_API_V1_URL: httpUrl.optional(),
    EXCHANGE_API_KEY_DEFI: optionalSecret,
    EXCHANGE_API_KEY_CEFI: optionalSecret,
    EXCHANGE_API_KEY_CEFI_FIXED: optionalSecret,
    EXCHANGE_REFERRAL_TOKEN: optionalSecret,
    WEBHOOK_SECRET: optionalSecret,
    HTTP_PORT: intFromEnv(8080, 0, 65535),
    TOPIC_COMMANDS: topicName.default('exchange.orders.commands'),
    TOPIC_EVENTS: topicName.default('exchange.orders.events'),
    TOPIC_STATE: topicName.optional(),
    TOPIC_PARTITIONS: intFromEnv(12, 1, 1000),
    TOPIC_REPLICATION_FACTOR: intFromEnv(1, 1, 10),
    CONSUMER_GROUP: z.string().min(1).default('exchange-order-worker'),
    WORKER_ID: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, . _ - only')
      .default(
        hostname()
          .replace(/[^A-Za-z0-9._-]/g, '-')
          .slice(0, 100) || 'worker',
      ),
    POLL_INTERVAL_MS: intFromEnv(30_000, 30_000, 60_000),
    RECONCILE_MAX_AGE_MS: intFromEnv(60_000, 30_000, 60_000),
    LEASE_TTL_MS: intFromEnv(15_000, 1_000, 300_000),
    MAX_ACTIVE_ORDERS: intFromEnv(50_000, 1, 1_000_000),
    MAX_INFLIGHT_EXCHANGE_CALLS: intFromEnv(200, 1, 100_000),
    API_BUDGET_PER_MINUTE: intFromEnv(2_500, 1, 100_000),
    QUOTE_COOLDOWN_MS: intFromEnv(15_000, 0, 120_000),
    SHUTDOWN_TIMEOUT_MS: intFromEnv(20_000, 1_000, 120_000),
    KAFKA_TRANSACTION_TIMEOUT_MS: intFromEnv(10_000, 1_000, 900_000),
    OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .transform((value) => ({
    kafkaBrokers: value.KAFKA_BROKERS,
    redisUrl: value.REDIS_URL,
    exchange: {
      baseUrl: value.EXCHANGE_API_URL,
      v1BaseUrl: value.EXCHANGE_API_V1_URL,
      credentials: {
        defi: value.EXCHANGE_API_KEY_DEFI,
        cefi: value.EXCHANGE_API_KEY_CEFI,
        cefi_fixed: value.EXCHANGE_API_KEY_CEFI_FIXED,
      },
      referralToken: value.EXCHANGE_REFERRAL_TOKEN,
      budgetPerMinute: value.API_BUDGET_PER_MINUTE,
    },
    webhookSecret: value.WEBHOOK_SECRET,
    httpPort: value.HTTP_PORT,
    topics: {
      commands: value.TOPIC_COMMANDS,
      events: value.TOPIC_EVENTS,
      state: stateTopicOf(value),
      partitions: value.TOPIC_PARTITIONS,
      replicationFactor: value.TOPIC_REPLICATION_FACTOR,
    },
    consumerGroup: value.CONSUMER_GROUP,
    workerId: value.WORKER_ID,
    pollIntervalMs: value.POLL_INTERVAL_MS,
    reconcileMaxAgeMs: value.RECONCILE_MAX_AGE_MS,
    leaseTtlMs: value.LEASE_TTL_MS,
    maxActiveOrders: value.MAX_ACTIVE_ORDERS,
    maxInflightExchangeCalls: value.MAX_INFLIGHT_EXCHANGE_CALLS,
    quoteCooldownMs: value.QUOTE_COOLDOWN_MS,
    shutdownTimeoutMs: value.SHUTDOWN_TIMEOUT_MS,
    kafkaTransactionTimeoutMs: value.KAFKA_TRANSACTION_TIMEOUT_MS,
    logLevel: value.LOG_LEVEL,
    otlpEndpoint: value.OTEL_EXPORTER_OTLP_ENDPOINT,
  }));

export type WorkerConfig = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** One configuration problem as a line naming the variable; a secret's value is never echoed. */
function problemOf(issue: z.core.$ZodIssue): string {
  const variable = String(issue.path[0] ?? 'configuration');
  const message = secretVariables.has(variable)
    ? issue.message.replace(/"[^"]*"/g, '"<redacted>"')
    : issue.message;
  return `${variable}: ${message}`;
}

/** Parses the environment; throws ConfigError with one line per problem (secret values never echoed). */
export function loadConfig(env: Record<string, string | undefined>): WorkerConfig {
  const parsed = configSchema.safeParse(env);
  const keyNames = ['EXCHANGE_API_KEY_DEFI', 'EXCHANGE_API_KEY_CEFI', 'EXCHANGE_API_KEY_CEFI_FIXED'];
  const noKey = keyNames.every((name) => !env[name]?.trim())
    ? [`EXCHANGE_API_KEY_DEFI: at least one of ${keyNames.join(', ')} is required`]
    : [];
  if (parsed.success && noKey.length) throw new ConfigError(noKey);
  if (!parsed.success) {
    const problems = [...noKey, ...parsed.error.issues.map(problemOf)];
    throw new ConfigError(problems);
  }
  return deepFreeze(parsed.data);
}

/**
 * What an operator tool (the order inspector) needs to read a cluster the worker runs on: the worker's own variables,
 * parsed by the worker's schema, minus the exchange's (never called). Kafka and Redis settings the worker gains later
 * are parsed here too, since this is the same schema with one variable left out.
 */
const operatorConfigSchema = configSchema.in.omit({ EXCHANGE_API_URL: true }).transform((value) => ({
  kafkaBrokers: value.KAFKA_BROKERS,
  redisUrl: value.REDIS_URL,
  topics: { commands: value.TOPIC_COMMANDS, events: value.TOPIC_EVENTS, state: stateTopicOf(value) },
  consumerGroup: value.CONSUMER_GROUP,
  redisKeyPrefix: `eow:${value.CONSUMER_GROUP}:`,
}));
export type OperatorConfig = Readonly<z.infer<typeof operatorConfigSchema>>;

export function loadOperatorConfig(env: Record<string, string | undefined>): OperatorConfig {
  const parsed = operatorConfigSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map(problemOf));
  }
  return deepFreeze(parsed.data);
}
