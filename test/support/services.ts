// Per-test helpers: unique names so tests never share topics, key prefixes or consumer groups,
// and access to the endpoints provisioned by the global setup.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { ServiceEndpoints } from '../../dev/services/index.ts';

export function services(): ServiceEndpoints {
  return inject('services');
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}
