// Sampling that follows the order. Every trace the worker starts for an order on its own (a machine timer's poll, a
// reconciliation nudge, a listing row, a poll at rest) is a root linked to the order's first trace, the one its
// order.create was handled in (`originLink`). With a ratio sampler alone each such root would be drawn anew, so a
// sampled order would show a create and then a random tenth of its polls. This sampler decides such a root as the
// order's first trace was decided (its sampled flag, kept in the order's record with its traceparent), so an order's
// traces are sampled together. A span that enters a kept order from another trace (the hint of a webhook, whose
// HTTP span is drawn before the order is known; a command for an order driven here) is kept too, even when its
// parent was not: the order's part of that trace is kept, its parent may be missing. Any other span with a parent
// inside this process follows that parent; one continuing a caller's trace follows the caller's flag
// (parentbased_traceidratio) or the ratio of its trace id (traceidratio); any other root is drawn by the ratio.
import {
  isSpanContextValid,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type SpanContext,
  type SpanKind,
} from '@opentelemetry/api';
import {
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace-base';

/** The attribute that marks a link as the one to the order's first trace. */
export const ORDER_LINK_ATTRIBUTE = 'order.link';
const ORIGIN = 'origin';

/** The link from a trace the worker starts for an order to the order's first trace. */
export function originLink(origin: SpanContext): Link {
  return { context: origin, attributes: { [ORDER_LINK_ATTRIBUTE]: ORIGIN } };
}

function isSampled(spanContext: SpanContext): boolean {
  return (spanContext.traceFlags & TraceFlags.SAMPLED) !== 0;
}

function sampled(spanContext: SpanContext): SamplingResult {
  return {
    decision: isSampled(spanContext) ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
  };
}

export class OrderSampler implements Sampler {
  readonly #ratio: TraceIdRatioBasedSampler;
  readonly #followCallers: boolean;
  readonly #description: string;

  /** `ratio` of roots kept; `followCallers`: a caller's sampled flag decides its trace (the parentbased_ samplers). */
  constructor(opts: { ratio: number; followCallers: boolean }) {
    this.#ratio = new TraceIdRatioBasedSampler(opts.ratio);
    this.#followCallers = opts.followCallers;
    this.#description = `OrderSampler{ratio=${opts.ratio}, followCallers=${opts.followCallers}}`;
  }

  shouldSample(
    context: Context,
    traceId: string,
    _spanName: string,
    _spanKind: SpanKind,
    _attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    const parent = trace.getSpanContext(context);
    const origin = links.find((link) => link.attributes?.[ORDER_LINK_ATTRIBUTE] === ORIGIN)?.context;
    const first = origin && isSpanContextValid(origin) ? origin : undefined;
    if (parent && isSpanContextValid(parent)) {
      // Inside one trace the decision is taken once, at its root; a span that enters an order (a webhook's hint, a
      // command for an order driven here) is also kept when the order is.
      if (first && isSampled(first)) return sampled(first);
      if (parent.isRemote !== true || this.#followCallers) return sampled(parent);
      return this.#ratio.shouldSample(context, traceId);
    }
    if (first) return sampled(first);
    return this.#ratio.shouldSample(context, traceId);
  }

  toString(): string {
    return this.#description;
  }
}

/**
 * The sampler for OTEL_TRACES_SAMPLER and its argument: an OrderSampler for the ratio samplers (traceidratio,
 * parentbased_traceidratio; ratio 1 by default, as the SDK's), undefined for the others (the SDK builds them).
 */
export function orderSamplerFor(
  name: string | undefined,
  ratio: number | undefined,
): OrderSampler | undefined {
  if (name === 'traceidratio') return new OrderSampler({ ratio: ratio ?? 1, followCallers: false });
  if (name === 'parentbased_traceidratio')
    return new OrderSampler({ ratio: ratio ?? 1, followCallers: true });
  return undefined;
}
