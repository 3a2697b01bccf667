// Structured JSON logs (pino) with secrets redacted by path and by value: a secret must never reach a log line
// even when it hides inside an error message or an echoed request. Each line names its level as text, the worker,
// and - when written inside a span or for an order - `trace_id`, `span_id` and `order_id`, so a log line leads to
// its trace and back. (A pino mixin on @opentelemetry/api rather than instrumentation-pino: the latter patches
// pino through a require hook, which does not see the ESM import of pino in this project.)
import { context, trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { activeOrderId } from './propagation.ts';

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

/** trace_id / span_id of the active span and order_id of the active work, when there are any. */
function correlation(): Record<string, string> {
  const active = context.active();
  const spanContext = trace.getSpanContext(active);
  const orderId = activeOrderId(active);
  return {
    ...(spanContext && trace.isSpanContextValid(spanContext)
      ? { trace_id: spanContext.traceId, span_id: spanContext.spanId }
      : {}),
    ...(orderId ? { order_id: orderId } : {}),
  };
}

export function createLogger(opts: {
  level: string;
  name?: string;
  workerId?: string;
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
    base: { pid: process.pid, ...(opts.workerId ? { worker_id: opts.workerId } : {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    mixin: correlation,
    hooks: {
      streamWrite: secrets.length ? scrub : (text: string) => text,
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/**
 * A gate for a warning about a condition that lasts (work refused or put off at capacity): open on its first call,
 * then at most once per interval, so the condition is said without a line for every order it touches.
 */
export function onceEvery(intervalMs: number): (now: number) => boolean {
  let openedAt = Number.NEGATIVE_INFINITY;
  return (now) => {
    if (now - openedAt < intervalMs) return false;
    openedAt = now;
    return true;
  };
}
