import { describe, expect, it } from 'vitest';
import { createLogger, onceEvery } from '../../../src/telemetry/logger.ts';

describe('logger', () => {
  it('never writes a configured secret, wherever it hides in a log line', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      secrets: ['key-defi-0123456789', 'whsec-abcdef', undefined],
      destination: { write: (line: string) => void lines.push(line) },
    });
    logger.error({ err: { message: 'upstream said: bad key key-defi-0123456789' } }, 'request failed');
    logger.info(
      { headers: { authorization: 'ApiKey key-defi-0123456789', 'x-referral-token': 'tok' } },
      'sent',
    );
    logger.warn('signature computed with whsec-abcdef did not match');
    const text = lines.join('');
    expect(lines).toHaveLength(3);
    expect(text).not.toContain('key-defi-0123456789');
    expect(text).not.toContain('whsec-abcdef');
    expect(text).not.toContain('"tok"');
    expect(text).toContain('[redacted]');
  });

  it('opens a warning gate on its first call, then at most once per interval', () => {
    const due = onceEvery(60_000);
    expect([0, 1, 59_999, 60_000, 60_001, 119_999, 120_000].map((now) => due(now))).toEqual([
      true,
      false,
      false,
      true,
      false,
      false,
      true,
    ]);
    // A clock that starts anywhere (Date.now()) opens it the first time too.
    expect(onceEvery(60_000)(1_764_000_000_000)).toBe(true);
  });
});
