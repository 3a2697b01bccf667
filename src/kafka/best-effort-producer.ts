// A producer for messages whose loss costs little and whose duplicate costs less (webhook hints, KYC events): no
// idempotence, no transaction, and it gives up after a few seconds instead of retrying forever behind a pending
// webhook answer. Each send is a `send <topic>` span whose context the message carries.
// Sends share requests: a send made while none is out goes at once, alone; the sends made while one is out wait for
// it and then go together in the next request (up to `maxBatchRecords`), the way the transactional writer groups
// its commits. One request out at a time keeps each key's records in the order they were sent. (Sending every
// record in a request of its own, one after the other, capped the hints one replica could route at about one per
// broker round trip: with three replicas behind one webhook URL, the webhooks of two thirds of the orders waited in
// that line for their answer.)
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { Partitioners, type Message, type Producer } from 'kafkajs';
import { injectContext } from '../telemetry/propagation.ts';
import { ATTR_MESSAGING_BATCH_MESSAGE_COUNT } from '../telemetry/semconv.ts';
import { KafkaClient } from './kafka-client.ts';
import { startSendSpan } from './send-span.ts';
import type { OutboundRecord } from './transactional-writer.ts';

/** The most records one request carries (webhook hints are a few hundred bytes each). */
export const maxBatchRecords = 500;

interface QueuedSend {
  topic: string;
  message: Message;
  span: Span;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class BestEffortProducer {
  private readonly producer: Producer;
  private connected = false;
  private readonly queue: QueuedSend[] = [];
  /** Whether the loop sending the queue runs; it stops in the same step that finds the queue empty. */
  private sending = false;
  /** That loop's latest run. */
  private drained: Promise<void> = Promise.resolve();

  constructor(client: KafkaClient) {
    this.producer = KafkaClient.kafkajs(client).producer({
      idempotent: false,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 4, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
    this.connected = true;
  }

  /** Sends one record; rejects when it could not be written within the producer's few retries. */
  send(record: OutboundRecord): Promise<void> {
    if (!this.connected) return Promise.reject(new Error('the best-effort producer is not connected'));
    const span = startSendSpan(record.topic);
    const traceHeaders = injectContext(trace.setSpan(context.active(), span));
    const sent = new Promise<void>((resolve, reject) => {
      this.queue.push({
        topic: record.topic,
        message: {
          key: record.key,
          value: record.value,
          ...(record.partition === undefined ? {} : { partition: record.partition }),
          headers: { ...record.headers, ...traceHeaders },
        },
        span,
        resolve,
        reject,
      });
    });
    if (!this.sending) {
      this.sending = true;
      this.drained = this.drain();
    }
    return sent;
  }

  /** Sends the queue, batch after batch; `sending` drops in the same step that finds it empty (no send is missed). */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, maxBatchRecords);
        const byTopic = new Map<string, Message[]>();
        for (const item of batch) {
          const messages = byTopic.get(item.topic);
          if (messages) messages.push(item.message);
          else byTopic.set(item.topic, [item.message]);
          item.span.setAttribute(ATTR_MESSAGING_BATCH_MESSAGE_COUNT, batch.length);
        }
        try {
          await this.producer.sendBatch({
            topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
          });
          for (const item of batch) {
            item.span.end();
            item.resolve();
          }
        } catch (error) {
          for (const item of batch) {
            item.span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
            item.span.end();
            item.reject(error);
          }
        }
      }
    } finally {
      this.sending = false;
    }
  }

  /** Sends what is queued (within the producer's retries), then disconnects; later sends are refused. */
  async disconnect(): Promise<void> {
    this.connected = false;
    await this.drained;
    await this.producer.disconnect();
  }
}
