// The command consumer against a real broker. Its rewind: a partition asked to deliver again from an earlier offset
// (a pipelined command whose write was refused) delivers that offset and everything after it again, while the
// consumer keeps running, and the earliest offset asked for wins. Its "commands waiting" signal: commands appended
// long before the consumer hands them on (a backlog) read as waiting while they are handed on, and no longer once
// it has nothing more to hand on; commands handed on as soon as they are appended do not. Resting orders' routine
// polls wait while it reads true (main.ts), so a replica working off a backlog spends its thread on the commands.
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { CommandConsumer } from '../../src/kafka/command-consumer.ts';
import { KafkaClient } from '../../src/kafka/kafka-client.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { services, uniqueName } from '../support/services.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';

const cleanups = cleanupsAfterEach();

async function until(check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!check()) throw new Error('timed out');
}

/** A one-partition topic of its own, a producer on it and a command consumer of it, removed after the test. */
async function commandTopic(name: string) {
  const kafka = new Kafka({
    clientId: uniqueName(name),
    brokers: services().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  const topic = uniqueName('commands');
  const admin = kafka.admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  cleanups.push(() => admin.deleteTopics({ topics: [topic] }));
  const producer = kafka.producer();
  await producer.connect();
  cleanups.push(() => producer.disconnect());
  const consumer = new CommandConsumer({
    kafka: KafkaClient.wrap(kafka),
    topic,
    groupId: uniqueName('group'),
    logger: createLogger({ level: 'silent' }),
  });
  cleanups.push(() => consumer.stop());
  return { topic, producer, consumer };
}

describe('command consumer rewind', () => {
  it('delivers a partition again from the earliest offset asked for while it runs', async () => {
    const { topic, producer, consumer } = await commandTopic('rewind');
    await producer.send({
      topic,
      messages: Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: String(i) })),
    });

    const seen: string[] = [];
    let rewound = false;
    await consumer.start(
      {
        onAssignment: () => Promise.resolve(),
        onMessage: (message) => {
          seen.push(message.offset);
          // At offset 6, offsets 4 and then 2 are found refused: the partition comes again from 2.
          if (message.offset === '6' && !rewound) {
            rewound = true;
            consumer.rewind(message.partition, '4');
            consumer.rewind(message.partition, '2');
            consumer.rewind(message.partition, '5');
          }
          return Promise.resolve();
        },
      },
      1,
    );
    await until(() => seen.filter((offset) => offset === '9').length >= 1 && rewound);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const firstSix = seen.indexOf('6');
    expect(seen.slice(0, firstSix + 1)).toEqual(['0', '1', '2', '3', '4', '5', '6']);
    expect(seen.slice(firstSix + 1)).toEqual(['2', '3', '4', '5', '6', '7', '8', '9']);
  }, 60_000);
});

describe('command consumer, commands waiting', () => {
  it('reads waiting while it hands on commands appended seconds earlier, and not while it keeps up', async () => {
    const { topic, producer, consumer } = await commandTopic('wait');
    // A backlog: five commands appended 3 s before the consumer starts.
    await producer.send({
      topic,
      messages: Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: 'old' })),
    });
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    const seen: { value: string; waiting: boolean }[] = [];
    await consumer.start(
      {
        onAssignment: () => Promise.resolve(),
        onMessage: (message) => {
          seen.push({ value: message.value?.toString() ?? '', waiting: consumer.commandsWaiting() });
          return Promise.resolve();
        },
      },
      1,
    );
    await until(() => seen.length === 5);
    expect(seen.map((s) => s.waiting)).toEqual([true, true, true, true, true]);
    expect(consumer.commandsWaiting()).toBe(true);
    // Caught up: a second later nothing waits.
    await until(() => !consumer.commandsWaiting(), 5_000);

    // Commands appended while the consumer keeps up are handed on at once: not waiting.
    for (let i = 0; i < 3; i++) {
      await producer.send({ topic, messages: [{ key: `n${i}`, value: 'new' }] });
      await until(() => seen.length === 6 + i);
    }
    expect(seen.slice(5).map((s) => s.waiting)).toEqual([false, false, false]);
  }, 60_000);
});
