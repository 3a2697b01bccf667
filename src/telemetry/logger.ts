// Structured JSON logs (pino) with secrets redacted by path and by value: a secret must never reach a log line
// even when it hides inside an error message or an echoed request.
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

const redactPaths = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers["x-referral-token"]',
  '*.headers["x-referral-token"]',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'referralToken',
  '*.referralToken',
];

export function createLogger(opts: {
  level: string;
  name?: string;
  secrets?: Array<string | undefined>;
  destination?: DestinationStream;
}): Logger {
  const secrets = (opts.secrets ?? []).filter((s): s is string => typeof s === 'string' && s.length >= 4);
  const scrub = (text: string): string =>
    secrets.reduce((acc, secret) => acc.split(secret).join('[redacted]'), text);
  const options = {
    name: opts.name ?? 'exchange-order-worker',
    level: opts.level,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: {
      streamWrite: secrets.length ? scrub : (text: string) => text,
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
