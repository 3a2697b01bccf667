// .env.example stays true: it names every variable of the README's configuration table, and nothing the worker's
// configuration schema does not know.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config.ts';

const root = resolve(import.meta.dirname, '..', '..', '..');

describe('.env.example', () => {
  it('lists every variable of the README configuration table, and only variables the config schema reads', () => {
    const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Kafka contract'));
    // A row names one variable, or several that share a meaning: "| `A`, `B` | ...".
    const documented = [...section.matchAll(/^\| (`[A-Z0-9_]+`(?:, `[A-Z0-9_]+`)*)/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((name) => name[1]!),
    );
    expect(documented.length).toBeGreaterThan(20);
    const example = readFileSync(resolve(root, '.env.example'), 'utf8');
    expect(example).toMatch(/Every variable of the README's configuration table is listed/);
    const listed = [...example.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    expect([...new Set(listed)].sort()).toEqual([...new Set(documented)].sort());
    const known = Object.keys(configSchema.in.shape);
    expect(listed.filter((name) => !known.includes(name))).toEqual([]);
    expect(known.filter((name) => !listed.includes(name))).toEqual([]);
  });
});
