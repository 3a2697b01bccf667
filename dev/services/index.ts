// Service provisioning for tests, benchmarks and the demo: gives every run a real Kafka broker and a real Redis.
// Order of preference: KAFKA_BROKERS / REDIS_URL from the environment; a Docker engine that answers;
// else local processes (Kafka from Maven Central jars on the local JDK, a spawned redis-server).
// Idempotent: what `up` starts is recorded in .services/state.json and reused while it still answers.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { canConnect, isAlive } from './process-util.ts';
import {
  kafkaAnswers,
  projectRoot,
  startLocalKafka,
  stopLocalKafka,
  type LocalKafkaState,
} from './kafka-local.ts';
import { startLocalRedis, stopLocalRedis, type LocalRedisState } from './redis-local.ts';
import {
  dockerEngineAnswers,
  startDockerKafka,
  startDockerRedis,
  stopDockerContainer,
  type DockerServiceState,
} from './docker.ts';

export { startLocalKafka, type LocalKafka } from './kafka-local.ts';
export { startLocalRedis, type LocalRedis } from './redis-local.ts';
export { freePort } from './process-util.ts';

export interface ServiceEndpoints {
  kafkaBrokers: string[];
  redisUrl: string;
}

type KafkaRecord =
  { kind: 'env'; brokers: string[] } | LocalKafkaState | (DockerServiceState & { brokers: string[] });
type RedisRecord = { kind: 'env'; url: string } | LocalRedisState | (DockerServiceState & { url: string });
interface ServicesState {
  kafka?: KafkaRecord;
  redis?: RedisRecord;
}

export const servicesDir = join(projectRoot, '.services');
const stateFile = join(servicesDir, 'state.json');
const lockFile = join(servicesDir, 'lock');

function readState(): ServicesState {
  if (!existsSync(stateFile)) return {};
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as ServicesState;
  } catch {
    return {};
  }
}

function writeState(state: ServicesState): void {
  mkdirSync(servicesDir, { recursive: true });
  writeFileSync(stateFile, JSON.stringify(state, null, 2));
}

async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(servicesDir, { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      closeSync(openSync(lockFile, 'wx'));
      break;
    } catch {
      const stalePid = Number(readFileSync(lockFile, 'utf8') || '0');
      if (stalePid && !isAlive(stalePid)) rmSync(lockFile, { force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockFile}`);
      await sleep(200);
    }
  }
  writeFileSync(lockFile, String(process.pid));
  try {
    return await fn();
  } finally {
    rmSync(lockFile, { force: true });
  }
}

async function kafkaRecordAnswers(record: KafkaRecord | undefined): Promise<boolean> {
  if (!record) return false;
  if (record.kind === 'local' && !isAlive(record.pid)) return false;
  return kafkaAnswers(record.brokers);
}

async function redisRecordAnswers(record: RedisRecord | undefined): Promise<boolean> {
  if (!record) return false;
  if (record.kind === 'local' && !isAlive(record.pid)) return false;
  const url = new URL(record.url);
  return canConnect(Number(url.port || 6379), url.hostname);
}

export interface UpResult {
  endpoints: ServiceEndpoints;
  /** Services this call started (the caller that started them should stop them). */
  started: { kafka: boolean; redis: boolean };
  describe: string[];
}

export async function servicesUp(opts: { log?: (line: string) => void } = {}): Promise<UpResult> {
  const log = opts.log ?? (() => {});
  return withLock(async () => {
    const state = readState();
    const started = { kafka: false, redis: false };
    let docker: boolean | undefined;
    const useDocker = async (): Promise<boolean> => (docker ??= await dockerEngineAnswers());

    // Services given by the environment are used as they are and never recorded: the state file keeps only what
    // this module started, so `services:down` can always stop it.
    let kafka: KafkaRecord | undefined = state.kafka;
    let redis: RedisRecord | undefined = state.redis;
    const envBrokers = process.env['KAFKA_BROKERS'];
    if (envBrokers) {
      kafka = {
        kind: 'env',
        brokers: envBrokers
          .split(',')
          .map((b) => b.trim())
          .filter(Boolean),
      };
    } else if (!(await kafkaRecordAnswers(state.kafka))) {
      if (state.kafka) await stopKafkaRecord(state.kafka);
      if (await useDocker()) {
        log('starting Kafka in Docker (apache/kafka)');
        state.kafka = await startDockerKafka();
      } else {
        log('starting a local Kafka broker (KRaft, Maven Central jars, local JDK)');
        state.kafka = (await startLocalKafka({ dir: join(servicesDir, 'kafka'), log })).state;
      }
      kafka = state.kafka;
      started.kafka = true;
    }

    const envRedis = process.env['REDIS_URL'];
    if (envRedis) {
      redis = { kind: 'env', url: envRedis };
    } else if (!(await redisRecordAnswers(state.redis))) {
      if (state.redis) await stopRedisRecord(state.redis);
      if (await useDocker()) {
        log('starting Redis in Docker');
        state.redis = await startDockerRedis();
      } else {
        log('starting a local redis-server');
        state.redis = (await startLocalRedis({ dir: join(servicesDir, 'redis') })).state;
      }
      redis = state.redis;
      started.redis = true;
    }
    writeState(state);
    if (!kafka || !redis) throw new Error('services: internal error, no Kafka or Redis record');
    const endpoints = { kafkaBrokers: kafka.brokers, redisUrl: redis.url };
    if (!(await kafkaAnswers(endpoints.kafkaBrokers, 10_000))) {
      throw new Error(`Kafka at ${endpoints.kafkaBrokers.join(',')} does not answer`);
    }
    if (!(await redisRecordAnswers(redis))) throw new Error(`Redis at ${endpoints.redisUrl} does not answer`);
    return {
      endpoints,
      started,
      describe: [
        `kafka  ${kafka.kind.padEnd(6)} ${endpoints.kafkaBrokers.join(',')}${started.kafka ? '' : ' (reused)'}`,
        `redis  ${redis.kind.padEnd(6)} ${endpoints.redisUrl}${started.redis ? '' : ' (reused)'}`,
      ],
    };
  });
}

async function stopKafkaRecord(record: KafkaRecord): Promise<void> {
  if (record.kind === 'local') await stopLocalKafka(record);
  else if (record.kind === 'docker') await stopDockerContainer(record);
}

async function stopRedisRecord(record: RedisRecord): Promise<void> {
  if (record.kind === 'local') await stopLocalRedis(record);
  else if (record.kind === 'docker') await stopDockerContainer(record);
}

/** Stops what `servicesUp` started. With `only`, stops just those (what a test run started itself). */
export async function servicesDown(only?: { kafka: boolean; redis: boolean }): Promise<string[]> {
  return withLock(async () => {
    const state = readState();
    const done: string[] = [];
    if (state.kafka && (only?.kafka ?? true)) {
      await stopKafkaRecord(state.kafka);
      done.push(`kafka ${state.kafka.kind} stopped`);
      delete state.kafka;
    }
    if (state.redis && (only?.redis ?? true)) {
      await stopRedisRecord(state.redis);
      done.push(`redis ${state.redis.kind} stopped`);
      delete state.redis;
    }
    writeState(state);
    return done;
  });
}
