// The worker's connection to the Kafka cluster, built from configuration (brokers, TLS, SASL) with the client
// library's own logging routed into our logger. kafkajs stays behind src/kafka/: the rest of the worker holds an
// opaque KafkaClient and the small classes of this folder, so the library can be swapped here alone.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { ConnectionOptions } from 'node:tls';
import { Kafka, logLevel, type KafkaConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { KafkaSecurity } from '../config/security.ts';
import type { Logger } from '../telemetry/logger.ts';
import './zstd-codec.ts';

interface RequestQueueInternals {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(this: RequestQueueInternals): void;
}

let requestQueuesQuieted = false;

/**
 * kafkajs 2.2.4 keeps a 1 ms timer running on every open broker connection, forever (tulios/kafkajs#1704, #1751):
 * after each response its request queue schedules a check of its pending requests at `throttledUntil - now`, which
 * is negative when nothing throttles it (-1 minus the epoch: Node >= 24 warns TimeoutNegativeWarning and runs it
 * after 1 ms), and each check schedules the next, whether anything is pending or not. Measured on this project's
 * machine: an idle worker (7 broker connections) used 4.1 % of a core (2.65 % once quieted), six idle producers
 * 2.25 % (0.13 %). This patches the queue's class so that a check is scheduled only when something waits or a throttle
 * runs: a request pushed while nothing waits is sent at once or, when it must wait (in-flight limit, throttle),
 * schedules its own check, and a response that frees an in-flight slot checks the queue at once - as before.
 * Process-wide (the class is shared by every kafkajs client of the process); returns false, changing nothing,
 * when the kafkajs internals it needs are not there (another kafkajs version).
 */
export function quietKafkajsRequestQueues(): boolean {
  if (requestQueuesQuieted) return true;
  let requestQueue: { prototype?: Partial<RequestQueueInternals> } | undefined;
  try {
    requestQueue = createRequire(import.meta.url)(
      'kafkajs/src/network/requestQueue/index.js',
    ) as typeof requestQueue;
  } catch {
    return false;
  }
  const prototype = requestQueue?.prototype;
  const schedule = prototype?.scheduleCheckPendingRequests;
  if (prototype === undefined || typeof schedule !== 'function') return false;
  prototype.scheduleCheckPendingRequests = function (this: RequestQueueInternals): void {
    if (this.pending.length === 0 && !(this.throttledUntil > Date.now())) return;
    schedule.call(this);
  };
  requestQueuesQuieted = true;
  return true;
}
// On import, before any kafkajs client of the process connects (the worker, its tools, tests and benchmarks).
quietKafkajsRequestQueues();

/** How long a coordinator found is reused (kafkajs asks the cluster again before every transactional request). */
export const coordinatorReuseMs = 2_000;

interface CoordinatorLookup {
  groupId: string;
  coordinatorType?: number;
}

interface CoordinatorCluster {
  findGroupCoordinator(args: CoordinatorLookup): Promise<unknown>;
  findControllerBroker(): Promise<{ findGroupCoordinator(args: CoordinatorLookup): Promise<unknown> }>;
}

/**
 * Why a coordinator lookup failed, when the broker refused the principal: kafkajs tries each broker, drops their
 * errors and reports "Failed to find group coordinator", which the transactional writer retried for two minutes
 * and a consumer for ever. Asked once more of one broker, the refusal (TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
 * GROUP_AUTHORIZATION_FAILED) comes back as itself; undefined for any other reason.
 */
async function refusalOf(cluster: CoordinatorCluster, lookup: CoordinatorLookup): Promise<Error | undefined> {
  try {
    await (await cluster.findControllerBroker()).findGroupCoordinator(lookup);
    return undefined;
  } catch (error) {
    const type = (error as { type?: unknown }).type;
    return typeof type === 'string' && type.endsWith('_AUTHORIZATION_FAILED') ? (error as Error) : undefined;
  }
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
      const broker = find(lookup).catch(async (error: unknown) => {
        throw (await refusalOf(cluster, lookup)) ?? error;
      });
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
