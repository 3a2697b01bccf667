// Lint: type-aware rules that catch lost promises and enforce type-only imports (import cycles:
// scripts/check-import-cycles.ts), the import boundaries of docs/architecture.md as `no-restricted-imports` zones, and
// its layers (lint/layers.js: no module imports a layer above its own).
// ESLint does not merge the options of one rule across config objects (the last matching object wins), so every
// file falls in exactly one zone and each zone lists every boundary that applies to it.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersPlugin } from './lint/layers.js';

/** machines/ is pure: no I/O libraries, no Node built-ins (with or without `node:`), no telemetry. */
const machinesStayPure = {
  paths: builtinModules.map((name) => ({
    name,
    message: 'machines/ is pure: the runtime provides I/O through actors.',
  })),
  patterns: ['node:*', 'kafkajs', 'ioredis', 'undici', 'pino', '@opentelemetry/*'].map((group) => ({
    group: [group, `${group}/*`],
    message: 'machines/ is pure: the runtime provides I/O through actors.',
  })),
};

/** machines/ depends on nothing of src/ (src/ depends on machines/, never the reverse). */
const machinesIgnoreSrc = {
  patterns: [
    { regex: '^(\\.\\./)+src(/|$)', message: 'machines/ never imports src/: the runtime depends on it.' },
  ],
};

/** kafkajs stays behind src/kafka/ (it must stay swappable): everything else imports our interfaces from there. */
const kafkajsOnlyInKafka = {
  paths: [
    { name: 'kafkajs', message: 'kafkajs is imported only in src/kafka/: import from src/kafka/ instead.' },
  ],
  patterns: [
    {
      group: ['kafkajs/*'],
      message: 'kafkajs is imported only in src/kafka/: import from src/kafka/ instead.',
    },
  ],
};

/**
 * Adapters are built by the composition root and handed what they need: they never reach back into src/worker/,
 * except for the ports they implement (src/worker/ports.ts, which imports nothing of the runtime).
 */
const adaptersIgnoreWorker = {
  patterns: [
    {
      regex: '^(\\.\\./)+worker(/(?!ports\\.ts$)|$)',
      message: 'adapters (src/exchange, kafka, redis, http, telemetry) never import src/worker/.',
    },
  ],
};

/**
 * The sandbox judges the worker, so it imports none of it: no relative import climbs out of sandbox/ (to src/,
 * machines/ or anything else). `depth`: how many `../` leave sandbox/ from the file's folder (deeper files than
 * sandbox/a/b/ are held to depth 3, which is stricter than needed, never looser).
 */
const sandboxStaysAlone = (depth) => ({
  patterns: [
    {
      regex: `^(\\.\\./){${depth},}`,
      message: 'sandbox/ never imports worker code (src/, machines/): it is a test double of the exchange.',
    },
  ],
});

/** The worker never imports the sandbox either, so the build (src/, machines/) never compiles it. */
const workerIgnoresSandbox = {
  patterns: [
    {
      regex: '^(\\.\\./)+sandbox(/|$)',
      message: 'src/ and machines/ never import sandbox/: the sandbox stays out of the build and the image.',
    },
  ],
};

const adapterFolders = ['exchange', 'kafka', 'redis', 'http', 'telemetry'];
const zones = [
  { files: ['machines/**/*.ts'], rules: [machinesStayPure, machinesIgnoreSrc, workerIgnoresSandbox] },
  { files: ['sandbox/*.ts'], rules: [sandboxStaysAlone(1), kafkajsOnlyInKafka] },
  { files: ['sandbox/*/*.ts'], rules: [sandboxStaysAlone(2), kafkajsOnlyInKafka] },
  { files: ['sandbox/*/*/**/*.ts'], rules: [sandboxStaysAlone(3), kafkajsOnlyInKafka] },
  { files: ['src/kafka/**/*.ts'], rules: [adaptersIgnoreWorker, workerIgnoresSandbox] },
  {
    files: adapterFolders.filter((f) => f !== 'kafka').map((f) => `src/${f}/**/*.ts`),
    rules: [adaptersIgnoreWorker, kafkajsOnlyInKafka, workerIgnoresSandbox],
  },
  {
    files: ['src/**/*.ts'],
    ignores: adapterFolders.map((f) => `src/${f}/**`),
    rules: [kafkajsOnlyInKafka, workerIgnoresSandbox],
  },
];

/** One `no-restricted-imports` setting holding every boundary of a zone. */
function restrictImports(rules) {
  return [
    'error',
    { paths: rules.flatMap((r) => r.paths ?? []), patterns: rules.flatMap((r) => r.patterns ?? []) },
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.cache/', '.services/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  ...zones.map(({ files, ignores, rules }) => ({
    files,
    ...(ignores === undefined ? {} : { ignores }),
    rules: { 'no-restricted-imports': restrictImports(rules) },
  })),
  // The layers of lint/layers.js (docs/architecture.md): no module imports a layer above its own.
  {
    files: ['src/**/*.ts', 'machines/**/*.ts'],
    plugins: { layers: layersPlugin },
    rules: { 'layers/no-upward-import': ['error', { root: import.meta.dirname }] },
  },
  {
    files: ['machines/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: 'No clocks in machines/: time arrives through events, delays or input.',
        },
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'No clocks in machines/.',
        },
        {
          selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']",
          message: 'No randomness in machines/: take a seed or jitter from input.',
        },
        { selector: "MemberExpression[object.name='process']", message: 'No process access in machines/.' },
        {
          selector: 'ImportExpression',
          message: 'No dynamic import in machines/: the import rules above could not see it.',
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
