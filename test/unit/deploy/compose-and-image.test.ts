// docker-compose.yml and deploy/Dockerfile, checked without a Docker engine (none exists where this runs): the
// compose file is parsed, the worker's environment is a valid configuration of known variables, every image is
// pinned, start-up is gated on health, the stop grace exceeds the shutdown bound, and the one-shot service sends
// the README's example order; the Dockerfile is multi-stage, production-only, sandbox-free, HEALTHCHECK-free,
// numeric-user and pinned to the Node minor the project runs on.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { allocatorEnv } from '../../../src/process/allocator-env.ts';
import { configSchema, loadConfig } from '../../../src/config.ts';
import { workerImageEnv } from './image-environment.ts';
import { deployRoot } from './kustomize-renderer.ts';

const root = join(deployRoot, '..');
interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string };
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
  command?: string | string[];
  restart?: string;
}
const compose = parseYaml(readFileSync(join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, ComposeService>;
};
const services = compose.services;
const dockerfile = readFileSync(join(deployRoot, 'Dockerfile'), 'utf8');

function seconds(duration: string | undefined): number {
  const match = /^(\d+)(ms|s|m)$/.exec(duration ?? '');
  if (!match) return 0;
  const value = Number(match[1]);
  return match[2] === 'ms' ? value / 1000 : match[2] === 'm' ? value * 60 : value;
}

/** The Dockerfile's stages: name -> lines. */
function stages(): Map<string, string[]> {
  const result = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of dockerfile.split('\n')) {
    const from = /^FROM\s+\S+\s+AS\s+(\S+)/i.exec(line);
    if (from) result.set(from[1] as string, (current = []));
    else if (current && line.trim() && !line.startsWith('#')) current.push(line.trim());
  }
  return result;
}

describe('docker-compose.yml', () => {
  it('runs sandbox, Kafka, Redis, the worker, Jaeger 2 and a one-shot example order', () => {
    expect(Object.keys(services).sort()).toEqual([
      'example-order',
      'jaeger',
      'kafka',
      'redis',
      'sandbox',
      'worker',
    ]);
    expect(services['jaeger']?.image).toMatch(/^jaegertracing\/jaeger:2\.\d+\.\d+$/);
    expect(services['sandbox']?.build).toMatchObject({ dockerfile: 'deploy/Dockerfile', target: 'sandbox' });
    expect(services['worker']?.build).toMatchObject({ dockerfile: 'deploy/Dockerfile', target: 'worker' });
  });

  it('pins every image to a version (or digest), never latest', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.image, name).toBeDefined();
      expect(service.image, name).toMatch(/(:\d+(\.\d+){1,2}|@sha256:[0-9a-f]{64})$/);
    }
  });

  it('gives the worker only variables the config schema knows, forming a valid configuration', () => {
    const env = services['worker']?.environment ?? {};
    const known = new Set(Object.keys(configSchema.in.shape));
    expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([]);
    // As the container sees it: the image's own environment (NODE_ENV=production) under the compose file's.
    const config = loadConfig({ ...workerImageEnv(), ...env });
    expect(config.production).toBe(true);
    expect(config.otlpEndpoint).toBe('http://jaeger:4318');
    expect(seconds(services['worker']?.stop_grace_period)).toBeGreaterThan(config.shutdownTimeoutMs / 1000);
  });

  it('starts each service once what it needs is healthy', () => {
    for (const name of ['kafka', 'redis', 'sandbox', 'worker'])
      expect(services[name]?.healthcheck, name).toBeDefined();
    expect(services['worker']?.depends_on).toMatchObject({
      kafka: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
      sandbox: { condition: 'service_healthy' },
    });
    expect(services['example-order']?.depends_on).toEqual({ worker: { condition: 'service_healthy' } });
    expect(services['worker']?.healthcheck?.test.join(' ')).toContain(':9464/readyz');
  });

  it("sends exactly the README's example order", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const example = /echo '(demo-1\|\{[^']+\})'/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const command = [services['example-order']?.command ?? ''].flat().join('\n');
    expect(command).toContain(`echo '${example}'`);
    expect(command).toContain('--topic exchange.orders.commands');
    expect(services['example-order']?.restart).toBe('no');
  });
});

describe('deploy/Dockerfile', () => {
  const all = stages();

  it('pins Node 24 to the minor the project runs on', () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    const [major, minor] = (lock.packages['node_modules/node']?.version ?? '').split('.');
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_IMAGE=node:${major}\\.${minor}-[a-z]+-slim$`, 'm'));
    for (const line of dockerfile.split('\n').filter((l) => l.startsWith('FROM')))
      expect(line).toMatch(/^FROM \$\{NODE_IMAGE\} AS /);
  });

  it('installs production dependencies only and has no HEALTHCHECK', () => {
    expect(all.get('dependencies')?.join('\n')).toContain('npm ci --omit=dev');
    expect(dockerfile).not.toMatch(/^HEALTHCHECK/m);
  });

  it('keeps the sandbox out of every layer of the worker image', () => {
    const worker = all.get('worker') ?? [];
    expect(worker.length).toBeGreaterThan(0);
    expect(
      dockerfile
        .trimEnd()
        .split('\n')
        .filter((l) => l.startsWith('FROM'))
        .at(-1),
    ).toMatch(/AS worker$/);
    const copies = worker.filter((l) => l.startsWith('COPY'));
    for (const copy of copies)
      expect(copy).toMatch(/^COPY (--from=dependencies \S+|package\.json|src|machines) \.\/\S*$/);
    expect(worker.join('\n')).not.toContain('sandbox');
  });

  it("sets the worker's glibc allocator settings in the image and in npm start", () => {
    const env = Object.fromEntries(
      (all.get('worker') ?? [])
        .filter((l) => l.startsWith('ENV '))
        .flatMap((l) => l.slice(4).trim().split(/\s+/))
        .map((pair) => pair.split('=') as [string, string]),
    );
    expect(env).toMatchObject(allocatorEnv);
    const start = (
      JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts['start'];
    for (const [name, value] of Object.entries(allocatorEnv)) expect(start).toContain(`${name}=${value} `);
  });

  it('runs node as PID 1 under a numeric user', () => {
    for (const [name, cmd] of [
      ['worker', '["node", "src/main.ts"]'],
      ['sandbox', '["node", "sandbox/main.ts"]'],
    ] as const) {
      const lines = all.get(name) ?? [];
      expect(lines).toContain(`CMD ${cmd}`);
      expect(lines.find((l) => l.startsWith('USER'))).toMatch(/^USER [1-9]\d*:[1-9]\d*$/);
      expect(lines.some((l) => l.startsWith('ENTRYPOINT'))).toBe(false);
    }
  });
});
