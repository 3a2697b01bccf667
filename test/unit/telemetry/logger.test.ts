import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/telemetry/logger.ts';

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
});
