// The test harness's event collector keeps reading after kafkajs gives up on its consumer (the fault suite restarts
// the broker under it); its consumers are replaced by stand-ins here.
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { EventCollector } from '../../support/kafka-helpers.ts';

type EachMessage = (payload: {
  partition: number;
  message: { offset: string; key: Buffer | null; value: Buffer | null; headers?: Record<string, Buffer> };
}) => Promise<void>;

function fakeKafka() {
  const consumers: Array<{
    groupId: string;
    crash: (restart: boolean) => void;
    deliver: (offset: string, event: object) => Promise<void> | undefined;
    disconnected: boolean;
  }> = [];
  const kafka = {
    consumer: ({ groupId }: { groupId: string }) => {
      let onCrash: ((event: { payload: { restart: boolean } }) => void) | undefined;
      let eachMessage: EachMessage | undefined;
      const handle = {
        groupId,
        disconnected: false,
        crash: (restart: boolean) => onCrash?.({ payload: { restart } }),
        deliver: (offset: string, event: object) =>
          eachMessage?.({
            partition: 0,
            message: { offset, key: null, value: Buffer.from(JSON.stringify(event)) },
          }),
      };
      consumers.push(handle);
      return {
        events: { CRASH: 'consumer.crash' },
        on: (_name: string, fn: typeof onCrash) => void (onCrash = fn),
        connect: () => Promise.resolve(),
        subscribe: () => Promise.resolve(),
        run: (opts: { eachMessage: EachMessage }) => {
          eachMessage = opts.eachMessage;
          return Promise.resolve();
        },
        disconnect: () => {
          handle.disconnected = true;
          return Promise.resolve();
        },
      };
    },
  } as unknown as Kafka;
  return { kafka, consumers };
}

describe('event collector', () => {
  it('replaces a consumer kafkajs gave up on with a new one of the same group, and keeps each record once', async () => {
    const fake = fakeKafka();
    const collector = await EventCollector.start(fake.kafka, 'events');
    await fake.consumers[0]?.deliver('0', { type: 'order.created', order_id: 'o-1', seq: 1 });
    fake.consumers[0]?.crash(true); // kafkajs restarts this one itself
    expect(fake.consumers).toHaveLength(1);
    fake.consumers[0]?.crash(false);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fake.consumers).toHaveLength(2);
    expect(fake.consumers[0]?.disconnected).toBe(true);
    expect(fake.consumers[1]?.groupId).toBe(fake.consumers[0]?.groupId);
    // The new consumer resumes from the group's offsets: a record read before comes again and is kept once.
    await fake.consumers[1]?.deliver('0', { type: 'order.created', order_id: 'o-1', seq: 1 });
    await fake.consumers[1]?.deliver('1', { type: 'order.completed', order_id: 'o-1', seq: 2 });
    expect(collector.events.map((e) => e.type)).toEqual(['order.created', 'order.completed']);
    await collector.stop();
  });
});
