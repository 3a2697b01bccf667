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

/** How long a coordinator found is reused (kafkajs asks the cluster again before every transactional request). */
export const coordinatorReuseMs = 2_000;

interface CoordinatorCluster {
  findGroupCoordinator(args: { groupId: string; coordinatorType?: number }): Promise<unknown>;
}

const coordinatorsReused = new WeakSet<Kafka>();

/**
 * kafkajs 2.2.4 sends a FindCoordinator request before every AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit
 * and EndTxn of a transactional producer: four extra round trips per transaction, on its critical path (measured:
 * 1,446 FindCoordinator requests for 395 transactions). Java's producer keeps the coordinator until a request says
 * it moved. This makes the clusters kafkajs builds for this client reuse a coordinator found for
 * `coordinatorReuseMs` (a lookup that fails is forgotten at once). A coordinator that moved is asked for again
 * within that time; until then its requests fail with NOT_COORDINATOR or a connection error, which kafkajs retries
 * (the transactional writer retries without limit, backing off up to 2 s). Not cleared on a metadata refresh:
 * kafkajs refreshes after every CONCURRENT_TRANSACTIONS, which a transaction right after a commit gets routinely.
 * Returns false when the kafkajs internals it needs are not there (another kafkajs version): then nothing changes.
 */
export function reuseCoordinators(kafka: Kafka, reuseMs = coordinatorReuseMs): boolean {
  if (coordinatorsReused.has(kafka)) return true;
  const owner = kafka as unknown as Record<symbol, unknown>;
  const key = Object.getOwnPropertySymbols(kafka).find(
    (symbol) => symbol.description === 'private:Kafka:createCluster',
  );
  const createCluster = key === undefined ? undefined : owner[key];
  if (typeof createCluster !== 'function') return false;
  owner[key!] = (...args: unknown[]): unknown => {
    const cluster = (createCluster as (...a: unknown[]) => CoordinatorCluster)(...args);
    const find = cluster.findGroupCoordinator.bind(cluster);
    const found = new Map<string, { at: number; broker: Promise<unknown> }>();
    cluster.findGroupCoordinator = (lookup) => {
      const id = `${lookup.coordinatorType ?? 0}:${lookup.groupId}`;
      const now = Date.now();
      const known = found.get(id);
      if (known && now - known.at < reuseMs) return known.broker;
      const broker = find(lookup);
      found.set(id, { at: now, broker });
      broker.catch(() => {
        if (found.get(id)?.broker === broker) found.delete(id);
      });
      return broker;
    };
    return cluster;
  };
  coordinatorsReused.add(kafka);
  return true;
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

  /** Wraps a kafkajs client (built by createKafka, or elsewhere: tests, benchmarks); its coordinators are reused. */
  static wrap(kafkajs: Kafka): KafkaClient {
    reuseCoordinators(kafkajs);
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
