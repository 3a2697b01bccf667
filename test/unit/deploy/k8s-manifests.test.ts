// The Kubernetes manifests as a cluster would receive them: each overlay rendered (with `kubectl kustomize` too,
// where kubectl is installed, and the two renderings compared), every object validated against the Kubernetes, KEDA
// and Prometheus Operator schemas, and the properties the runbook relies on checked: restricted Pod Security, probes
// (start-up only once restored, readiness for webhooks), a configuration change that rolls the pods, grace period
// above the shutdown bound, PDB, KEDA alone owning the replica count, capped at the partition count, a webhook
// Service a terminating pod leaves, replicated topics, a pinned image, the dev cluster's own Kafka, Redis, sandbox
// and collector address. The alert rules: prometheus-rules.test.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from '../../../src/config.ts';
import { workerImageEnv } from './image-environment.ts';
import { configMapHash, deployRoot, renderKustomization, type K8sObject } from './kustomize-renderer.ts';

const targets = {
  dev: join(deployRoot, 'k8s', 'overlays', 'dev'),
  production: join(deployRoot, 'k8s', 'overlays', 'production'),
  collector: join(deployRoot, 'k8s', 'examples', 'otel-collector'),
};
const packageVersion = (
  JSON.parse(readFileSync(join(deployRoot, '..', 'package.json'), 'utf8')) as { version: string }
).version;

const modelModules: Record<string, string> = {
  v1: 'kubernetes-models/v1',
  'apps/v1': 'kubernetes-models/apps/v1',
  'policy/v1': 'kubernetes-models/policy/v1',
  'networking.k8s.io/v1': 'kubernetes-models/networking.k8s.io/v1',
  'keda.sh/v1alpha1': '@kubernetes-models/keda/keda.sh/v1alpha1',
  'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
};

