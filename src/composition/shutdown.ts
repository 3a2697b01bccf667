// Shutdown: SIGTERM and SIGINT stop the worker gracefully (bounded by SHUTDOWN_TIMEOUT_MS, then exit anyway); Kafka
// failing for good stops it with exit code 1, so that another replica takes over.
import type { WorkerConfig } from '../config.ts';
import type { Logger } from '../telemetry/logger.ts';
import { kafkaAccessOf } from './kafka.ts';

export function installShutdown(
  config: WorkerConfig,
  logger: Logger,
  parts: { worker: { stop(): Promise<void> }; fatal: AbortSignal },
): void {
  const { worker, fatal } = parts;
  // The first cause wins: a signal during a fatal stop (or the reverse) changes neither the reason nor the exit code.
  const stopping = { since: undefined as string | undefined };
  const shutdown = (reason: string, code: number): void => {
    if (stopping.since !== undefined) return;
    stopping.since = reason;
    logger.info({ reason }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'graceful shutdown timed out; exiting');
      process.exit(code || 1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    void worker.stop().finally(() => {
      logger.info('stopped');
      logger.flush();
      process.exit(code);
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM', 0));
  process.once('SIGINT', () => shutdown('SIGINT', 0));
  fatal.addEventListener(
    'abort',
    () => {
      logger.fatal(
        { err: { message: (fatal.reason as Error).message }, ...kafkaAccessOf(fatal.reason, config) },
        'Kafka writer failed for good; stopping so another replica takes over',
      );
      shutdown('fatal', 1);
    },
    { once: true },
  );
}
