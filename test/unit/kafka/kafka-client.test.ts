import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { quietKafkajsRequestQueues } from '../../../src/kafka/kafka-client.ts';

// kafkajs's own request queue (one per broker connection), as kafkajs builds it.
interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(request: { entry: Entry; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer | null; size: number }): void;
  maybeThrottle(ms: number): void;
  checkPendingRequests(): void;
  destroy(): void;
}
interface Entry {
  correlationId: number;
  apiKey: number;
  apiName: string;
  apiVersion: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}
const RequestQueueClass = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as new (
  opts: Record<string, unknown>,
) => RequestQueue;

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const queues: RequestQueue[] = [];
function queue(maxInFlightRequests: number): RequestQueue {
  const q = new RequestQueueClass({
    maxInFlightRequests,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'unit',
    broker: 'broker:9092',
    logger: silent,
  });
  queues.push(q);
  return q;
}
function request(correlationId: number, sent: number[]) {
  const entry: Entry = {
    correlationId,
    apiKey: 3,
    apiName: 'Metadata',
    apiVersion: 1,
    resolve: () => {},
    reject: () => {},
  };
  return { entry, expectResponse: true, sendRequest: () => void sent.push(correlationId) };
}

afterEach(() => {
  for (const q of queues.splice(0)) q.destroy();
});

describe('quietKafkajsRequestQueues', () => {
  it('finds the kafkajs request queue it patches', () => {
    expect(quietKafkajsRequestQueues()).toBe(true);
  });

  it('leaves no timer running on a connection where nothing waits (kafkajs alone re-arms a 1 ms check forever)', () => {
    quietKafkajsRequestQueues();
    const q = queue(10);
    const sent: number[] = [];
    q.push(request(1, sent));
    q.fulfillRequest({ correlationId: 1, payload: null, size: 0 });
    expect(sent).toEqual([1]);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('still sends a request that waited for the in-flight limit when a response frees a slot', async () => {
    quietKafkajsRequestQueues();
    const q = queue(1);
    const sent: number[] = [];
    q.push(request(1, sent));
    q.push(request(2, sent));
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: null, size: 0 });
    expect(sent).toEqual([1, 2]);
    q.fulfillRequest({ correlationId: 2, payload: null, size: 0 });
    // The check armed (10 ms) when request 2 had to wait runs once, finds nothing, and arms no other.
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('still sends a request that waited for a broker throttle once it ends, then stops checking', async () => {
    quietKafkajsRequestQueues();
    const q = queue(10);
    const sent: number[] = [];
    q.maybeThrottle(30);
    q.push(request(1, sent));
    expect(sent).toEqual([]);
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(sent).toEqual([1]);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });
});
