// The order's traces are sampled together: a trace the worker starts for an order (linked to the order's first trace)
// is kept exactly when that first trace was, whatever the ratio draws for its own id; spans inside a trace follow its
// root; a caller's trace follows the caller's flag under parentbased_traceidratio; other roots follow the ratio.
import { ROOT_CONTEXT, trace, TraceFlags, type SpanContext } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { OrderSampler, orderSamplerFor, originLink } from '../../../src/telemetry/order-sampler.ts';

const providers: BasicTracerProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.shutdown()));
});

function tracerWith(sampler: OrderSampler) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  providers.push(provider);
  return {
    tracer: provider.getTracer('test'),
    exported: () => exporter.getFinishedSpans().map((s) => s.name),
  };
}

const origin = (sampled: boolean, n: number): SpanContext => ({
  traceId: n.toString(16).padStart(32, '0'),
  spanId: n.toString(16).padStart(16, '0'),
  traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
  isRemote: true,
});

describe('the order sampler', () => {
  it("keeps an order's own traces exactly when its first trace was kept, at any ratio", () => {
    for (const ratio of [0, 0.5, 1]) {
      const { tracer, exported } = tracerWith(new OrderSampler({ ratio, followCallers: true }));
      for (let n = 1; n <= 40; n++) {
        const first = origin(n % 2 === 0, n);
        const poll = tracer.startSpan(`poll ${n}`, { root: true, links: [originLink(first)] }, ROOT_CONTEXT);
        // A span inside the poll's trace (its GET) follows the poll.
        tracer.startSpan(`get ${n}`, {}, trace.setSpan(ROOT_CONTEXT, poll)).end();
        poll.end();
      }
      const kept = exported();
      const expected = Array.from({ length: 20 }, (_, i) => 2 * (i + 1)).flatMap((n) => [
        `get ${n}`,
        `poll ${n}`,
      ]);
      expect(kept.sort(), `ratio ${ratio}`).toEqual(expected.sort());
    }
  });

  it('follows a caller under parentbased_traceidratio, and draws by the trace id under traceidratio', () => {
    const caller = (sampled: boolean) => trace.setSpanContext(ROOT_CONTEXT, origin(sampled, 7));
    const following = tracerWith(orderSamplerFor('parentbased_traceidratio', 0)!);
    following.tracer.startSpan('sampled caller', {}, caller(true)).end();
    following.tracer.startSpan('unsampled caller', {}, caller(false)).end();
    expect(following.exported()).toEqual(['sampled caller']);
    const drawing = tracerWith(orderSamplerFor('traceidratio', 0)!);
    drawing.tracer.startSpan('sampled caller', {}, caller(true)).end();
    expect(drawing.exported()).toEqual([]);
  });

  it('draws any other root by the ratio, and leaves the other samplers to the SDK', () => {
    const none = tracerWith(orderSamplerFor('parentbased_traceidratio', 0)!);
    const all = tracerWith(orderSamplerFor('traceidratio', undefined)!);
    for (const { tracer } of [none, all]) tracer.startSpan('webhook', { root: true }, ROOT_CONTEXT).end();
    expect(none.exported()).toEqual([]);
    expect(all.exported()).toEqual(['webhook']);
    expect(orderSamplerFor('always_on', undefined)).toBeUndefined();
    expect(orderSamplerFor(undefined, 0.1)).toBeUndefined();
  });
});

describe('the order sampler, where a trace enters an order', () => {
  it("keeps a webhook's hint span of a kept order although the webhook trace was not drawn, and no other", () => {
    const { tracer, exported } = tracerWith(new OrderSampler({ ratio: 0, followCallers: true }));
    const webhook = tracer.startSpan('POST /webhooks/exchange', { root: true }, ROOT_CONTEXT);
    const inWebhook = trace.setSpan(ROOT_CONTEXT, webhook);
    for (const [name, kept] of [
      ['hint of a kept order', true],
      ['hint of an order not kept', false],
    ] as const)
      tracer.startSpan(name, { links: [originLink(origin(kept, kept ? 2 : 3))] }, inWebhook).end();
    tracer.startSpan('another span of the webhook', {}, inWebhook).end();
    webhook.end();
    expect(exported()).toEqual(['hint of a kept order']);
  });
});
