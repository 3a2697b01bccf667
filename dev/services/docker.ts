// The Docker path of service provisioning, for machines that have a Docker engine: Kafka (apache/kafka, KRaft)
// and Redis through testcontainers. Only used when `docker info` really answers.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { GenericContainer, Wait } from 'testcontainers';
import { freePort } from './process-util.ts';

const run = promisify(execFile);

export interface DockerServiceState {
  kind: 'docker';
  containerId: string;
}

export async function dockerEngineAnswers(): Promise<boolean> {
  if (process.env['SERVICES_NO_DOCKER'] === '1') return false;
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

export async function startDockerKafka(): Promise<DockerServiceState & { brokers: string[] }> {
  const hostPort = await freePort();
  const container = await new GenericContainer(process.env['KAFKA_IMAGE'] ?? 'apache/kafka:3.9.1')
    .withExposedPorts({ container: 9092, host: hostPort })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${hostPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  return { kind: 'docker', containerId: container.getId(), brokers: [`127.0.0.1:${hostPort}`] };
}

export async function startDockerRedis(): Promise<DockerServiceState & { url: string }> {
  const container = await new GenericContainer(process.env['REDIS_IMAGE'] ?? 'redis:7')
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .start();
  return {
    kind: 'docker',
    containerId: container.getId(),
    url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`,
  };
}

export async function stopDockerContainer(state: DockerServiceState): Promise<void> {
  await run('docker', ['rm', '-f', '-v', state.containerId], { timeout: 60_000 }).catch(() => {});
}
