// Import-cycle check for our own modules (src/, machines/, sandbox/, dev/, scripts/, test/, bench/): follows relative
// imports (static `import`/`export ... from`, including type-only ones) and fails on any cycle, printing it.
// A tiny script instead of an ESLint plugin: the plugin's native resolver cannot be locked for every platform.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const roots = ['src', 'machines', 'sandbox', 'dev', 'scripts', 'test', 'bench']
  .map((d) => join(root, d))
  .filter(existsSync);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' ? [] : files(full);
    return /\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

const importPattern =
  /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/g;

export function importGraph(paths: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of paths) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const match of text.matchAll(importPattern)) {
      const spec = match[1] ?? match[2];
      if (!spec) continue;
      const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
      if (existsSync(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'visiting');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'visiting') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const all = roots.flatMap(files);
  const cycles = findCycles(importGraph(all));
  if (cycles.length) {
    for (const cycle of cycles)
      console.error(`import cycle: ${cycle.map((f) => relative(root, f)).join(' -> ')}`);
    process.exitCode = 1;
  } else {
    console.log(`no import cycles in ${all.length} modules`);
  }
}