function kubectlAvailable(): boolean {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

const key = (o: K8sObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKind = (objects: K8sObject[], kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
function only(objects: K8sObject[], kind: string): K8sObject {
  const found = byKind(objects, kind);
  expect(found, `exactly one ${kind}`).toHaveLength(1);
  return found[0] as K8sObject;
}

interface Container {
  name: string;
  image: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  securityContext?: Record<string, unknown>;
  startupProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  lifecycle?: { preStop?: { sleep?: { seconds: number } } };
  env?: Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}
interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  initContainers?: Container[];
  volumes?: Array<Record<string, unknown>>;
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
}
const podSpec = (o: K8sObject): PodSpec => (o['spec'] as { template: { spec: PodSpec } }).template.spec;
const podLabels = (o: K8sObject): Record<string, string> =>
  (o['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
/** The ConfigMap the worker container's envFrom names (its generated name carries a hash of its content). */
function workerConfigMap(objects: K8sObject[]): K8sObject | undefined {
  const statefulSet = byKind(objects, 'StatefulSet').find((o) => o.metadata.name === 'exchange-order-worker');
  const worker = statefulSet && podSpec(statefulSet).containers.find((c) => c.name === 'worker');
  const name = worker?.envFrom?.find((from) => from.configMapRef)?.configMapRef?.name;
  return byKind(objects, 'ConfigMap').find((c) => c.metadata.name === name);
}
const workerConfig = (objects: K8sObject[]): Record<string, string> =>
  (workerConfigMap(objects)?.['data'] ?? {}) as Record<string, string>;

/** The checks of the Pod Security "restricted" profile (v1.30) that apply to these pods. */
function restrictedProfileViolations(spec: PodSpec): string[] {
  const problems: string[] = [];
  const pod = spec.securityContext ?? {};
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) problems.push('host namespaces');
  const allowedVolumes = new Set([
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ]);
  for (const volume of spec.volumes ?? [])
    for (const type of Object.keys(volume).filter((k) => k !== 'name'))
      if (!allowedVolumes.has(type)) problems.push(`volume type ${type}`);
  const podSeccomp = (pod['seccompProfile'] as { type?: string } | undefined)?.type;
  for (const container of [...spec.containers, ...(spec.initContainers ?? [])]) {
    const sc = container.securityContext ?? {};
    const where = `container ${container.name}`;
    if (sc['privileged'] === true) problems.push(`${where}: privileged`);
    if (sc['allowPrivilegeEscalation'] !== false)
      problems.push(`${where}: allowPrivilegeEscalation not false`);
    const runAsNonRoot = sc['runAsNonRoot'] ?? pod['runAsNonRoot'];
    if (runAsNonRoot !== true) problems.push(`${where}: runAsNonRoot not true`);
    const user = sc['runAsUser'] ?? pod['runAsUser'];
    if (typeof user !== 'number' || user === 0)
      problems.push(`${where}: runAsUser not a numeric non-root id`);
    const seccomp = (sc['seccompProfile'] as { type?: string } | undefined)?.type ?? podSeccomp;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') problems.push(`${where}: seccompProfile`);
    const caps = (sc['capabilities'] ?? {}) as { drop?: string[]; add?: string[] };
    if (!caps.drop?.includes('ALL')) problems.push(`${where}: capabilities do not drop ALL`);
    for (const cap of caps.add ?? []) if (cap !== 'NET_BIND_SERVICE') problems.push(`${where}: adds ${cap}`);
  }
  return problems;
}

let secretsDir: string;
let caFile: string;
beforeAll(() => {
  secretsDir = mkdtempSync(join(tmpdir(), 'eow-k8s-'));
  caFile = join(secretsDir, 'ca.crt');
  writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
});
afterAll(() => rmSync(secretsDir, { recursive: true, force: true }));

const rendered = Object.fromEntries(
  Object.entries(targets).map(([name, dir]) => [name, renderKustomization(dir)]),
) as Record<keyof typeof targets, K8sObject[]>;

describe('kustomize rendering', () => {
  it.runIf(kubectlAvailable())('matches `kubectl kustomize` object for object', () => {
    for (const [name, dir] of Object.entries(targets)) {
      const output = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      const fromKubectl = parseAllDocuments(output).map((d) => d.toJS() as K8sObject);
      const ours = rendered[name as keyof typeof targets];
      expect(ours.map(key).sort(), name).toEqual(fromKubectl.map(key).sort());
      for (const object of fromKubectl)
        expect(
          ours.find((o) => key(o) === key(object)),
          key(object),
        ).toEqual(object);
    }
  });

  it('validates every rendered object against the Kubernetes and KEDA schemas', async () => {
    for (const [name, objects] of Object.entries(rendered)) {
      expect(objects.length, name).toBeGreaterThan(0);
      for (const object of objects) {
        const module = modelModules[object.apiVersion];
        expect(module, `${name}: no schema for ${object.apiVersion}`).toBeDefined();
        const models = (await import(module as string)) as Record<
          string,
          new (o: unknown) => { validate(): void }
        >;
        const Model = models[object.kind];
        expect(Model, `${name}: no schema for ${object.apiVersion} ${object.kind}`).toBeDefined();
        expect(
          () => new (Model as new (o: unknown) => { validate(): void })(object).validate(),
          `${name}: ${key(object)}`,
        ).not.toThrow();
      }
    }
  });

  it('refuses a schema violation (the validation can fail)', async () => {
    const { StatefulSet } = await import('kubernetes-models/apps/v1');
    const broken = structuredClone(only(rendered.production, 'StatefulSet'));
    (podSpec(broken).containers[0] as Container).ports = [{ name: 'webhooks', containerPort: 'x' as never }];
    expect(() => new StatefulSet(broken as never).validate()).toThrow(/containerPort/);
  });
});

describe.each(['dev', 'production'] as const)('the %s overlay', (overlay) => {
  const objects = rendered[overlay];
  const statefulSet = only(objects, 'StatefulSet');
  const spec = podSpec(statefulSet);
  const worker = spec.containers.find((c) => c.name === 'worker') as Container;
  const config = workerConfig(objects);

  it('runs the worker as a StatefulSet whose pod name is WORKER_ID', () => {
    expect(worker).toBeDefined();
    expect(worker.env).toContainEqual({
      name: 'WORKER_ID',
      valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
    });
    expect(config['WORKER_ID']).toBeUndefined();
  });

  it('passes the Pod Security "restricted" profile with a numeric non-root user', () => {
    expect(restrictedProfileViolations(spec)).toEqual([]);
    expect(worker.securityContext?.['readOnlyRootFilesystem']).toBe(true);
  });

  it('probes start-up on /startupz (restored), liveness on /healthz and readiness for webhooks, on the metrics port', () => {
    const metricsPort = worker.ports?.find((p) => p.name === 'metrics');
    expect(metricsPort?.containerPort).toBe(9464);
    expect(worker.startupProbe?.httpGet).toEqual({ path: '/startupz', port: 'metrics' });
    expect(worker.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(worker.readinessProbe?.httpGet).toEqual({ path: '/readyz/webhooks', port: 'metrics' });
  });

  it('rolls the pods on a configuration change: the ConfigMap they read is named by its content', () => {
    const configMap = workerConfigMap(objects);
    expect(configMap?.metadata.name).toMatch(/^exchange-order-worker-config-[a-z0-9]{10}$/);
    const hash = configMap?.metadata.name.slice('exchange-order-worker-config-'.length);
    expect(hash).toBe(configMapHash(config));
    expect(configMapHash({ ...config, LOG_LEVEL: 'warn' })).not.toBe(hash);
    expect(byKind(objects, 'ConfigMap').map((c) => c.metadata.name)).not.toContain(
      'exchange-order-worker-config',
    );
  });

  it('routes webhooks to ready pods only, so a terminating pod leaves the endpoints during its preStop pause', () => {
    const webhooks = byKind(objects, 'Service').find(
      (s) => s.metadata.name === 'exchange-order-worker-webhooks',
    );
    expect(
      (webhooks?.['spec'] as { publishNotReadyAddresses?: boolean }).publishNotReadyAddresses,
    ).toBeFalsy();
    expect(worker.lifecycle?.preStop?.sleep?.seconds).toBeGreaterThanOrEqual(5);
  });

  it('gives the pod more time than the preStop pause plus SHUTDOWN_TIMEOUT_MS', () => {
    const shutdownMs = loadConfig({
      KAFKA_BROKERS: 'k:9092',
      REDIS_URL: 'redis://r:6379',
      EXCHANGE_API_URL: 'https://x/api/v2',
      EXCHANGE_API_KEY_CEFI: 'k',
      WEBHOOK_SECRET: 'w',
      ...(config['SHUTDOWN_TIMEOUT_MS'] ? { SHUTDOWN_TIMEOUT_MS: config['SHUTDOWN_TIMEOUT_MS'] } : {}),
    }).shutdownTimeoutMs;
    const preStop = worker.lifecycle?.preStop?.sleep?.seconds ?? 0;
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(preStop + shutdownMs / 1000);
  });

  it('is a valid worker configuration, with every variable known to the config schema', () => {
    const known = new Set(Object.keys(configSchema.in.shape));
    expect(Object.keys(config).filter((name) => !known.has(name))).toEqual([]);
    const files = Object.fromEntries(
      Object.entries(config).map(([name, value]) => [name, name.endsWith('_FILE') ? caFile : value]),
    );
    const secrets = {
      EXCHANGE_API_KEY_CEFI: 'k',
      WEBHOOK_SECRET: 'w',
      ...(config['KAFKA_SASL_MECHANISM'] ? { KAFKA_SASL_PASSWORD: 'p' } : {}),
      ...(config['REDIS_USERNAME'] ? { REDIS_PASSWORD: 'p' } : {}),
    };
    // As the pod sees it: the image's environment (NODE_ENV=production) under the ConfigMap's and the Secret's.
    expect(() => loadConfig({ ...workerImageEnv(), ...files, ...secrets })).not.toThrow();
  });

  it('keeps the webhook Service to webhooks and puts metrics on the headless pods Service', () => {
    const services = byKind(objects, 'Service');
    const webhooks = services.find((s) => s.metadata.name === 'exchange-order-worker-webhooks');
    const pods = services.find((s) => s.metadata.name === 'exchange-order-worker-pods');
    const ports = (s: K8sObject | undefined) =>
      (s?.['spec'] as { ports: Array<{ targetPort: string }> } | undefined)?.ports.map((p) => p.targetPort);
    expect(ports(webhooks)).toEqual(['webhooks']);
    expect(ports(pods)).toEqual(['metrics']);
    expect((pods?.['spec'] as { clusterIP?: string }).clusterIP).toBe('None');
    expect((statefulSet['spec'] as { serviceName: string }).serviceName).toBe('exchange-order-worker-pods');
  });

  it('has a PodDisruptionBudget and a NetworkPolicy selecting the worker pods', () => {
    const labels = podLabels(statefulSet);
    for (const kind of ['PodDisruptionBudget', 'NetworkPolicy']) {
      const object = only(objects, kind);
      const selector =
        (object['spec'] as { selector?: { matchLabels: object }; podSelector?: { matchLabels: object } })
          .selector ?? (object['spec'] as { podSelector: { matchLabels: object } }).podSelector;
      expect(labels).toMatchObject(selector.matchLabels);
    }
    const pdb = only(objects, 'PodDisruptionBudget')['spec'] as { maxUnavailable?: number };
    expect(pdb.maxUnavailable).toBe(1);
  });

  it('lets the worker reach every endpoint of its configuration through the NetworkPolicy', () => {
    const egress = (
      only(objects, 'NetworkPolicy')['spec'] as {
        egress: Array<{ ports?: Array<{ port: number }>; to?: unknown }>;
      }
    ).egress;
    const open = new Set(
      egress.filter((rule) => !rule.to).flatMap((rule) => (rule.ports ?? []).map((p) => p.port)),
    );
    const portOf = (url: string): number => {
      const parsed = new URL(url);
      return Number(
        parsed.port || (parsed.protocol === 'https:' ? 443 : parsed.protocol === 'http:' ? 80 : 6379),
      );
    };
    const needed = [
      ...(config['KAFKA_BROKERS'] ?? '').split(',').map((broker) => Number(broker.split(':').at(-1))),
      portOf(config['REDIS_URL'] ?? ''),
      portOf(config['EXCHANGE_API_URL'] ?? ''),
      ...(config['OTEL_EXPORTER_OTLP_ENDPOINT'] ? [portOf(config['OTEL_EXPORTER_OTLP_ENDPOINT'])] : []),
      53,
    ];
    expect(needed.filter((port) => !open.has(port))).toEqual([]);
  });

  it('pins the image: never latest, a version or a digest', () => {
    expect(worker.image).not.toMatch(/:latest$/);
    expect(worker.image).toMatch(
      new RegExp(`(:${packageVersion.replace(/\./g, '\\.')}|@sha256:[0-9a-f]{64})$`),
    );
  });
});

describe('the dev overlay', () => {
  const objects = rendered.dev;
  const config = workerConfig(objects);
  const namespace = only(objects, 'StatefulSet').metadata.namespace;

  it('brings the Kafka, Redis and exchange sandbox its configuration names, in its own namespace', () => {
    const hosts = [
      ...(config['KAFKA_BROKERS'] ?? '').split(',').map((broker) => broker.split(':')[0] as string),
      new URL(config['REDIS_URL'] ?? '').hostname,
      new URL(config['EXCHANGE_API_URL'] ?? '').hostname,
    ];
    const services = byKind(objects, 'Service').map(
      (s) => `${s.metadata.name}.${s.metadata.namespace ?? ''}`,
    );
    expect(hosts.filter((host) => !services.includes(host))).toEqual([]);
    for (const name of ['kafka', 'redis', 'exchange-sandbox'])
      expect(byKind(objects, 'Deployment').map((d) => d.metadata.name)).toContain(name);
    expect(hosts.every((host) => host.endsWith(`.${namespace}`))).toBe(true);
  });

  it('exports traces to the example collector where it renders', () => {
    const collector = byKind(rendered.collector, 'Service').find((s) => s.metadata.name === 'otel-collector');
    const endpoint = new URL(config['OTEL_EXPORTER_OTLP_ENDPOINT'] ?? '');
    expect(endpoint.hostname).toBe(`${collector?.metadata.name}.${collector?.metadata.namespace}`);
    expect(Number(endpoint.port)).toBe(
      (collector?.['spec'] as { ports: Array<{ port: number }> }).ports[0]?.port,
    );
  });
});

describe('the production overlay', () => {
  const objects = rendered.production;
  const config = workerConfig(objects);

  it('leaves the replica count to KEDA: the StatefulSet states none', () => {
    const statefulSet = only(objects, 'StatefulSet');
    expect((statefulSet['spec'] as { replicas?: number }).replicas).toBeUndefined();
    expect(
      (only(objects, 'ScaledObject')['spec'] as { scaleTargetRef: { name: string } }).scaleTargetRef.name,
    ).toBe(statefulSet.metadata.name);
  });

  it('scrapes every pod with a ServiceMonitor on the headless Service, from the namespace the NetworkPolicy admits', () => {
    const monitor = only(objects, 'ServiceMonitor')['spec'] as {
      selector: { matchLabels: Record<string, string> };
      endpoints: Array<{ port: string; path: string }>;
    };
    const selected = byKind(objects, 'Service').filter((service) =>
      Object.entries(monitor.selector.matchLabels).every(
        ([label, value]) =>
          (service.metadata['labels'] as Record<string, string> | undefined)?.[label] === value,
      ),
    );
    expect(selected.map((service) => service.metadata.name)).toEqual(['exchange-order-worker-pods']);
    expect(monitor.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
    expect(only(objects, 'PrometheusRule').metadata.namespace).toBe(
      only(objects, 'StatefulSet').metadata.namespace,
    );
  });

  it('replicates the topics it creates and exports traces', () => {
    expect(config).toMatchObject({
      TOPIC_REPLICATION_FACTOR: '3',
      TOPIC_MIN_INSYNC_REPLICAS: '2',
      KAFKA_SSL: 'true',
    });
    expect(config['OTEL_EXPORTER_OTLP_ENDPOINT']).toMatch(/^https?:\/\//);
    expect(config['REDIS_URL']).toMatch(/^rediss:\/\//);
  });

  it('scales on the consumer group lag, between a floor that keeps orders polled and the partition count', () => {
    const scaled = only(objects, 'ScaledObject')['spec'] as {
      scaleTargetRef: { kind: string; name: string };
      minReplicaCount: number;
      maxReplicaCount: number;
      triggers: Array<{
        type: string;
        metadata: Record<string, string>;
        authenticationRef?: { name: string };
      }>;
    };
    const statefulSet = only(objects, 'StatefulSet');
    expect(scaled.scaleTargetRef).toMatchObject({ kind: 'StatefulSet', name: statefulSet.metadata.name });
    expect(scaled.minReplicaCount).toBeGreaterThanOrEqual(2);
    expect(scaled.maxReplicaCount).toBeLessThanOrEqual(Number(config['TOPIC_PARTITIONS']));
    const kafka = scaled.triggers.find((t) => t.type === 'kafka');
    const defaults = loadConfig({
      KAFKA_BROKERS: 'k:9092',
      REDIS_URL: 'redis://r:6379',
      EXCHANGE_API_URL: 'https://x/api/v2',
      EXCHANGE_API_KEY_CEFI: 'k',
      WEBHOOK_SECRET: 'w',
    });
    expect(kafka?.metadata).toMatchObject({
      consumerGroup: config['CONSUMER_GROUP'] ?? defaults.consumerGroup,
      topic: config['TOPIC_COMMANDS'] ?? defaults.topics.commands,
      bootstrapServers: config['KAFKA_BROKERS'],
      allowIdleConsumers: 'false',
    });
    const auth = only(objects, 'TriggerAuthentication');
    expect(kafka?.authenticationRef?.name).toBe(auth.metadata.name);
  });
});
