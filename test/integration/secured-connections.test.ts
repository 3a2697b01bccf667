// Secured connections end to end: a local KRaft broker whose only client listener is SASL_SSL (mutual TLS, SCRAM,
// PLAIN and OAUTHBEARER) with ACLs on (StandardAuthorizer, nothing allowed without an ACL), and a TLS-only Redis with
// an ACL user, both with certificates made for this run. An admin principal creates the topics and grants the
// worker's principal exactly the ACLs of src/kafka/worker-acls.ts (the README's table); a real worker process drives
// an order through them, configured only through its documented variables, and a principal missing one ACL stops
// the worker with an error that names it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  ConfigResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
  type AclEntry,
} from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalKafka, type LocalKafka } from '../../dev/services/kafka-local.ts';
import { startLocalRedis, type LocalRedis } from '../../dev/services/redis-local.ts';
import { makeTestCertificates, type TestCertificates } from '../../dev/services/test-certificates.ts';
import { loadConfig } from '../../src/config.ts';
import { KafkaClient, kafkaSecurityOptions } from '../../src/kafka/kafka-client.ts';
import { ensureTopics } from '../../src/kafka/topics.ts';
import {
  kafkaAuthorizationFailure,
  stateReaderGroupPrefix,
  workerAcls,
  type WorkerAcl,
  type WorkerKafkaNames,
} from '../../src/kafka/worker-acls.ts';
import { closeRedis, createRedis, whenRedisReady } from '../../src/redis/connect.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { EventCollector, commandProducer, seqProblems } from '../support/kafka-helpers.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startWorkerEnvironment, type WorkerEnvironment } from '../support/worker-environment.ts';
import { startWorker } from '../support/worker-process.ts';

// The certificates name only these hosts, not 127.0.0.1: a client that ignored the configured server name would
// fail the TLS handshake.
const kafkaServerName = 'kafka.eow.test';
const redisServerName = 'redis.eow.test';
const kafkaUser = { name: 'eow-worker', password: `kpw-${Date.now().toString(36)}-s3cr3t` };
// The platform team's principal (a super user): creates the topics and grants the ACLs.
const kafkaAdmin = { name: 'eow-admin', password: `kadm-${Date.now().toString(36)}-s3cr3t` };
// Worker principals holding every ACL but one: the transactional id's, and Write on the state topic.
const kafkaLacking = { name: 'eow-worker-lacking', password: `klk-${Date.now().toString(36)}-s3cr3t` };
const kafkaLackingWrite = { name: 'eow-worker-nowrite', password: `klw-${Date.now().toString(36)}-s3cr3t` };
const redisUser = { name: 'eow-worker', password: `rpw-${Date.now().toString(36)}-s3cr3t` };

let dir: string;
let certs: TestCertificates;
let broker: LocalKafka | undefined;
let redisServer: LocalRedis | undefined;
let environment: WorkerEnvironment | undefined;
let collector: EventCollector | undefined;
let producer: Awaited<ReturnType<typeof commandProducer>> | undefined;
let securedEnv: Record<string, string>;
let names: WorkerKafkaNames;

/** The ACLs of one principal, as kafkajs's admin creates them. */
function aclEntries(principal: string, acls: readonly WorkerAcl[]): AclEntry[] {
  const resourceType = {
    Topic: AclResourceTypes.TOPIC,
    Group: AclResourceTypes.GROUP,
    TransactionalId: AclResourceTypes.TRANSACTIONAL_ID,
  } as const;
  const operation = {
    Read: AclOperationTypes.READ,
    Write: AclOperationTypes.WRITE,
    DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
  } as const;
  return acls.map((acl) => ({
    resourceType: resourceType[acl.resourceType],
    resourceName: acl.name,
    resourcePatternType: ResourcePatternTypes[acl.patternType],
    principal: `User:${principal}`,
    host: '*',
    operation: operation[acl.operation],
    permissionType: AclPermissionTypes.ALLOW,
  }));
}

