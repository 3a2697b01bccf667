// A producer for messages whose loss costs little and whose duplicate costs less (webhook hints, KYC events): no
// idempotence, no transaction, and it gives up after a few seconds instead of retrying forever behind a pending
// webhook answer. Each send is a `send <topic>` span whose context the message carries.
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { Partitioners, type Producer } from 'kafkajs';
import { injectContext } from '../telemetry/propagation.ts';
import { KafkaClient } from './kafka-client.ts';
import { startSendSpan } from './send-span.ts';
import type { OutboundRecord } from './transactional-writer.ts';

export class BestEffortProducer {
  private readonly producer: Producer;
  private connected = false;

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
  async send(record: OutboundRecord): Promise<void> {
    if (!this.connected) throw new Error('the best-effort producer is not connected');
    const span = startSendSpan(record.topic);
    try {
      const traceHeaders = injectContext(trace.setSpan(context.active(), span));
      await this.producer.send({
        topic: record.topic,
        messages: [
          {
            key: record.key,
            value: record.value,
            ...(record.partition === undefined ? {} : { partition: record.partition }),
            headers: { ...record.headers, ...traceHeaders },
          },
        ],
      });
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  }

  async disconnect(): Promise<void> {
    this.connected = false;
    await this.producer.disconnect();
  }
}
