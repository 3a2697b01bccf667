// The layers of the worker, lowest first: a module may import its own layer and the layers below it, never one
// above. docs/architecture.md draws them; `npm run lint` enforces them through the ESLint rule below
// (`layers/no-upward-import`), which test/unit/tooling/layers.test.ts shows failing on a violating import.
// A path belongs to the layer of its longest matching entry: a folder (`src/kafka/`) or one file (`src/config.ts`).
// Files outside every layer (test/, bench/, scripts/, sandbox/, dev/) are not checked.
import { dirname, relative, resolve } from 'node:path';

export const layers = [
  {
    name: 'foundation',
    job: 'the pure parts every layer shares: the machines, the Kafka contract, configuration rules, errors, ports',
    paths: [
      'machines/',
      'src/contract/',
      'src/types/',
      'src/config/',
      'src/errors.ts',
      'src/decimal.ts',
      'src/timeouts.ts',
      'src/worker/ports.ts',
    ],
  },
  {
    name: 'adapters',
    job: 'kafkajs, ioredis, undici, HTTP servers, telemetry, process utilities, the fleet view, the configuration',
    paths: [
      'src/exchange/',
      'src/kafka/',
      'src/redis/',
      'src/telemetry/',
      'src/http/',
      'src/process/',
      'src/fleet/',
      'src/config.ts',
    ],
  },
  {
    name: 'runtime',
    job: "the order runtime's parts: the host's layers (src/worker/runtime/), actors, journal, routing, reconcilers",
    // The rest of src/worker/ too: its host and runner are the next layer (the longer entry wins).
    paths: ['src/worker/runtime/', 'src/worker/'],
  },
  {
    name: 'host',
    job: 'the order host over its runtime parts, and the runner that starts and stops the built parts',
    paths: ['src/worker/order-host.ts', 'src/worker/worker.ts'],
  },
  {
    name: 'composition',
    job: 'the builders of the composition root: each part built from configuration and the parts before it',
    paths: ['src/composition/'],
  },
  {
    name: 'entry points',
    job: 'the processes: the worker (src/main.ts), the inspector and the console',
    paths: ['src/main.ts', 'src/inspect/', 'src/console/'],
  },
];

/** A path's layer index (`path` relative to the repository, `/`-separated); undefined outside every layer. */
export function layerOf(path) {
  // The longest matching entry wins: one file or a deeper folder over the folder that holds it.
  let best;
  layers.forEach((layer, index) => {
    for (const entry of layer.paths) {
      const matches = entry.endsWith('/') ? path.startsWith(entry) : path === entry;
      if (matches && (best === undefined || entry.length > best.length))
        best = { index, length: entry.length };
    }
  });
  return best?.index;
}

/**
 * Why `importer` may not import `specifier` (a relative specifier), or undefined when it may. `root`: the
 * repository's absolute path; `importer`: the importing file's absolute path.
 */
export function upwardImport(root, importer, specifier) {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const from = relative(root, importer).split('\\').join('/');
  const to = relative(root, resolve(dirname(importer), specifier))
    .split('\\')
    .join('/');
  const fromLayer = layerOf(from);
  const toLayer = layerOf(to);
  if (fromLayer === undefined || toLayer === undefined || toLayer <= fromLayer) return undefined;
  return `${from} (${layers[fromLayer].name}) imports ${to} (${layers[toLayer].name}): a layer imports only its own and lower layers (lint/layers.js, docs/architecture.md).`;
}

/** The ESLint plugin: `layers/no-upward-import` reports every static import, export-from and literal import(). */
export const layersPlugin = {
  rules: {
    'no-upward-import': {
      meta: { type: 'problem', schema: [{ type: 'object', properties: { root: { type: 'string' } } }] },
      create(context) {
        const root = context.options[0]?.root ?? context.cwd;
        const check = (node) => {
          const source = node.source;
          if (source?.type !== 'Literal' || typeof source.value !== 'string') return;
          const problem = upwardImport(root, context.filename, source.value);
          if (problem !== undefined) context.report({ node: source, message: problem });
        };
        return {
          ImportDeclaration: check,
          ExportNamedDeclaration: check,
          ExportAllDeclaration: check,
          ImportExpression: check,
        };
      },
    },
  },
};