/** The test's own clients (commands in, events out, topic settings) act as the platform team. */
function asAdmin(): Record<string, string> {
  return { KAFKA_SASL_USERNAME: kafkaAdmin.name, KAFKA_SASL_PASSWORD: kafkaAdmin.password };
}

/** What an operator would set: the documented variables only. */
function securedVariables(): Record<string, string> {
  if (!broker || !redisServer) throw new Error('services not started');
  return {
    KAFKA_BROKERS: broker.brokers.join(','),
    KAFKA_SSL: 'true',
    KAFKA_SSL_CA_FILE: certs.caFile,
    KAFKA_SSL_CERT_FILE: certs.clientCertFile,
    KAFKA_SSL_KEY_FILE: certs.clientKeyFile,
    KAFKA_SSL_SERVERNAME: kafkaServerName,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: kafkaUser.name,
    KAFKA_SASL_PASSWORD: kafkaUser.password,
    REDIS_URL: redisServer.url,
    REDIS_TLS_CA_FILE: certs.caFile,
    REDIS_TLS_CERT_FILE: certs.clientCertFile,
    REDIS_TLS_KEY_FILE: certs.clientKeyFile,
    REDIS_TLS_SERVERNAME: redisServerName,
    REDIS_USERNAME: redisUser.name,
    REDIS_PASSWORD: redisUser.password,
    TOPIC_MIN_INSYNC_REPLICAS: '1',
  };
}

/** The worker's own configuration of the secured variables, with overrides ('' unsets a variable). */
function configFor(overrides: Record<string, string>): ReturnType<typeof loadConfig> {
  return loadConfig({
    EXCHANGE_API_URL: 'http://127.0.0.1:1/api/v2',
    EXCHANGE_API_KEY_CEFI: 'unused-key',
    WEBHOOK_SECRET: 'unused-webhook-secret',
    ...securedEnv,
    ...overrides,
  });
}

/** A kafkajs client for the test itself, secured exactly as the worker's configuration says. */
function clientFor(overrides: Record<string, string>): Kafka {
  const config = configFor(overrides);
  return new Kafka({
    clientId: uniqueName('secured-test'),
    brokers: config.kafkaBrokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    retry: { retries: 0 },
    ...kafkaSecurityOptions(config.security.kafka),
  });
}

async function describeCluster(kafka: Kafka): Promise<number> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.length;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'eow-secured-'));
  certs = makeTestCertificates({
    dir: join(dir, 'certs'),
    serverNames: [kafkaServerName, redisServerName],
  });
  redisServer = await startLocalRedis({
    dir: join(dir, 'redis'),
    security: {
      certFile: certs.serverCertFile,
      keyFile: certs.serverKeyFile,
      caFile: certs.caFile,
      requireClientCertificate: true,
      users: [redisUser],
    },
  });
  broker = await startLocalKafka({
    dir: join(dir, 'kafka'),
    saslSsl: {
      keystoreFile: certs.serverKeystoreFile,
      keystorePassword: certs.keystorePassword,
      clientCaFile: certs.caFile,
      users: [kafkaUser, kafkaAdmin, kafkaLacking, kafkaLackingWrite],
      superUsers: [kafkaAdmin.name],
    },
  });
  securedEnv = securedVariables();
  // The platform team's part, before any worker starts: the topics (as the worker would create them: the same
  // settings) and the ACLs of the worker's principal, and of one that lacks the transactional id's.
  const run = uniqueName('secured');
  names = {
    commands: `${run}.commands`,
    events: `${run}.events`,
    state: `${run}.commands.state`,
    consumerGroup: `${run}.workers`,
  };
  const admin = clientFor(asAdmin()).admin();
  await admin.connect();
  try {
    await ensureTopics(
      KafkaClient.wrap(clientFor(asAdmin())),
      { ...names, partitions: 2, replicationFactor: 1, minInsyncReplicas: 1 },
      createLogger({ level: 'silent' }),
    );
    const acls = workerAcls(names);
    await admin.createAcls({
      acl: [
        ...aclEntries(kafkaUser.name, acls),
        ...aclEntries(
          kafkaLacking.name,
          acls.filter((acl) => acl.resourceType !== 'TransactionalId'),
        ),
        ...aclEntries(
          kafkaLackingWrite.name,
          acls.filter((acl) => !(acl.name === names.state && acl.operation === 'Write')),
        ),
      ],
    });
  } finally {
    await admin.disconnect();
  }
  environment = await startWorkerEnvironment({
    // The environment's own KAFKA_BROKERS / REDIS_URL are replaced by the secured ones in `env`.
    kafkaBrokers: broker.brokers,
    redisUrl: redisServer.url,
    workers: 1,
    partitions: 2,
    env: {
      ...securedEnv,
      TOPIC_COMMANDS: names.commands,
      TOPIC_EVENTS: names.events,
      CONSUMER_GROUP: names.consumerGroup,
    },
  });
  const kafka = clientFor(asAdmin());
  producer = await commandProducer(kafka, names.commands);
  collector = await EventCollector.start(kafka, names.events);
}, 240_000);

