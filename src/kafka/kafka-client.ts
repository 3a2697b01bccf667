// Builds the kafkajs client for the worker, with kafkajs' own logging routed into our logger.
// kafkajs stays behind src/kafka/: the rest of the worker sees only our small interfaces.
import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from '../telemetry/logger.ts';

let warningFilterInstalled = false;

/**
 * kafkajs 2.2.4 arms timers with negative durations on Node >= 24, which prints a TimeoutNegativeWarning per
 * call (tulios/kafkajs#1751). The timers behave as 1 ms timers, which is what kafkajs meant; the warning is noise.
 */
export function silenceKafkajsTimerWarning(): void {
  if (warningFilterInstalled) return;
  warningFilterInstalled = true;
  const original = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = (warning: string | Error, ...rest: unknown[]) => {
    const name =
      typeof warning === 'string'
        ? typeof rest[0] === 'string'
          ? rest[0]
          : (rest[0] as { type?: string } | undefined)?.type
        : warning.name;
    if (name === 'TimeoutNegativeWarning') return;
    original(warning, ...rest);
  };
}

export function createKafka(opts: { clientId: string; brokers: string[]; logger: Logger }): Kafka {
  silenceKafkajsTimerWarning();
  const log = opts.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    retry: { initialRetryTime: 200, retries: 12, maxRetryTime: 5_000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        const fields = {
          namespace: entry['namespace'] as unknown,
          error: rest['error'] as unknown,
          broker: rest['broker'] as unknown,
        };
        // The broker answers CONCURRENT_TRANSACTIONS while the previous commit's markers are still being written;
        // kafkajs retries it. It is routine, not an error an operator should be paged for.
        const routine = /concurrent operation on the same transaction|CONCURRENT_TRANSACTIONS/.test(
          `${message} ${String(rest['error'] ?? '')}`,
        );
        if (routine) log.debug(fields, message);
        else if (level === logLevel.ERROR) log.error(fields, message);
        else if (level === logLevel.WARN) log.warn(fields, message);
        else log.debug(fields, message);
      },
  });
}
