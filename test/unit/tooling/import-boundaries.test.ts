// The import boundaries of docs/architecture.md are ESLint rules of the repository's own eslint.config.js: each case
// lints a small in-memory file placed in a folder and checks that a forbidden import is reported there and an
// allowed one is not. Type-aware rules are switched off for speed; `no-restricted-imports` does not need types.
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
let eslint: ESLint;

beforeAll(() => {
  eslint = new ESLint({ cwd: root, overrideConfig: [tseslint.configs.disableTypeChecked] });
});

/** The import-boundary messages ESLint reports for `source` as if it were the file `path`. */
async function boundaryErrors(path: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: `${root}${path}` });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax')
    .map((m) => m.message);
}

describe('import boundaries (eslint.config.js)', () => {
  it('keeps machines/ pure: no Node built-ins, I/O libraries, telemetry, src/ or dynamic imports', async () => {
    const forbidden = [
      "import { readFile } from 'node:fs/promises';",
      "import { EventEmitter } from 'events';",
      "import { setTimeout } from 'timers/promises';",
      "import { Kafka } from 'kafkajs';",
      "import Redis from 'ioredis';",
      "import { request } from 'undici';",
      "import { pino } from 'pino';",
      "import { trace } from '@opentelemetry/api';",
      "import type { WorkerConfig } from '../src/config.ts';",
      "export const load = () => import('./order-machine.ts');",
    ];
    for (const line of forbidden) {
      expect(await boundaryErrors('machines/probe.ts', `${line}\n`), line).toHaveLength(1);
    }
    expect(
      await boundaryErrors(
        'machines/probe.ts',
        "import { setup } from 'xstate';\nimport type { TradingMode } from './domain.ts';\nexport { setup };\nexport type T = TradingMode;\n",
      ),
    ).toEqual([]);
  });

  it('keeps the sandbox from importing worker code (src/, machines/), at any depth', async () => {
    const forbidden: Array<[path: string, line: string]> = [
      [
        'sandbox/probe.ts',
        "import { classifyErrorResponse } from '../src/exchange/error-classification.ts';",
      ],
      ['sandbox/probe.ts', "import type { TradingMode } from '../machines/domain.ts';"],
      ['sandbox/http/probe.ts', "import type { WorkerConfig } from '../../src/config.ts';"],
      ['sandbox/http/probe.ts', "import type { TradingMode } from '../../machines/domain.ts';"],
      ['sandbox/domain/nested/probe.ts', "import { Worker } from '../../../src/worker/worker.ts';"],
    ];
    for (const [path, line] of forbidden) {
      const errors = await boundaryErrors(path, `${line}\n`);
      expect(errors, `${path}: ${line}`).toHaveLength(1);
      expect(errors[0], `${path}: ${line}`).toContain('sandbox/ never imports worker code');
    }
    expect(
      await boundaryErrors(
        'sandbox/http/probe.ts',
        "import { base58CheckDecode } from '../addresses/base58.ts';\nimport { demoConfig } from '../demo-config.ts';\nimport { createServer } from 'node:http';\nexport { base58CheckDecode, demoConfig, createServer };\n",
      ),
    ).toEqual([]);
  });

  it('keeps src/ and machines/ from importing the sandbox, so the build never compiles it', async () => {
    const forbidden: Array<[path: string, line: string]> = [
      ['src/main-probe.ts', "import { startSandbox } from '../sandbox/index.ts';"],
      ['src/worker/probe.ts', "import { demoKeys } from '../../sandbox/demo-config.ts';"],
      ['src/exchange/probe.ts', "import { messages } from '../../sandbox/wire/messages.ts';"],
      ['src/kafka/probe.ts', "import { demoKeys } from '../../sandbox/index.ts';"],
      ['machines/probe.ts', "import type { OrderStatus } from '../sandbox/domain/order-lifecycle.ts';"],
    ];
    for (const [path, line] of forbidden) {
      const errors = await boundaryErrors(path, `${line}\nexport {};\n`);
      expect(errors, path).toHaveLength(1);
      expect(errors[0], path).toContain('never import sandbox/');
    }
  });

  it('allows kafkajs only in src/kafka/ (the composition root and every other folder import our interfaces)', async () => {
    const kafkajs = "import { Kafka } from 'kafkajs';\nexport { Kafka };\n";
    for (const path of [
      'src/worker/probe.ts',
      'src/inspect/probe.ts',
      'src/main.ts',
      'src/main-probe.ts',
      'src/config.ts',
      'src/contract/probe.ts',
      'sandbox/probe.ts',
      'src/exchange/probe.ts',
      'src/http/probe.ts',
      'src/redis/probe.ts',
      'src/telemetry/probe.ts',
    ]) {
      const errors = await boundaryErrors(path, kafkajs);
      expect(errors, path).toHaveLength(1);
      expect(errors[0], path).toContain('kafkajs is imported only in src/kafka/');
    }
    expect(await boundaryErrors('src/kafka/probe.ts', kafkajs)).toEqual([]);
    expect(
      await boundaryErrors(
        'src/worker/probe.ts',
        "import { KafkaClient } from '../kafka/kafka-client.ts';\nexport { KafkaClient };\n",
      ),
    ).toEqual([]);
  });

  it('keeps the adapters from importing src/worker/, together with the kafkajs rule', async () => {
    const source =
      "import { Worker } from '../worker/worker.ts';\nimport { Kafka } from 'kafkajs';\nexport { Worker, Kafka };\n";
    for (const folder of ['exchange', 'redis', 'http', 'telemetry']) {
      const errors = await boundaryErrors(`src/${folder}/probe.ts`, source);
      expect(
        errors.some((e) => e.includes('never import src/worker/')),
        folder,
      ).toBe(true);
      expect(
        errors.some((e) => e.includes('kafkajs is imported only in src/kafka/')),
        folder,
      ).toBe(true);
    }
    expect(await boundaryErrors('src/kafka/probe.ts', source)).toHaveLength(1);
    expect(
      await boundaryErrors(
        'src/worker/probe.ts',
        "import { OrderHost } from './order-host.ts';\nexport { OrderHost };\n",
      ),
    ).toEqual([]);
  });
});
