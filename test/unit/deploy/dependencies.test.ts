// The installed tree the image and CI get from package-lock.json. OpenTelemetry publishes its SDK as one release of
// many packages (core, resources, sdk-metrics, sdk-trace, otlp-transformer, ...) that pin each other exactly;
// a direct dependency one patch ahead of the sdk-node release made npm install a second copy of each under every
// package of that release, and the worker loaded them all: sdk-node's import, after the worker's other dependencies,
// added 44 MiB of resident memory and 20 MiB of heap, against 13 and 5 with one copy (a fixed cost of every replica).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string }>;
};

const otelPackage = /(?:^|\/)node_modules\/(@opentelemetry\/[^/]+)$/;

describe('installed dependencies', () => {
  it('install every OpenTelemetry package once, at one version', () => {
    const nested = Object.keys(lock.packages).filter(
      (path) => otelPackage.test(path) && path.indexOf('node_modules/') !== path.lastIndexOf('node_modules/'),
    );
    expect(nested).toEqual([]);
    const versions = new Map<string, Set<string>>();
    for (const [path, entry] of Object.entries(lock.packages)) {
      const name = otelPackage.exec(path)?.[1];
      if (name && entry.version) versions.set(name, (versions.get(name) ?? new Set()).add(entry.version));
    }
    expect(versions.size).toBeGreaterThan(10);
    expect([...versions].filter(([, v]) => v.size > 1)).toEqual([]);
  });

  it('pin the SDK packages the worker depends on directly to the release sdk-node depends on', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const sdkNode = lock.packages['node_modules/@opentelemetry/sdk-node'] as {
      dependencies?: Record<string, string>;
    };
    const released = sdkNode.dependencies ?? {};
    // Those the release pins exactly (semantic-conventions is a range of its own, and api a peer).
    const direct = Object.entries(manifest.dependencies).filter(([name]) => /^\d/.test(released[name] ?? ''));
    expect(direct.length).toBeGreaterThan(5);
    for (const [name, range] of direct) expect({ name, range }).toEqual({ name, range: released[name] });
  });
});
