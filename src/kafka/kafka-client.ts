// The worker's connection to the Kafka cluster, built from configuration (brokers, TLS, SASL) with the client
// library's own logging routed into our logger. kafkajs stays behind src/kafka/: the rest of the worker holds an
// opaque KafkaClient and the small classes of this folder, so the library can be swapped here alone.
import { readFile } from 'node:fs/promises';
import type { ConnectionOptions } from 'node:tls';
import { Kafka, logLevel, type KafkaConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { KafkaSecurity } from '../config.ts';
import type { Logger } from '../telemetry/logger.ts';
import './zstd-codec.ts';

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

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The `ssl` and `sasl` options of kafkajs from our configuration. TLS always verifies the broker's certificate
 * (there is deliberately no switch to turn that off). An OAUTHBEARER token is read from its file at every
 * (re-)authentication, so a token the platform rotates on disk (a projected service-account token) is picked up.
 */
export function kafkaSecurityOptions(security: KafkaSecurity | undefined): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  const options: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (security?.tls) {
    const tls: ConnectionOptions = { ...definedOnly(security.tls), rejectUnauthorized: true };
    options.ssl = tls;
  }
  const sasl = security?.sasl;
  if (sasl?.mechanism === 'oauthbearer') {
    const tokenFile = sasl.tokenFile;
    options.sasl = {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async () => ({ value: (await readFile(tokenFile, 'utf8')).trim() }),
    };
  } else if (sasl) {
    options.sasl = {
      mechanism: sasl.mechanism,
      username: sasl.username,
      password: sasl.password,
    } as SASLOptions;
  }
  return options;
}

/**
 * A connection to the cluster as the worker passes it around: the writer, the consumers, the state store and the
 * admin helpers of src/kafka/ build their own producers and consumers from it. Opaque outside this folder.
 */
export class KafkaClient {
  readonly #kafkajs: Kafka;

  private constructor(kafkajs: Kafka) {
    this.#kafkajs = kafkajs;
  }

  /** Wraps a kafkajs client built elsewhere (tests, benchmarks). */
  static wrap(kafkajs: Kafka): KafkaClient {
    return new KafkaClient(kafkajs);
  }

  /** The kafkajs client behind it: for the modules of src/kafka/ only. */
  static kafkajs(client: KafkaClient): Kafka {
    return client.#kafkajs;
  }
}

export function createKafka(opts: {
  clientId: string;
  brokers: string[];
  logger: Logger;
  security?: KafkaSecurity;
}): KafkaClient {
  silenceKafkajsTimerWarning();
  const log = opts.logger.child({ component: 'kafkajs' });
  return KafkaClient.wrap(
    new Kafka({
      clientId: opts.clientId,
      brokers: opts.brokers,
      ...kafkaSecurityOptions(opts.security),
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
    }),
  );
}
