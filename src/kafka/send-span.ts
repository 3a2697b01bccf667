// The producer span of every write to Kafka, `send <topic>`: the transactional writer's and the best-effort
// producer's alike. The records sent carry its context (traceparent in their headers), so a consumer of them
// continues the trace that produced them.
import { SpanKind, trace, type Attributes, type Span } from '@opentelemetry/api';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
} from '../telemetry/semconv.ts';

const tracer = trace.getTracer('exchange-order-worker');

/** Starts `send <topic>` as a child of the active context; the caller ends it. */
export function startSendSpan(topic: string, attributes: Attributes = {}): Span {
  return tracer.startSpan(`send ${topic}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTR_MESSAGING_SYSTEM]: 'kafka',
      [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
      [ATTR_MESSAGING_OPERATION_NAME]: 'send',
      [ATTR_MESSAGING_DESTINATION_NAME]: topic,
      ...attributes,
    },
  });
}
