import { defineConfig } from 'vitest/config';

// Three tiers: unit (pure code, machines), adapter (HTTP clients against the sandbox),
// integration (real Kafka, real Redis, real worker processes). The global setup provisions services
// once for the run and tears down only what it started.
// The fault suite (test/faults/, docs/faults.md) runs in two sizes: a quick profile inside these tiers
// (`*.unit.test.ts`, `*.adapter.test.ts`, `*.integration.test.ts`), and the full profile in its own project,
// `npm run test:faults`, with the run counts the fault report quotes.
export default defineConfig({
  test: {
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
          fileParallelism: false,
          provide: { faultProfile: 'full' },
        },
      },
    ],
  },
});
