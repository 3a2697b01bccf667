// The Lua registry: every script of src/ is registered in one place (src/redis/scripts.ts), under the
// "<name>-<number of keys>.lua" naming, and the number in its name is the number of KEYS it reads.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { luaScripts } from '../../../src/redis/scripts.ts';

const srcDir = fileURLToPath(new URL('../../../src/', import.meta.url));

describe('Lua scripts', () => {
  it('live in src/redis/ only, each one registered', () => {
    const files = readdirSync(srcDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.lua'),
    );
    expect(files.every((f) => f.startsWith('redis/'))).toBe(true);
    expect(luaScripts()).toHaveLength(files.length);
  });

  it('name the number of KEYS they read, or "n" when each call says it (and then read them all)', () => {
    for (const script of luaScripts()) {
      if (script.numberOfKeys === undefined) {
        expect(script.lua, script.name).toMatch(/#KEYS/);
        continue;
      }
      const keys = [...script.lua.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
      expect(Math.max(...keys), script.name).toBe(script.numberOfKeys);
    }
  });

  it('include the batch acquire of a restore, its KEYS counted per call', () => {
    expect(luaScripts().find((s) => s.name === 'leaseAcquireMany')).toMatchObject({
      numberOfKeys: undefined,
    });
  });

  it('include the shared request budget (two keys: TAT and penalty)', () => {
    expect(luaScripts().find((s) => s.name === 'requestBudget')?.numberOfKeys).toBe(2);
  });
});
