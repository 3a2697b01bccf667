// Trace context that travels with the work: W3C `traceparent`/`tracestate` in Kafka headers (read from commands,
// written into every record the worker publishes) and the order a piece of work belongs to, carried in the
// OpenTelemetry context so that log lines and spans name it without threading it through every call.
import {
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type SpanContext,
} from '@opentelemetry/api';

const orderIdKey = createContextKey('exchange-order-worker order id');

/** The context with the order it is about (read by the log mixin). */
export function withOrderId(ctx: Context, orderId: string | null | undefined): Context {
  return orderId ? ctx.setValue(orderIdKey, orderId) : ctx;
}

export function activeOrderId(ctx: Context = context.active()): string | undefined {
  const value = ctx.getValue(orderIdKey);
  return typeof value === 'string' ? value : undefined;
}

/** Kafka message headers as strings (kafkajs gives Buffers, arrays or undefined). */
export type RawHeaders = Readonly<Record<string, Buffer | string | Array<Buffer | string> | undefined>>;

export function headersAsText(headers: RawHeaders | undefined): Record<string, string> {
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) text[name.toLowerCase()] = first.toString();
  }
  return text;
}

/** The caller's context as carried by a message's headers (ROOT when they carry none or an invalid one). */
export function extractContext(headers: Readonly<Record<string, string | string[] | undefined>>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** `traceparent`/`tracestate` (whatever the configured propagator writes) of a context, as headers. */
export function injectContext(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** A span context written as a W3C traceparent (kept with an order so later traces can link to its origin). */
export function toTraceparent(spanContext: SpanContext | undefined): string | undefined {
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  return `00-${spanContext.traceId}-${spanContext.spanId}-0${(spanContext.traceFlags & 1).toString(16)}`;
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function fromTraceparent(value: string | null | undefined): SpanContext | undefined {
  const match = value ? traceparentPattern.exec(value) : null;
  if (!match) return undefined;
  const spanContext: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}
