// A single-node Apache Kafka 3.9 broker in KRaft mode, run with the local JDK from Maven Central jars.
// The jars are resolved once into .cache/kafka/lib (git-ignored); storage is formatted per broker directory.
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
// Imported for its side effect: kafkajs's request queues quieted for this process's clients too.
import '../../src/kafka/kafka-client.ts';
import { MavenProgress } from './maven-progress.ts';
import {
  canConnect,
  freePort,
  isAlive,
  killAndWait,
  spawnDetached,
  tailFile,
  waitUntil,
} from './process-util.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const projectRoot = resolve(here, '..', '..');
const pomFile = join(here, 'kafka-broker.pom.xml');
const cacheDir = join(projectRoot, '.cache', 'kafka');
const libDir = join(cacheDir, 'lib');

export interface LocalKafkaState {
  kind: 'local';
  pid: number;
  port: number;
  controllerPort: number;
  dir: string;
  /** What clients use: the PLAINTEXT listener, or the SASL_SSL listener of a secured broker. */
  brokers: string[];
  /** The PLAINTEXT listener (inter-broker and our own readiness probe); equals `brokers` on a plain broker. */
  internalBrokers?: string[];
  securedPort?: number;
}

/**
 * A SASL_SSL listener for tests of secured connections. The broker keeps its PLAINTEXT listener for its own
 * inter-broker traffic and our readiness probe; `brokers` then names only the secured listener. Mechanisms
 * PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (the users below, for each) and OAUTHBEARER (Kafka's unsecured JWS
 * validator: for tests of the client's token plumbing only, never a production setting) are enabled.
 */
export interface LocalKafkaSaslSsl {
  /** PKCS#12 keystore with the broker's key and certificate. */
  keystoreFile: string;
  keystorePassword: string;
  /** PEM CA: when set, clients must present a certificate it signed (mutual TLS). */
  clientCaFile?: string;
  /** Users and passwords ([A-Za-z0-9._-] only). */
  users: Array<{ name: string; password: string }>;
  /**
   * ACLs on (KRaft's StandardAuthorizer, nothing allowed without an ACL) with these users as super users, who may
   * then grant the others theirs. The PLAINTEXT and CONTROLLER listeners' principal (ANONYMOUS: the broker itself
   * and our readiness probe, on 127.0.0.1) is a super user too.
   */
  superUsers?: string[];
}

export interface LocalKafka {
  readonly brokers: string[];
  readonly state: LocalKafkaState;
  stop(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  logTail(lines?: number): string;
}

function javaBinary(): string {
  const home = process.env['JAVA_HOME'];
  return home ? join(home, 'bin', 'java') : 'java';
}

/**
 * Resolves the broker jars with Maven unless the cache already matches the pom. Returns the classpath glob. Maven's
 * whole output goes to a log file (named in the first progress line); progress (files, bytes) is logged every 2 s.
 */
export async function ensureKafkaJars(log: (line: string) => void = () => {}): Promise<string> {
  const pomHash = createHash('sha256').update(readFileSync(pomFile)).digest('hex');
  const marker = join(libDir, '.complete');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === pomHash) return join(libDir, '*');
  try {
    execFileSync(javaBinary(), ['-version'], { stdio: 'pipe' });
  } catch {
    throw new Error(
      'no JDK found for the local Kafka broker (install JDK 17+, set JAVA_HOME, or set KAFKA_BROKERS)',
    );
  }
  rmSync(libDir, { recursive: true, force: true });
  mkdirSync(libDir, { recursive: true });
  const mavenLog = join(cacheDir, 'maven.log');
  log(`resolving Kafka broker jars with Maven into ${libDir} (first run only); Maven's log: ${mavenLog}`);
  const progress = new MavenProgress();
  const started = Date.now();
  const out = createWriteStream(mavenLog);
  const child = spawn(
    'mvn',
    ['-B', '-f', pomFile, 'dependency:copy-dependencies', `-DoutputDirectory=${libDir}`],
    { stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 },
  );
  let pending = '';
  const onChunk = (chunk: Buffer): void => {
    out.write(chunk);
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) progress.feed(line);
  };
  child.stdout.on('data', onChunk);
  child.stderr.on('data', onChunk);
  const ticker = setInterval(
    () => log(`Maven: ${progress.describe()} (${Math.round((Date.now() - started) / 1000)} s)`),
    2_000,
  );
  const code = await new Promise<number | null>((resolveExit, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode) => resolveExit(exitCode));
  }).finally(() => {
    clearInterval(ticker);
    out.end();
  });
  if (code !== 0) {
    throw new Error(
      `mvn could not resolve the Kafka broker jars (exit status ${String(code)}); see ${mavenLog}:\n${tailFile(mavenLog, 30)}`.slice(
        0,
        4000,
      ),
    );
  }
  log(`Maven: done, ${progress.describe()} in ${Math.round((Date.now() - started) / 1000)} s`);
  writeFileSync(marker, pomHash);
  return join(libDir, '*');
}

