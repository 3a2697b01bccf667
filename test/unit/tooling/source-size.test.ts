// A module of src/ is split by its jobs before it grows past 600 lines (docs/architecture.md). The order host is
// the one exception while issue 51 splits it into src/worker/runtime/.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const maxLines = 600;
const exceptions = new Set(['src/worker/order-host.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : name.endsWith('.ts') ? [full] : [];
  });
}

describe('source size', () => {
  it(`keeps every module of src/ within ${maxLines} lines`, () => {
    const long = sources(join(root, 'src'))
      .map((file) => ({
        path: relative(root, file).split('\\').join('/'),
        lines: readFileSync(file, 'utf8').split('\n').length - 1,
      }))
      .filter(({ path, lines }) => lines > maxLines && !exceptions.has(path));
    expect(long).toEqual([]);
  });
});
