// Configuration: parsed once from the environment by one zod schema and frozen. Nothing else reads process.env.
// An invalid configuration stops start-up with one line per problem, naming the variable, never its value
// when the variable is a secret.
import { hostname } from 'node:os';
import { z } from 'zod';
import { DEFAULT_MAX_COMMAND_BYTES } from './contract/commands.ts';
import { DEFAULT_WEBHOOK_MAX_CONNECTIONS, DEFAULT_WEBHOOK_MAX_UNVERIFIED_BYTES } from './http/http-server.ts';
import {
  insecureTransportProblems,
  insecureTransportWarnings,
  isProduction,
} from './config/insecure-transport.ts';
import {
  operationsConfig,
  operationsProblems,
  operationsVariables,
  operatorToolSchema,
  type OperatorToolConfig,
} from './config/operations.ts';
import { redisEndpoints, redisTopologyProblems, redisTopologyVariables } from './config/redis-topology.ts';
import {
  checkConnectionSecurity,
  connectionSecurity,
  connectionSecurityVariables,
  type SecurityInput,
} from './config/security.ts';
import {
  booleanFromEnv,
  httpUrl,
  intFromEnv,
  keyValueList,
  listOf,
  optionalSecret,
  secretList,
  topicName,
} from './config/values.ts';

const secretVariables = new Set([
  'EXCHANGE_API_KEY_DEFI',
  'EXCHANGE_API_KEY_CEFI',
  'EXCHANGE_API_KEY_CEFI_FIXED',
  'EXCHANGE_REFERRAL_TOKEN',
  'EXCHANGE_REFERRAL_TOKEN_DEFI',
  'EXCHANGE_REFERRAL_TOKEN_CEFI',
  'EXCHANGE_REFERRAL_TOKEN_CEFI_FIXED',
  'WEBHOOK_SECRET',
  'WEBHOOK_SECRETS',
  'KAFKA_SSL_KEY_PASSWORD',
  'KAFKA_SASL_PASSWORD',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OPS_API_TOKEN',
]);

/** The state topic: TOPIC_STATE, else `<TOPIC_COMMANDS>.state`. */
function stateTopicOf(value: { TOPIC_COMMANDS: string; TOPIC_STATE?: string | undefined }): string {
  return value.TOPIC_STATE ?? `${value.TOPIC_COMMANDS}.state`;
}

