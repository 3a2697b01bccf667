import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCycles, importGraph } from '../../../scripts/check-import-cycles.ts';

describe('import-cycle check', () => {
  it('finds a cycle through type-only and re-export imports, and none in a tree', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
    writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.ts';\nexport type A = B;\n");
    writeFileSync(join(dir, 'b.ts'), "export { c } from './c.ts';\nexport type B = 1;\n");
    writeFileSync(join(dir, 'c.ts'), "import { a } from './a.ts';\nexport const c = a;\n");
    writeFileSync(join(dir, 'd.ts'), "import { c } from './c.ts';\n");
    const files = ['a.ts', 'b.ts', 'c.ts', 'd.ts'].map((f) => join(dir, f));
    const cycles = findCycles(importGraph(files));
    expect(cycles).toHaveLength(1);
    expect(cycles[0]?.map((f) => f.slice(dir.length + 1))).toEqual(['a.ts', 'b.ts', 'c.ts', 'a.ts']);
    writeFileSync(join(dir, 'c.ts'), 'export const c = 1;\n');
    expect(findCycles(importGraph(files))).toEqual([]);
  });
});