/**
 * A KRaft cluster id: 16 random bytes, base64url. One that starts with '-' is drawn again (as Kafka's own
 * Uuid.randomUuid does): kafka-storage's argument parser takes `-t -Mxo...` for a missing id followed by an option,
 * and the broker never starts (1 start in 64 failed that way).
 */
export function clusterId(bytes: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const id = bytes(16).toString('base64url').slice(0, 22);
    if (!id.startsWith('-')) return id;
  }
}

const safeCredential = /^[A-Za-z0-9._-]+$/;

function saslSslProperties(secured: LocalKafkaSaslSsl): string[] {
  for (const user of secured.users)
    if (!safeCredential.test(user.name) || !safeCredential.test(user.password))
      throw new Error('local Kafka: SASL user names and passwords must be [A-Za-z0-9._-]');
  const prefix = 'listener.name.secured';
  const plainUsers = secured.users.map((u) => `user_${u.name}="${u.password}"`).join(' ');
  return [
    'inter.broker.listener.name=PLAINTEXT',
    'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    `${prefix}.ssl.keystore.type=PKCS12`,
    `${prefix}.ssl.keystore.location=${secured.keystoreFile}`,
    `${prefix}.ssl.keystore.password=${secured.keystorePassword}`,
    `${prefix}.ssl.key.password=${secured.keystorePassword}`,
    ...(secured.clientCaFile
      ? [
          `${prefix}.ssl.truststore.type=PEM`,
          `${prefix}.ssl.truststore.location=${secured.clientCaFile}`,
          `${prefix}.ssl.client.auth=required`,
        ]
      : []),
    `${prefix}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ${plainUsers};`,
    `${prefix}.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
    `${prefix}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
    `${prefix}.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
    ...(secured.superUsers
      ? [
          'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
          'allow.everyone.if.no.acl.found=false',
          `super.users=${['ANONYMOUS', ...secured.superUsers].map((name) => `User:${name}`).join(';')}`,
        ]
      : []),
  ];
}

function serverProperties(state: LocalKafkaState, secured?: LocalKafkaSaslSsl): string {
  const securedListener = state.securedPort ? `,SECURED://127.0.0.1:${state.securedPort}` : '';
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${state.controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${state.port},CONTROLLER://127.0.0.1:${state.controllerPort}${securedListener}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${state.port}${securedListener}`,
    'controller.listener.names=CONTROLLER',
    `listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${securedListener ? ',SECURED:SASL_SSL' : ''}`,
    ...(secured && state.securedPort ? saslSslProperties(secured) : []),
    `log.dirs=${join(state.dir, 'data')}`,
    'num.partitions=1',
    'auto.create.topics.enable=false',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=12',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=4',
    'group.initial.rebalance.delay.ms=0',
    'log.cleaner.backoff.ms=2000',
    '',
  ].join('\n');
}

function log4jProperties(logFile: string): string {
  return [
    'log4j.rootLogger=INFO, file',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    'log4j.logger.kafka.request.logger=WARN',
    'log4j.logger.state.change.logger=WARN',
    '',
  ].join('\n');
}

export async function kafkaAnswers(brokers: string[], timeoutMs = 5000): Promise<boolean> {
  const admin = new Kafka({
    clientId: 'services-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: timeoutMs,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 && cluster.controller !== null;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

export async function startLocalKafka(opts: {
  dir: string;
  log?: (line: string) => void;
  /** Adds a SASL_SSL listener; `brokers` then names it (tests of secured connections). */
  saslSsl?: LocalKafkaSaslSsl;
}): Promise<LocalKafka> {
  const classpath = await ensureKafkaJars(opts.log);
  mkdirSync(opts.dir, { recursive: true });
  const taken = new Set<number>();
  const nextPort = async (): Promise<number> => {
    let candidate = await freePort();
    while (taken.has(candidate)) candidate = await freePort();
    taken.add(candidate);
    return candidate;
  };
  const port = await nextPort();
  const controllerPort = await nextPort();
  const securedPort = opts.saslSsl ? await nextPort() : undefined;
  const internalBrokers = [`127.0.0.1:${port}`];
  const state: LocalKafkaState = {
    kind: 'local',
    pid: 0,
    port,
    controllerPort,
    dir: opts.dir,
    brokers: securedPort ? [`127.0.0.1:${securedPort}`] : internalBrokers,
    internalBrokers,
    ...(securedPort ? { securedPort } : {}),
  };
  const props = join(opts.dir, 'server.properties');
  const brokerLog = join(opts.dir, 'broker.log');
  const stdoutLog = join(opts.dir, 'stdout.log');
  // A new broker starts from empty storage: data left by a broker that was killed (say, with the machine) belongs to
  // another cluster id and would make the format step fail.
  rmSync(join(opts.dir, 'data'), { recursive: true, force: true });
  writeFileSync(props, serverProperties(state, opts.saslSsl));
  writeFileSync(join(opts.dir, 'log4j.properties'), log4jProperties(brokerLog));
  const log4j = `-Dlog4j.configuration=file:${join(opts.dir, 'log4j.properties')}`;
  // SCRAM credentials live in the KRaft metadata: they are written when the storage is formatted.
  const scram = (opts.saslSsl?.users ?? []).flatMap((user) =>
    ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((mechanism) => [
      '--add-scram',
      `${mechanism}=[name=${user.name},password=${user.password}]`,
    ]),
  );
  execFileSync(
    javaBinary(),
    ['-cp', classpath, log4j, 'kafka.tools.StorageTool', 'format', '-t', clusterId(), '-c', props, ...scram],
    {
      stdio: 'pipe',
    },
  );
  const logTail = (lines = 40): string =>
    `--- ${brokerLog} (tail) ---\n${tailFile(brokerLog, lines)}\n--- ${stdoutLog} (tail) ---\n${tailFile(stdoutLog, 15)}`;

  const start = async (): Promise<void> => {
    state.pid = spawnDetached(
      javaBinary(),
      [
        '-Xms128m',
        '-Xmx768m',
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-Djava.awt.headless=true',
        log4j,
        '-cp',
        classpath,
        'kafka.Kafka',
        props,
      ],
      { logFile: stdoutLog },
    );
    await waitUntil(
      `Kafka broker on 127.0.0.1:${port}`,
      async () => {
        if (!isAlive(state.pid)) throw new Error(`Kafka broker exited during start-up\n${logTail()}`);
        return (await canConnect(port)) && (await kafkaAnswers(internalBrokers));
      },
      90_000,
      () => logTail(),
    );
  };
  await start();
  opts.log?.(`Kafka broker on ${state.brokers.join(',')}; its log: ${brokerLog}`);
  return {
    brokers: state.brokers,
    state,
    stop: (signal = 'SIGTERM') => killAndWait(state.pid, signal, 30_000),
    start,
    restart: async () => {
      await killAndWait(state.pid, 'SIGTERM', 30_000);
      await start();
    },
    logTail,
  };
}

export async function stopLocalKafka(state: LocalKafkaState): Promise<void> {
  await killAndWait(state.pid, 'SIGTERM', 30_000);
  rmSync(state.dir, { recursive: true, force: true });
}