/** Every variable the worker reads, each with its own rule (rules between variables follow in configSchema). */
export const configVariables = z.object({
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
  ...redisTopologyVariables,
  EXCHANGE_API_URL: httpUrl,
  EXCHANGE_API_V1_URL: httpUrl.optional(),
  EXCHANGE_API_KEY_DEFI: optionalSecret,
  EXCHANGE_API_KEY_CEFI: optionalSecret,
  EXCHANGE_API_KEY_CEFI_FIXED: optionalSecret,
  EXCHANGE_REFERRAL_TOKEN: optionalSecret,
  EXCHANGE_REFERRAL_TOKEN_DEFI: optionalSecret,
  EXCHANGE_REFERRAL_TOKEN_CEFI: optionalSecret,
  EXCHANGE_REFERRAL_TOKEN_CEFI_FIXED: optionalSecret,
  WEBHOOK_SECRET: optionalSecret,
  WEBHOOK_SECRETS: secretList,
  WEBHOOK_ALLOW_UNSIGNED: booleanFromEnv,
  /** Concurrent connections of the webhook server; more are refused at accept (http-server.ts). */
  WEBHOOK_MAX_CONNECTIONS: intFromEnv(DEFAULT_WEBHOOK_MAX_CONNECTIONS, 16, 65_536),
  /** Bytes of webhook bodies, unauthenticated until whole and verified, in flight at once (http-server.ts). */
  WEBHOOK_MAX_UNVERIFIED_BYTES: intFromEnv(DEFAULT_WEBHOOK_MAX_UNVERIFIED_BYTES, 1_048_576, 1_073_741_824),
  HTTP_PORT: intFromEnv(8080, 0, 65535),
  METRICS_PORT: intFromEnv(9464, 0, 65535),
  TOPIC_COMMANDS: topicName.default('exchange.orders.commands'),
  TOPIC_EVENTS: topicName.default('exchange.orders.events'),
  TOPIC_STATE: topicName.optional(),
  TOPIC_PARTITIONS: intFromEnv(12, 1, 1000),
  TOPIC_REPLICATION_FACTOR: intFromEnv(1, 1, 10),
  TOPIC_MIN_INSYNC_REPLICAS: z.coerce.number().int().min(1).max(10).optional(),
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
  WEBHOOK_POLL_INTERVAL_MS: intFromEnv(60_000, 30_000, 60_000),
  /**
   * Webhook hints that arrive together share one confirming GET: one naming an open status waits until no other hint
   * came for this long (0: each is confirmed at once); one naming an end is confirmed at once.
   */
  WEBHOOK_COALESCE_MS: intFromEnv(3_000, 0, 10_000),
  /** The longest such a hint waits for the ones after it; at least WEBHOOK_COALESCE_MS. */
  WEBHOOK_COALESCE_MAX_MS: intFromEnv(10_000, 0, 30_000),
  RECONCILE_MAX_AGE_MS: intFromEnv(60_000, 30_000, 60_000),
  /**
   * CeFi orders are confirmed in bulk by GET /orders/?status=<code> this often (0: off, every order is polled on its
   * own). At most 60 s: a listed order's fallback poll comes 60 s after the listing that confirmed it.
   */
  LIST_RECONCILE_INTERVAL_MS: z.coerce
    .number()
    .int()
    .refine((ms) => ms === 0 || (ms >= 5_000 && ms <= 60_000), 'must be 0 (off) or 5000-60000')
    .default(30_000),
  LEASE_TTL_MS: intFromEnv(15_000, 1_000, 300_000),
  // A create replayed after its order's tombstone is refused by the order's retired home (30 days at least).
  FINISHED_ORDER_RETENTION_MS: intFromEnv(7 * 86_400_000, 1_000, 365 * 86_400_000),
  MAX_ACTIVE_ORDERS: intFromEnv(50_000, 1, 1_000_000),
  MAX_INFLIGHT_EXCHANGE_CALLS: intFromEnv(200, 1, 100_000),
  /** Commands of one partition whose Kafka writes may be in flight at once; 1: each waits for its transaction. */
  COMMAND_PIPELINE_DEPTH: intFromEnv(32, 1, 1_000),
  API_BUDGET_PER_MINUTE: intFromEnv(2_500, 1, 100_000),
  /** The longest a throttle's Retry-After holds an API key for every replica (src/exchange/retry-after.ts). */
  EXCHANGE_RETRY_AFTER_MAX_MS: intFromEnv(60_000, 1_000, 600_000),
  QUOTE_COOLDOWN_MS: intFromEnv(15_000, 0, 120_000),
  CREATE_SETTLE_MS: intFromEnv(60_000, 1_000, 600_000),
  PARKED_RECHECK_MS: intFromEnv(300_000, 1_000, 3_600_000),
  /** An order only waiting this long keeps its record and a deadline instead of a live actor; 0 disables. */
  PASSIVATE_IDLE_MS: intFromEnv(2_000, 0, 3_600_000),
  /** A memory-reducing collection this long after a restore or revocation of ≥ 1,000 orders (heap-reducer.ts); 0: off. */
  HEAP_REDUCE_AFTER_RESTORE_MS: intFromEnv(1_000, 0, 600_000),
  /** Currency and network records change rarely; at least a minute apart ("do not fetch ... in a loop"). */
  CURRENCY_CATALOG_REFRESH_MS: intFromEnv(3_600_000, 60_000, 86_400_000),
  SHUTDOWN_TIMEOUT_MS: intFromEnv(20_000, 1_000, 120_000),
  KAFKA_TRANSACTION_TIMEOUT_MS: intFromEnv(10_000, 1_000, 900_000),
  /** Under load, how long a transaction waits for more writes before it starts (group commit); 0: never. */
  KAFKA_TRANSACTION_LINGER_MS: intFromEnv(15, 0, 1_000),
  /** The command consumer's group session: a replica silent this long loses its partitions to the others. */
  KAFKA_SESSION_TIMEOUT_MS: intFromEnv(15_000, 6_000, 300_000),
  MAX_COMMAND_BYTES: intFromEnv(DEFAULT_MAX_COMMAND_BYTES, 1_024, 10_485_760),
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
  /** `production` (the worker image sets it): secrets are refused over plain http and redis:// (insecure-transport.ts). */
  NODE_ENV: z.string().trim().optional(),
  ALLOW_INSECURE_TRANSPORT: booleanFromEnv,
  ...connectionSecurityVariables,
  ...operationsVariables,
});

