// Every OpenTelemetry instrumentation package the worker declares is one it installs: a declared package that nothing
// imports is a reader's trap (it looks instrumented and is not) and weight in the image. The reasons for those not
// used are in docs/decisions/telemetry.md.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const telemetryDir = join(root, 'src', 'telemetry');
const telemetrySource = readdirSync(telemetryDir)
  .filter((file) => file.endsWith('.ts'))
  .map((file) => readFileSync(join(telemetryDir, file), 'utf8'))
  .join('\n');

describe('OpenTelemetry instrumentations', () => {
  const declared = Object.keys(manifest.dependencies).filter((name) =>
    name.startsWith('@opentelemetry/instrumentation-'),
  );

  it('declares some (the runtime metrics and the Redis spans)', () => {
    expect(declared).toContain('@opentelemetry/instrumentation-runtime-node');
  });

  it('imports every declared one in src/telemetry/', () => {
    expect(declared.filter((name) => !telemetrySource.includes(`from '${name}'`))).toEqual([]);
  });
});
