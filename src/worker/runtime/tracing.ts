// The host's tracing: one tracer, the outcome a command handler fills in for its span and metrics, and the traces of
// an order's own work (timers, nudges) linked to the command that created it.
import {
  context,
  createContextKey,
  ROOT_CONTEXT,
  SpanKind,
  trace,
  type Attributes,
} from '@opentelemetry/api';
import { originLink } from '../../telemetry/order-sampler.ts';
import { withOrderId } from '../../telemetry/propagation.ts';
import { ATTR_EXCHANGE_UNIQUE_REFERENCE, ATTR_ORDER_ID } from '../../telemetry/semconv.ts';
import type { EmittedDomainEvent } from '../machine-binding.ts';
import { actorOf, originOf, trailOf, type OrderSlot } from './slot-phases.ts';

export const tracer = trace.getTracer('exchange-order-worker');

/** How a command ended, filled in while it is handled (read by handleMessage for its span and metrics). */
export interface CommandOutcome {
  commandType: string;
  result: 'accepted' | 'duplicate' | 'rejected' | 'consumed' | 'forwarded';
  reason?: string;
}
export const commandOutcomeKey = createContextKey('exchange-order-worker command outcome');

export function noteOutcome(result: CommandOutcome['result'], reason?: string): void {
  const outcome = context.active().getValue(commandOutcomeKey) as CommandOutcome | undefined;
  if (!outcome) return;
  outcome.result = result;
  if (reason !== undefined) outcome.reason = reason;
}

export function noteCommandType(commandType: string): void {
  const outcome = context.active().getValue(commandOutcomeKey) as CommandOutcome | undefined;
  if (outcome) outcome.commandType = commandType;
}

export function orderAttributes(slot: OrderSlot): Attributes {
  const reference = actorOf(slot)?.status().uniqueReference ?? slot.record.unique_reference;
  return {
    [ATTR_ORDER_ID]: slot.orderId,
    ...(reference ? { [ATTR_EXCHANGE_UNIQUE_REFERENCE]: reference } : {}),
  };
}

/**
 * Runs work of an order that no command started (a machine timer: a poll, a retry; a reconciliation nudge) as a
 * new trace of its own, linked to the command that created the order, with the order named for the logs.
 */
export function inOrderTrace(slot: OrderSlot, name: string, work: () => void): void {
  // A timer while hints wait is theirs (the GET they wait for comes first): their spans are linked, once.
  const trail = trailOf(slot);
  const hints = name === 'order timer' ? trail?.hintLinks : undefined;
  if (trail && hints) trail.hintLinks = undefined;
  const origin = originOf(slot);
  const links = [...(origin ? [originLink(origin)] : []), ...(hints ?? []).map((c) => ({ context: c }))];
  const span = tracer.startSpan(
    name,
    {
      root: true,
      kind: SpanKind.INTERNAL,
      attributes: orderAttributes(slot),
      ...(links.length ? { links } : {}),
    },
    ROOT_CONTEXT,
  );
  try {
    context.with(withOrderId(trace.setSpan(ROOT_CONTEXT, span), slot.orderId), work);
  } finally {
    span.end();
  }
}

/** A machine transition, as an event of the span that caused it (or, once that ended, a span of its own). */
export function recordTransition(slot: OrderSlot, emitted: EmittedDomainEvent[]): void {
  const span = trace.getActiveSpan();
  const actor = actorOf(slot);
  if (!span || !actor) return;
  const status = actor.status();
  const attributes: Attributes = {
    ...orderAttributes(slot),
    'order.state': status.state,
    ...(emitted.length ? { 'order.event.type': emitted.map((e) => e.type).join(',') } : {}),
  };
  if (span.isRecording()) span.addEvent('order.transition', attributes);
  else tracer.startSpan('order transition', { attributes }).end();
}