/** Rules between the variables of the connections and topics (shared by the worker and the operator tools). */
function refineConnections(
  value: SecurityInput & { TOPIC_MIN_INSYNC_REPLICAS?: number | undefined; TOPIC_REPLICATION_FACTOR: number },
  ctx: z.RefinementCtx,
): void {
  checkConnectionSecurity(value, (variable, message) =>
    ctx.addIssue({ code: 'custom', path: [variable], message }),
  );
  if (
    value.TOPIC_MIN_INSYNC_REPLICAS !== undefined &&
    value.TOPIC_MIN_INSYNC_REPLICAS > value.TOPIC_REPLICATION_FACTOR
  )
    ctx.addIssue({
      code: 'custom',
      path: ['TOPIC_MIN_INSYNC_REPLICAS'],
      message: 'must not exceed TOPIC_REPLICATION_FACTOR (no write could ever succeed)',
    });
}

export const configSchema = configVariables
  .superRefine(refineConnections)
  .superRefine((value, ctx) => {
    for (const { variable, message } of insecureTransportProblems(value))
      ctx.addIssue({ code: 'custom', path: [variable], message });
  })
  .transform((value) => ({
    kafkaBrokers: value.KAFKA_BROKERS,
    redis: redisEndpoints(value),
    exchange: {
      baseUrl: value.EXCHANGE_API_URL,
      v1BaseUrl: value.EXCHANGE_API_V1_URL,
      credentials: {
        defi: value.EXCHANGE_API_KEY_DEFI,
        cefi: value.EXCHANGE_API_KEY_CEFI,
        cefi_fixed: value.EXCHANGE_API_KEY_CEFI_FIXED,
      },
      referralToken: value.EXCHANGE_REFERRAL_TOKEN,
      referralTokens: {
        defi: value.EXCHANGE_REFERRAL_TOKEN_DEFI,
        cefi: value.EXCHANGE_REFERRAL_TOKEN_CEFI,
        cefi_fixed: value.EXCHANGE_REFERRAL_TOKEN_CEFI_FIXED,
      },
      budgetPerMinute: value.API_BUDGET_PER_MINUTE,
      retryAfterMaxMs: value.EXCHANGE_RETRY_AFTER_MAX_MS,
      currencyCatalogRefreshMs: value.CURRENCY_CATALOG_REFRESH_MS,
    },
    webhooks: {
      /** Every signing secret a delivery may be signed with (per webhook configuration, old and new). */
      secrets: [
        ...new Set([
          ...(value.WEBHOOK_SECRET === undefined ? [] : [value.WEBHOOK_SECRET]),
          ...value.WEBHOOK_SECRETS,
        ]),
      ],
      allowUnsigned: value.WEBHOOK_ALLOW_UNSIGNED,
      maxConnections: value.WEBHOOK_MAX_CONNECTIONS,
      maxUnverifiedBytes: value.WEBHOOK_MAX_UNVERIFIED_BYTES,
    },
    httpPort: value.HTTP_PORT,
    metricsPort: value.METRICS_PORT,
    topics: {
      commands: value.TOPIC_COMMANDS,
      events: value.TOPIC_EVENTS,
      state: stateTopicOf(value),
      partitions: value.TOPIC_PARTITIONS,
      replicationFactor: value.TOPIC_REPLICATION_FACTOR,
      minInsyncReplicas: value.TOPIC_MIN_INSYNC_REPLICAS,
    },
    consumerGroup: value.CONSUMER_GROUP,
    workerId: value.WORKER_ID,
    pollIntervalMs: value.POLL_INTERVAL_MS,
    // Never below the base interval, never past the reconciliation sweep's age (it would nudge every such order).
    webhookPollIntervalMs: Math.max(
      value.POLL_INTERVAL_MS,
      Math.min(value.WEBHOOK_POLL_INTERVAL_MS, value.RECONCILE_MAX_AGE_MS),
    ),
    webhookCoalesceMs: value.WEBHOOK_COALESCE_MS,
    webhookCoalesceMaxMs: Math.max(value.WEBHOOK_COALESCE_MS, value.WEBHOOK_COALESCE_MAX_MS),
    reconcileMaxAgeMs: value.RECONCILE_MAX_AGE_MS,
    listReconcileIntervalMs: value.LIST_RECONCILE_INTERVAL_MS,
    leaseTtlMs: value.LEASE_TTL_MS,
    finishedOrderRetentionMs: value.FINISHED_ORDER_RETENTION_MS,
    maxActiveOrders: value.MAX_ACTIVE_ORDERS,
    maxInflightExchangeCalls: value.MAX_INFLIGHT_EXCHANGE_CALLS,
    commandPipelineDepth: value.COMMAND_PIPELINE_DEPTH,
    quoteCooldownMs: value.QUOTE_COOLDOWN_MS,
    createSettleMs: value.CREATE_SETTLE_MS,
    parkedRecheckMs: value.PARKED_RECHECK_MS,
    passivateIdleMs: value.PASSIVATE_IDLE_MS,
    heapReduceAfterRestoreMs: value.HEAP_REDUCE_AFTER_RESTORE_MS,
    shutdownTimeoutMs: value.SHUTDOWN_TIMEOUT_MS,
    kafkaTransactionTimeoutMs: value.KAFKA_TRANSACTION_TIMEOUT_MS,
    kafkaTransactionLingerMs: value.KAFKA_TRANSACTION_LINGER_MS,
    kafkaSessionTimeoutMs: value.KAFKA_SESSION_TIMEOUT_MS,
    maxCommandBytes: value.MAX_COMMAND_BYTES,
    logLevel: value.LOG_LEVEL,
    otlpEndpoint: value.OTEL_EXPORTER_OTLP_ENDPOINT,
    security: connectionSecurity(value),
    operations: operationsConfig(value),
    production: isProduction(value.NODE_ENV),
    /** Set only when ALLOW_INSECURE_TRANSPORT=true lets production send secrets in clear: the warning at start. */
    insecureTransportWarnings: insecureTransportWarnings(value),
    telemetry: {
      serviceName: value.OTEL_SERVICE_NAME,
      /** OTEL_TRACES_SAMPLER and its argument: the ratio samplers follow the order (telemetry/order-sampler.ts). */
      sampler: { name: value.OTEL_TRACES_SAMPLER, ratio: value.OTEL_TRACES_SAMPLER_ARG },
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

/**
 * Rules between variables, read from the environment itself so they are reported together with the schema's
 * problems (zod skips an object's refinements while any field is invalid).
 */
function crossFieldProblems(env: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const keyNames = ['EXCHANGE_API_KEY_DEFI', 'EXCHANGE_API_KEY_CEFI', 'EXCHANGE_API_KEY_CEFI_FIXED'];
  if (keyNames.every((name) => !env[name]?.trim()))
    problems.push(`EXCHANGE_API_KEY_DEFI: at least one of ${keyNames.join(', ')} is required`);
  const hasSecret =
    Boolean(env['WEBHOOK_SECRET']?.trim()) || Boolean(env['WEBHOOK_SECRETS']?.replace(/[\s,]/g, ''));
  const allowUnsigned = env['WEBHOOK_ALLOW_UNSIGNED']?.trim() === 'true';
  if (!hasSecret && !allowUnsigned)
    problems.push(
      'WEBHOOK_SECRET: a webhook signing secret (WEBHOOK_SECRET or WEBHOOK_SECRETS) is required; set WEBHOOK_ALLOW_UNSIGNED=true to accept unsigned webhooks (development only)',
    );
  if (hasSecret && allowUnsigned)
    problems.push(
      'WEBHOOK_ALLOW_UNSIGNED: must not be true while a webhook signing secret is set (signed deliveries would sit beside unsigned ones)',
    );
  problems.push(...operationsProblems(env));
  problems.push(...redisTopologyProblems(env));
  const port = (name: string, fallback: string): string => env[name]?.trim() || fallback;
  if (port('HTTP_PORT', '8080') === port('METRICS_PORT', '9464') && port('HTTP_PORT', '8080') !== '0')
    problems.push(
      'METRICS_PORT: must differ from HTTP_PORT (the webhook port is public, the metrics port is not)',
    );
  return problems;
}

/** The password of a `redis://user:password@host` URL (a client error that echoes the URL must not show it). */
function urlPassword(url: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}

/**
 * Settings that are valid one by one but unsafe together, for a warning at start (tests and the demo shorten them on
 * purpose). CREATE_SETTLE_MS below the create timeout plus LEASE_TTL_MS lets a successor look a CeFi create up
 * before a create its dead predecessor sent can land: a second exchange order. ALLOW_INSECURE_TRANSPORT=true in
 * production lets secrets travel in clear.
 */
export function configWarnings(config: WorkerConfig, facts: { createOrderTimeoutMs: number }): string[] {
  const floor = facts.createOrderTimeoutMs + config.leaseTtlMs;
  return [
    ...config.insecureTransportWarnings,
    ...(config.createSettleMs < floor
      ? [
          `CREATE_SETTLE_MS (${config.createSettleMs}) is below the create timeout (${facts.createOrderTimeoutMs}) ` +
            `plus LEASE_TTL_MS (${config.leaseTtlMs}): a create that lands late after a takeover can be missed by ` +
            `the successor's lookup and made twice; use at least ${floor}`,
        ]
      : []),
  ];
}

/** Every secret value of a configuration, for the log scrubber: keys, referral tokens, webhook secrets, passwords. */
export function secretValues(config: WorkerConfig): string[] {
  return [
    ...Object.values(config.exchange.credentials),
    config.exchange.referralToken,
    ...Object.values(config.exchange.referralTokens),
    ...config.webhooks.secrets,
    config.redis.topology.kind === 'standalone' ? urlPassword(config.redis.topology.url) : undefined,
    config.redis.topology.kind === 'sentinel' ? config.redis.topology.sentinelPassword : undefined,
    config.security.kafka.tls?.passphrase,
    config.security.kafka.sasl?.mechanism === 'oauthbearer'
      ? undefined
      : config.security.kafka.sasl?.password,
    config.security.redis.password,
    ...config.operations.apiTokens,
  ].filter((value): value is string => value !== undefined && value !== '');
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
  const noKey = crossFieldProblems(env);
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
const operatorConfigSchema = configVariables
  .omit({ EXCHANGE_API_URL: true })
  .superRefine(refineConnections)
  .transform((value) => ({
    kafkaBrokers: value.KAFKA_BROKERS,
    redis: redisEndpoints(value),
    topics: { commands: value.TOPIC_COMMANDS, events: value.TOPIC_EVENTS, state: stateTopicOf(value) },
    consumerGroup: value.CONSUMER_GROUP,
    redisKeyPrefix: `eow:${value.CONSUMER_GROUP}:`,
    security: connectionSecurity(value),
  }));
export type OperatorConfig = Readonly<z.infer<typeof operatorConfigSchema>>;

export function loadOperatorConfig(env: Record<string, string | undefined>): OperatorConfig {
  const parsed = operatorConfigSchema.safeParse(env);
  const topology = redisTopologyProblems(env);
  if (!parsed.success || topology.length > 0) {
    throw new ConfigError([...topology, ...(parsed.success ? [] : parsed.error.issues.map(problemOf))]);
  }
  return deepFreeze(parsed.data);
}

/** The operator tools' own variables (signing key, exchange access, console), beside loadOperatorConfig's. */
export function loadOperatorToolConfig(env: Record<string, string | undefined>): OperatorToolConfig {
  const parsed = operatorToolSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map(problemOf));
  return parsed.data;
}
