// Per-test helpers: unique names so tests never share topics, key prefixes or consumer groups,
// and access to the endpoints provisioned by the global setup.
import { inject } from 'vitest';
import type { ServiceEndpoints } from '../../dev/services/index.ts';

export function services(): ServiceEndpoints {
  return inject('services');
}

export { uniqueName } from './unique-name.ts';
