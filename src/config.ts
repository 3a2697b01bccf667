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
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
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

/** A comma-separated list whose every item is one of `allowed` (the OTEL_* list variables). */
const listOf = (allowed: readonly string[]) =>
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((item) => item.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(allowed as [string, ...string[]])));

/** `key=value,key=value` (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS), values percent-encoded. */
const keyValueList = z
  .string()
  .refine(
    (value) => value.trim() === '' || value.split(',').every((pair) => /^\s*[^=\s]+\s*=/.test(pair)),
    'must be a comma-separated list of key=value',
  );

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
    // Read by the OpenTelemetry SDK itself (the standard variables); validated here so a typo stops start-up.
    OTEL_SDK_DISABLED: z.enum(['true', 'false', 'TRUE', 'FALSE', '']).optional(),
    OTEL_SERVICE_NAME: z.string().trim().min(1).optional(),
    OTEL_RESOURCE_ATTRIBUTES: keyValueList.optional(),
    OTEL_TRACES_EXPORTER: listOf(['otlp', 'console', 'zipkin', 'none']).optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
    OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['grpc', 'http/protobuf', 'http/json']).optional(),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(['grpc', 'http/protobuf', 'http/json']).optional(),
    OTEL_EXPORTER_OTLP_HEADERS: keyValueList.optional(),
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValueList.optional(),
    OTEL_TRACES_SAMPLER: z
      .enum([
        'always_on',
        'always_off',
        'traceidratio',
        'parentbased_always_on',
        'parentbased_always_off',
        'parentbased_traceidratio',
      ])
      .optional(),
    OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
    OTEL_PROPAGATORS: listOf(['tracecontext', 'baggage', 'b3', 'b3multi', 'jaeger', 'none']).optional(),
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
      state: value.TOPIC_STATE ?? `${value.TOPIC_COMMANDS}.state`,
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
    telemetry: {
      serviceName: value.OTEL_SERVICE_NAME,
      // Spans leave the process only when an exporter or an endpoint is named (the SDK's own default would send
      // them to localhost:4318 and log a failure every few seconds where no collector runs).
      exportTraces:
        !/^true$/i.test(value.OTEL_SDK_DISABLED ?? '') &&
        !(value.OTEL_TRACES_EXPORTER ?? []).includes('none') &&
        ((value.OTEL_TRACES_EXPORTER ?? []).length > 0 ||
          value.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
          value.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined),
      /** Secret header values of the OTLP exporter (kept out of logs). */
      exporterHeaderValues: [value.OTEL_EXPORTER_OTLP_HEADERS, value.OTEL_EXPORTER_OTLP_TRACES_HEADERS]
        .flatMap((list) => (list ?? '').split(','))
        .map((pair) => pair.slice(pair.indexOf('=') + 1).trim())
        .filter((v) => v.length > 0),
    },
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

/** Parses the environment; throws ConfigError with one line per problem (secret values never echoed). */
export function loadConfig(env: Record<string, string | undefined>): WorkerConfig {
  const parsed = configSchema.safeParse(env);
  const keyNames = ['EXCHANGE_API_KEY_DEFI', 'EXCHANGE_API_KEY_CEFI', 'EXCHANGE_API_KEY_CEFI_FIXED'];
  const noKey = keyNames.every((name) => !env[name]?.trim())
    ? [`EXCHANGE_API_KEY_DEFI: at least one of ${keyNames.join(', ')} is required`]
    : [];
  if (parsed.success && noKey.length) throw new ConfigError(noKey);
  if (!parsed.success) {
    const problems = [
      ...noKey,
      ...parsed.error.issues.map((issue) => {
        const variable = String(issue.path[0] ?? 'configuration');
        const message = secretVariables.has(variable)
          ? issue.message.replace(/"[^"]*"/g, '"<redacted>"')
          : issue.message;
        return `${variable}: ${message}`;
      }),
    ];
    throw new ConfigError(problems);
  }
  return deepFreeze(parsed.data);
}