afterAll(async () => {
  await environment?.stop();
  await producer?.close().catch(() => {});
  await collector?.stop().catch(() => {});
  await broker?.stop().catch(() => {});
  await redisServer?.stop().catch(() => {});
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('secured Kafka (SASL_SSL, ACLs on) and Redis (TLS + ACL user)', () => {
  it('drives an order from order.create to order.completed over both, the worker holding only its ACLs', async () => {
    if (!environment || !producer || !collector) throw new Error('not started');
    const orderId = uniqueName('secured-order');
    await producer.send(orderCreateCommand('cefi', '0.731', orderId));
    const created = await collector.waitForOrderEvent(orderId, 'order.created', 90_000);
    const reference = String(created['unique_reference']);
    environment.sandbox.advanceOrder(reference, 'completed');
    await collector.waitForOrderEvent(orderId, 'order.completed', 90_000);
    expect(seqProblems(collector.of(orderId))).toEqual([]);

    // The worker's leases went through the secured Redis, under the ACL user.
    const redis = createRedis(securedEnv['REDIS_URL'] ?? '', {
      onError: () => {},
      security: configFor({}).security.redis,
    });
    try {
      await whenRedisReady(redis, 5_000);
      const keys = await redis.keys(`eow:${environment.env['CONSUMER_GROUP']}:*`);
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      await closeRedis(redis);
    }

    // The topics made with the worker's settings carry the configured min.insync.replicas.
    const admin = clientFor(asAdmin()).admin();
    await admin.connect();
    try {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [names.commands, names.state].map((name) => ({
          type: ConfigResourceTypes.TOPIC,
          name,
          configNames: ['min.insync.replicas'],
        })),
      });
      for (const resource of described.resources)
        expect(resource.configEntries.find((e) => e.configName === 'min.insync.replicas')).toMatchObject({
          configValue: '1',
          isDefault: false,
        });
    } finally {
      await admin.disconnect();
    }

    const log = environment.workers[0]?.log() ?? '';
    expect(log).toContain('worker started');
    for (const secret of [kafkaUser.password, redisUser.password]) expect(log).not.toContain(secret);
  });

  it('holds the worker to its ACLs: no topic of its own making, no reading of the events it writes', async () => {
    const admin = clientFor({}).admin();
    await admin.connect();
    try {
      const creation: unknown = await admin
        .createTopics({ topics: [{ topic: uniqueName('not-allowed'), numPartitions: 1 }] })
        .catch((error: unknown) => error);
      expect(kafkaAuthorizationFailure(creation)).toMatch(/^(TOPIC|CLUSTER)_AUTHORIZATION_FAILED$/);
      await expect(admin.fetchTopicOffsets(names.events)).resolves.toBeDefined();
    } finally {
      await admin.disconnect();
    }
    const reader = clientFor({}).consumer({ groupId: `${stateReaderGroupPrefix(names.state)}probe` });
    await reader.connect();
    try {
      await expect(
        reader.subscribe({ topics: [names.events], fromBeginning: true }),
      ).resolves.toBeUndefined();
      const refused = new Promise<string>((resolve) => {
        reader.on(reader.events.CRASH, ({ payload }) => resolve(payload.error.message));
      });
      await reader.run({ eachMessage: async () => {} });
      expect(await refused).toMatch(/not authorized|authorization/i);
    } finally {
      await reader.disconnect().catch(() => {});
    }
  });

  it.each([
    {
      lacks: 'Write on its transactional ids',
      user: kafkaLacking,
      failure: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
      needs: () => `Write on TransactionalId prefixed \\"${names.consumerGroup}.\\"`,
    },
    {
      lacks: 'Write on the state topic',
      user: kafkaLackingWrite,
      failure: 'TOPIC_AUTHORIZATION_FAILED',
      needs: () => `Write on Topic literal \\"${names.state}\\"`,
    },
  ])('stops at once a worker whose principal lacks $lacks, with an error naming the ACL', async (lacking) => {
    if (!environment) throw new Error('not started');
    const worker = await startWorker(uniqueName('lacking'), {
      ...environment.env,
      KAFKA_SASL_USERNAME: lacking.user.name,
      KAFKA_SASL_PASSWORD: lacking.user.password,
      WORKER_ID: uniqueName('lacking'),
    });
    // At its first transaction (a restore's barrier), not after the two minutes a transient failure is retried.
    const code = await Promise.race([
      worker.exited,
      new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 60_000)),
    ]);
    if (code === 'running') await worker.kill('SIGKILL');
    expect(code).toBe(1);
    const fatal = worker
      .log()
      .split('\n')
      .filter((line) => line.includes('"level":"fatal"'))
      .join('\n');
    expect(fatal).toContain(`Kafka refused the worker's principal: ${lacking.failure}.`);
    expect(fatal).toContain(lacking.needs());
    expect(fatal).toContain('(README, \\"Kafka ACLs\\")');
    expect(worker.log()).not.toContain(lacking.user.password);
  });

  it('refuses a wrong SASL password, a missing client certificate and a wrong server name', async () => {
    await expect(describeCluster(clientFor({ KAFKA_SASL_PASSWORD: 'not-the-password' }))).rejects.toThrow();
    await expect(
      describeCluster(clientFor({ KAFKA_SSL_CERT_FILE: '', KAFKA_SSL_KEY_FILE: '' })),
    ).rejects.toThrow();
    await expect(describeCluster(clientFor({ KAFKA_SSL_SERVERNAME: 'other.eow.test' }))).rejects.toThrow();
    // Without the ACL user the secured Redis refuses every command (the default user is off).
    const anonymous = createRedis(securedEnv['REDIS_URL'] ?? '', {
      onError: () => {},
      security: configFor({ REDIS_USERNAME: '', REDIS_PASSWORD: '' }).security.redis,
    });
    try {
      await expect(anonymous.ping()).rejects.toThrow();
    } finally {
      await closeRedis(anonymous);
    }
  });

  it('authenticates with SCRAM-SHA-256, PLAIN and an OAUTHBEARER token read from its file', async () => {
    expect(await describeCluster(clientFor({ KAFKA_SASL_MECHANISM: 'scram-sha-256' }))).toBe(1);
    expect(await describeCluster(clientFor({ KAFKA_SASL_MECHANISM: 'plain' }))).toBe(1);
    // Kafka's default OAUTHBEARER validator accepts unsigned JWS tokens: enough to prove the token file plumbing.
    const b64 = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const tokenFile = join(dir, 'token');
    writeFileSync(
      tokenFile,
      `${b64({ alg: 'none' })}.${b64({ sub: kafkaUser.name, iat: now, exp: now + 600 })}.\n`,
    );
    expect(
      await describeCluster(
        clientFor({
          KAFKA_SASL_MECHANISM: 'oauthbearer',
          KAFKA_SASL_USERNAME: '',
          KAFKA_SASL_PASSWORD: '',
          KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile,
        }),
      ),
    ).toBe(1);
  });
});
