// The operations API's one credential check: `Authorization: Bearer <token>` against the configured tokens (from a
// Secret; two during a rotation). Compared in constant time over SHA-256 digests, which have one length whatever was
// sent, so neither the token's content nor its length leaks through timing. No token configured: the API is off.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export interface BearerCheck {
  /** Whether any token is configured (none: every route of the API answers 404). */
  readonly enabled: boolean;
  /** True when the request carries one of the tokens. */
  allows(headers: IncomingHttpHeaders): boolean;
}

export function bearerCheck(tokens: readonly string[]): BearerCheck {
  const expected = tokens.filter((token) => token !== '').map(digest);
  return {
    enabled: expected.length > 0,
    allows(headers) {
      const header = headers.authorization;
      const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
      if (!match?.[1] || expected.length === 0) return false;
      const given = digest(match[1]);
      // Every configured token is compared, so the time does not say which one (or whether any) matched.
      let ok = false;
      for (const token of expected) ok = timingSafeEqual(given, token) || ok;
      return ok;
    },
  };
}
