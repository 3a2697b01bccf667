import { defineConfig } from 'vitest/config';

// Three tiers: unit (pure code, machines), adapter (HTTP clients against the sandbox),
// integration (real Kafka, real Redis, real worker processes). The global setup provisions services
// once for the run and tears down only what it started.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 20_000 } },
      {
        test: {
          name: 'adapter',
          include: ['test/adapter/**/*.test.ts'],
          testTimeout: 60_000,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 240_000,
          hookTimeout: 180_000,
          globalSetup: ['test/global-setup.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
});
