import { randomBytes } from 'node:crypto';

/** A name no other test or run uses: topics, consumer groups, key prefixes, order ids. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}
