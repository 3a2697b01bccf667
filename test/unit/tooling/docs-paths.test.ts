// The paths the newcomer's docs name are real: every `src/...` (and `machines/...`) path in README.md and
// docs/architecture.md exists, so that a move or a split updates them too.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Folders a document may name before they exist: the order host's layers, being split out in issue 51. */
const comingFolders = new Set(['src/worker/runtime/']);

/** The repository paths a Markdown text names (`src/…`, `machines/…`), without patterns or placeholders. */
function namedPaths(text: string): string[] {
  const found = text.match(/(?<![\w./-])(?:src|machines)\/[\w./-]*/g) ?? [];
  return [...new Set(found.map((path) => path.replace(/[.,:;)]+$/, '')))].filter(
    (path) => !/[*<>{}$]/.test(path) && path !== 'src/' && path !== 'machines/',
  );
}

describe('paths named in the docs', () => {
  it('finds the paths of a text, trailing punctuation dropped', () => {
    expect(
      namedPaths('see `src/main.ts`, then src/worker/ (the runtime). And machines/order-machine.ts.'),
    ).toEqual(['src/main.ts', 'src/worker/', 'machines/order-machine.ts']);
  });

  for (const doc of ['README.md', 'docs/architecture.md']) {
    it(`${doc} names only files and folders that exist`, () => {
      const paths = namedPaths(readFileSync(`${root}${doc}`, 'utf8'));
      expect(paths.length).toBeGreaterThan(10);
      const missing = paths.filter((path) => !comingFolders.has(path) && !existsSync(`${root}${path}`));
      expect(missing).toEqual([]);
    });
  }
});
