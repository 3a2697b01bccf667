// Every variable the configuration schema reads has a row in the README's configuration table, and every secret
// one is marked as such there: operators deploy from that table (ConfigMap vs Secret).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config.ts';
import { deployRoot } from './kustomize-renderer.ts';

const readme = readFileSync(join(deployRoot, '..', 'README.md'), 'utf8');
// A row names one variable, or several that share a meaning: "| `A`, `B` | ...".
const rows = new Map(
  readme
    .split('\n')
    .map((line) => /^\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*)\s*\|(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .flatMap((match) =>
      [...(match[1] as string).matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map(
        (name) => [name[1] as string, match[2] as string] as const,
      ),
    ),
);

describe('README configuration table', () => {
  it('documents every variable of the config schema', () => {
    const variables = Object.keys(configSchema.in.shape);
    expect(variables.filter((name) => !rows.has(name))).toEqual([]);
  });

  it('marks passwords, keys, tokens and secrets as secret', () => {
    const secretLike = [...rows.keys()].filter((name) =>
      /(PASSWORD|SECRET|TOKEN$|^EXCHANGE_API_KEY_)/.test(name),
    );
    expect(secretLike.length).toBeGreaterThan(0);
    expect(secretLike.filter((name) => !rows.get(name)?.includes('**secret.**'))).toEqual([]);
  });
});
