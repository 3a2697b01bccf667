// The layers of lint/layers.js as `npm run lint` sees them: the repository's own eslint.config.js lints small in-memory
// files placed in a layer, and reports an import of a higher layer (never one of its own or a lower one).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { layerOf, layers, upwardImport } from '../../../lint/layers.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
// The repository's own configuration, type-aware rules off (the layer rule reads import specifiers only).
const linter = new ESLint({ cwd: root, overrideConfig: [tseslint.configs.disableTypeChecked] });

/** What `layers/no-upward-import` reports for `source` placed at `path`. */
const layerErrors = async (path: string, source: string): Promise<string[]> =>
  (await linter.lintText(source, { filePath: `${root}${path}` }))
    .flatMap((result) => result.messages)
    .flatMap((message) => (message.ruleId === 'layers/no-upward-import' ? [message.message] : []));

describe('layers (lint/layers.js)', () => {
  it('orders the layers from the pure parts up to the processes', () => {
    expect(layers.map((layer) => layer.name)).toEqual([
      'foundation',
      'adapters',
      'runtime',
      'host',
      'composition',
      'entry points',
    ]);
    const order = [
      'machines/order-machine.ts',
      'src/kafka/command-consumer.ts',
      'src/worker/runtime/command-handler.ts',
      'src/worker/order-host.ts',
      'src/composition/host.ts',
      'src/main.ts',
    ].map(layerOf);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    // One file of a folder may sit in another layer than the folder (the longest entry wins).
    expect(layerOf('src/worker/ports.ts')).toBe(0);
    expect(layerOf('src/worker/health.ts')).toBe(2);
    expect(layerOf('test/unit/sanity.test.ts')).toBeUndefined();
  });

  it('names only folders and files that exist (or the order host’s runtime folder, being split out)', () => {
    for (const layer of layers)
      for (const entry of layer.paths)
        if (entry !== 'src/worker/runtime/') expect(existsSync(`${root}${entry}`), entry).toBe(true);
  });

  it('fails lint on an import of a higher layer', async () => {
    const violations: Array<[path: string, line: string, names: string]> = [
      [
        'src/kafka/probe.ts',
        "import { OrderHost } from '../worker/order-host.ts';",
        'src/kafka/probe.ts (adapters) imports src/worker/order-host.ts (host)',
      ],
      [
        'src/worker/runtime/probe.ts',
        "import type { OrderHost } from '../order-host.ts';",
        'src/worker/runtime/probe.ts (runtime) imports src/worker/order-host.ts (host)',
      ],
      [
        'src/worker/probe.ts',
        "export { buildHost } from '../composition/host.ts';",
        'src/worker/probe.ts (runtime) imports src/composition/host.ts (composition)',
      ],
      [
        'src/composition/probe.ts',
        "export * from '../main.ts';",
        'src/composition/probe.ts (composition) imports src/main.ts (entry points)',
      ],
      [
        'src/contract/probe.ts',
        "export const load = () => import('../kafka/topics.ts');",
        'src/contract/probe.ts (foundation) imports src/kafka/topics.ts (adapters)',
      ],
    ];
    for (const [path, line, names] of violations) {
      const errors = await layerErrors(path, `${line}\n`);
      expect(errors, `${path}: ${line}`).toHaveLength(1);
      expect(errors[0], `${path}: ${line}`).toContain(names);
    }
  });

  it('lets a layer import its own layer and every lower one', async () => {
    const allowed: Array<[path: string, source: string]> = [
      ['src/main.ts', "import { buildHost } from './composition/host.ts';\nexport { buildHost };\n"],
      [
        'src/composition/probe.ts',
        "import { OrderHost } from '../worker/order-host.ts';\nimport { createKafka } from '../kafka/kafka-client.ts';\nexport { OrderHost, createKafka };\n",
      ],
      [
        'src/worker/order-host.ts',
        "import { decide } from './command-intake.ts';\nimport { restore } from './runtime/restore.ts';\nexport { decide, restore };\n",
      ],
      [
        'src/redis/probe.ts',
        "import type { OrderLeases } from '../worker/ports.ts';\nexport type { OrderLeases };\n",
      ],
    ];
    for (const [path, source] of allowed) expect(await layerErrors(path, source), path).toEqual([]);
    expect(upwardImport(root, `${root}test/unit/probe.ts`, '../../src/main.ts')).toBeUndefined();
    // The adapters' boundary (no-restricted-imports) lets them import the ports of src/worker/ too, and nothing else.
    const adapterBoundary = async (source: string) =>
      (await linter.lintText(source, { filePath: `${root}src/redis/probe.ts` }))
        .flatMap((result) => result.messages)
        .filter((message) => message.ruleId === 'no-restricted-imports');
    expect(
      await adapterBoundary(
        "import type { OrderLeases } from '../worker/ports.ts';\nexport type { OrderLeases };\n",
      ),
    ).toEqual([]);
    expect(
      await adapterBoundary(
        "import type { Journal } from '../worker/order-journal.ts';\nexport type { Journal };\n",
      ),
    ).toHaveLength(1);
  });
});
