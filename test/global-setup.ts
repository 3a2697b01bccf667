// Vitest global setup for the adapter and integration tiers: provisions a real Kafka broker and a real Redis
// (or reuses what `npm run services:up` started) and tears down only what it started itself.
// A service that cannot start fails the run: no test is skipped for lack of a service.
import type { TestProject } from 'vitest/node';
import { servicesDown, servicesUp, type ServiceEndpoints } from '../dev/services/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    services: ServiceEndpoints;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const result = await servicesUp({ log: (line) => console.error(`[services] ${line}`) });
  for (const line of result.describe) console.error(`[services] ${line}`);
  project.provide('services', result.endpoints);
  return async () => {
    if (result.started.kafka || result.started.redis) await servicesDown(result.started);
  };
}
