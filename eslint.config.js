// Lint: type-aware rules that catch lost promises and enforce type-only imports (import cycles: scripts/check-import-cycles.ts),
// and a boundary that keeps machines/ pure (no I/O, no clocks, no randomness).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ioModules = [
  'node:*',
  'fs',
  'net',
  'http',
  'https',
  'child_process',
  'crypto',
  'os',
  'path',
  'kafkajs',
  'ioredis',
  'undici',
  'pino',
  '@opentelemetry/*',
];

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
  {
    files: ['machines/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: ioModules.map((group) => ({
            group: [group],
            message: 'machines/ is pure: the runtime provides I/O through actors.',
          })),
        },
      ],
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
      ],
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
