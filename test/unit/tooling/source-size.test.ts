// A module of src/ is split by its jobs before it grows past 600 lines (docs/architecture.md); the order host is a
// façade over src/worker/runtime/ and stays within 300.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const maxLines = 600;
const facades = new Map([['src/worker/order-host.ts', 300]]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : name.endsWith('.ts') ? [full] : [];
  });
}

describe('source size', () => {
  it(`keeps every module of src/ within ${maxLines} lines and the order host's façade within 300`, () => {
    const long = sources(join(root, 'src'))
      .map((file) => ({
        path: relative(root, file).split('\\').join('/'),
        lines: readFileSync(file, 'utf8').split('\n').length - 1,
      }))
      .filter(({ path, lines }) => lines > (facades.get(path) ?? maxLines));
    expect(long).toEqual([]);
  });
});
