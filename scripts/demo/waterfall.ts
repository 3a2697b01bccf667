// One trace as a waterfall of text: each span on its own line, indented under its parent, with a bar placed on
// the trace's time axis and its duration. Pure: spans in, lines out.
import type { ReceivedSpan } from './trace-receiver.ts';

/**
 * The trace that tells the most about an order: of the traces with a span naming it, the one that created its
 * exchange order (a POST /orders/ span), else the one with the most spans.
 */
export function traceOfOrder(spans: ReceivedSpan[], orderId: string): ReceivedSpan[] {
  const names = (s: ReceivedSpan): boolean =>
    Object.entries(s.attributes).some(
      ([key, value]) => value === orderId && (key === 'order.id' || key === 'messaging.kafka.message.key'),
    );
  const score = (trace: ReceivedSpan[]): number =>
    (trace.some((s) => s.name.includes('POST /orders/')) ? 1_000_000 : 0) + trace.length;
  let best: ReceivedSpan[] = [];
  for (const traceId of new Set(spans.filter(names).map((s) => s.traceId))) {
    const trace = spans.filter((s) => s.traceId === traceId);
    if (score(trace) > score(best)) best = trace;
  }
  return best;
}

export function renderWaterfall(trace: ReceivedSpan[], width = 100): string[] {
  if (trace.length === 0) return ['(no spans)'];
  const start = trace.reduce((min, s) => (s.startNs < min ? s.startNs : min), trace[0]!.startNs);
  const end = trace.reduce((max, s) => (s.endNs > max ? s.endNs : max), trace[0]!.endNs);
  const total = Number(end - start) || 1;
  const ids = new Set(trace.map((s) => s.spanId));
  const children = new Map<string | null, ReceivedSpan[]>();
  for (const span of trace) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const labelWidth = Math.min(52, Math.max(24, Math.floor(width * 0.45)));
  const barWidth = Math.max(10, width - labelWidth - 14);
  const lines = [`trace ${trace[0]!.traceId}: ${trace.length} spans over ${(total / 1e6).toFixed(1)} ms`];
  const walk = (parent: string | null, depth: number): void => {
    const spans = [...(children.get(parent) ?? [])].sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    for (const span of spans) {
      const from = Math.floor((Number(span.startNs - start) / total) * barWidth);
      const length = Math.max(1, Math.round((Number(span.endNs - span.startNs) / total) * barWidth));
      const bar = ' '.repeat(from) + (span.error ? '!' : '█').repeat(Math.min(length, barWidth - from));
      const label = `${'  '.repeat(depth)}${span.name}`.slice(0, labelWidth).padEnd(labelWidth);
      const ms = (Number(span.endNs - span.startNs) / 1e6).toFixed(1).padStart(9);
      lines.push(`${label} ${bar.padEnd(barWidth)} ${ms} ms`);
      walk(span.spanId, depth + 1);
    }
  };
  walk(null, 0);
  return lines;
}
