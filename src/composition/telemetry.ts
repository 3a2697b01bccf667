// The process's first parts, before anything else runs: the configuration (or exit 2 naming each problem), the
// logger that scrubs every secret of it, telemetry (so that every span, metric and log line is covered), and the
// warnings a start-up owes the operator.
import { ConfigError, configWarnings, loadConfig, secretValues, type WorkerConfig } from '../config.ts';
import { createOrderTimeoutMs } from '../exchange/client.ts';
import { allocatorEnvMissing } from '../process/allocator-env.ts';
import { createLogger, type Logger } from '../telemetry/logger.ts';
import { startTelemetry, type Telemetry } from '../telemetry/sdk.ts';

/** The configuration of `env`; an invalid one prints one line per problem and exits with 2. */
export function configOrExit(env: Record<string, string | undefined>): WorkerConfig {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const problem of error.problems) console.error(`config: ${problem}`);
      process.exit(2);
    }
    throw error;
  }
}

export function workerLogger(config: WorkerConfig): Logger {
  return createLogger({
    level: config.logLevel,
    workerId: config.workerId,
    secrets: [...secretValues(config), ...config.telemetry.exporterHeaderValues],
  });
}

/** The configuration's warnings and the allocator settings of the worker image, if absent from `env`. */
export function logStartupWarnings(
  config: WorkerConfig,
  logger: Logger,
  env: Record<string, string | undefined>,
): void {
  for (const warning of configWarnings(config, { createOrderTimeoutMs })) logger.warn(warning);
  const untunedAllocator = allocatorEnvMissing(env);
  if (untunedAllocator.length > 0)
    logger.info(
      { missing: untunedAllocator },
      'glibc allocator settings of the worker image absent (src/process/allocator-env.ts): RSS after restores may be twice as high',
    );
}

export function workerTelemetry(config: WorkerConfig, logger: Logger): Telemetry {
  return startTelemetry({
    workerId: config.workerId,
    exportTraces: config.telemetry.exportTraces,
    serviceName: config.telemetry.serviceName,
    sampler: config.telemetry.sampler,
    logger,
  });
}

/** What runs unsafely for development only (unsigned operator commands or webhooks), said once at start. */
export function logUnsafeSettings(config: WorkerConfig, logger: Logger): void {
  if (config.operations.operatorKeys.length === 0)
    logger.warn(
      {
        variable: config.operations.operatorCommandsUnsigned
          ? 'OPERATOR_COMMANDS_UNSIGNED'
          : 'OPERATOR_PUBLIC_KEYS',
      },
      config.operations.operatorCommandsUnsigned
        ? 'operator commands (order.settle) are accepted UNSIGNED (OPERATOR_COMMANDS_UNSIGNED=true): anyone who can write the commands topic can abandon an order; development only'
        : 'no OPERATOR_PUBLIC_KEYS: every operator command (order.settle) is refused (command.rejected, unauthorized)',
    );
  if (config.webhooks.secrets.length === 0)
    logger.warn(
      { variable: 'WEBHOOK_ALLOW_UNSIGNED' },
      'webhooks are accepted UNSIGNED (WEBHOOK_ALLOW_UNSIGNED=true): anyone who reaches HTTP_PORT can trigger order polls; development only',
    );
}
