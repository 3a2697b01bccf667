import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The fault suite's longest files, longest first (measured on the full profile; docs/faults.md). */
const longestFaultFiles = [
  'kill-anywhere',
  'money-safety-second-round',
  'money-safety',
  'infrastructure',
  'fuzz-worker',
  'exchange-faults',
  'webhook-storm',
];

/** Starts the longest fault files first, so that the short ones fill the other workers around them. */
class LongestFaultFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = longestFaultFiles.findIndex((name) => file.moduleId.includes(`/test/faults/${name}.`));
      return at < 0 ? longestFaultFiles.length : at;
    };
    return [...(await super.sort(files))].sort((a, b) => rank(a) - rank(b));
  }
}

// Three tiers: unit (pure code, machines), adapter (HTTP clients against the sandbox),
// integration (real Kafka, real Redis, real worker processes). The global setup provisions services
// once for the run and tears down only what it started.
// The fault suite (test/faults/, docs/faults.md) runs in two sizes: a quick profile inside these tiers
// (`*.unit.test.ts`, `*.adapter.test.ts`, `*.integration.test.ts`), and the full profile in its own project,
// `npm run test:faults`, with the run counts the fault report quotes. Its files run three at a time, the longest
// first: they mostly wait (on session timeouts, restarts, the exchange's pace), so they share the machine well.
export default defineConfig({
  test: {
    sequence: { sequencer: LongestFaultFilesFirst },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/faults/**/*.unit.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'adapter',
          include: ['test/adapter/**/*.test.ts', 'test/faults/**/*.adapter.test.ts'],
          testTimeout: 60_000,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/faults/**/*.integration.test.ts'],
          testTimeout: 240_000,
          hookTimeout: 180_000,
          globalSetup: ['test/global-setup.ts'],
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          testTimeout: 1_500_000,
          hookTimeout: 300_000,
          globalSetup: ['test/global-setup.ts'],
          maxWorkers: 3,
          provide: { faultProfile: 'full' },
        },
      },
    ],
  },
});
