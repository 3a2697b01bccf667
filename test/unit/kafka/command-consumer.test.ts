// The command consumer's handling of partition restores, with kafkajs's consumer replaced by a stand-in that lets
// the test join the group and deliver messages (the real broker is exercised by the integration tier): a failed
// restore is retried instead of escaping as an unhandled rejection, and a partition revoked before its restore
// finished is not handled here.
import { describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import { KafkaClient } from '../../../src/kafka/kafka-client.ts';
import {
  CommandConsumer,
  CommandWait,
  type InboundCommandMessage,
} from '../../../src/kafka/command-consumer.ts';
import { catchUpTimeoutFor } from '../../../src/kafka/order-state-store.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

type EachMessage = (payload: {
  topic: string;
  partition: number;
  message: { offset: string; key: Buffer | null; value: Buffer | null };
  heartbeat: () => Promise<void>;
}) => Promise<void>;

function fakeKafka() {
  const listeners = new Map<string, (event: { payload: unknown }) => void>();
  let eachMessage: EachMessage | undefined;
  const consumer = {
    events: { GROUP_JOIN: 'group_join', CRASH: 'crash' },
    on: (name: string, fn: (event: { payload: unknown }) => void) => void listeners.set(name, fn),
    connect: () => Promise.resolve(),
    subscribe: () => Promise.resolve(),
    run: (opts: { eachMessage: EachMessage }) => {
      eachMessage = opts.eachMessage;
      return Promise.resolve();
    },
    stop: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
  };
  return {
    kafka: { consumer: () => consumer } as unknown as Kafka,
    join: (partitions: number[], memberId = 'member-1') =>
      listeners.get('group_join')?.({ payload: { memberId, memberAssignment: { commands: partitions } } }),
    crash: (restart: boolean) =>
      listeners.get('crash')?.({ payload: { error: new Error('broker gone'), restart } }),
    deliver: (partition: number, heartbeat: () => Promise<void> = () => Promise.resolve()) =>
      eachMessage?.({
        topic: 'commands',
        partition,
        message: { offset: '0', key: null, value: null },
        heartbeat,
      }),
  };
}

function consumerWith(
  kafka: Kafka,
  onFatal?: (error: Error) => void,
  sessionTimeoutMs?: number,
): CommandConsumer {
  return new CommandConsumer({
    ...(onFatal ? { onFatal } : {}),
    ...(sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs }),
    kafka: KafkaClient.wrap(kafka),
    topic: 'commands',
    groupId: 'group',
    logger: createLogger({ level: 'silent' }),
    restoreRetryDelayMs: () => 5,
  });
}

describe('command consumer restores', () => {
  it('retries a failed restore until it succeeds, without an unhandled rejection, then handles the message', async () => {
    const fake = fakeKafka();
    const consumer = consumerWith(fake.kafka);
    const calls: Array<[number[], number[]]> = [];
    const handled: InboundCommandMessage[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await consumer.start(
        {
          onAssignment: (_assigned, revoked, added) => {
            calls.push([revoked, added]);
            return calls.length < 3
              ? Promise.reject(new Error('state partition 0 not caught up'))
              : Promise.resolve();
          },
          onMessage: (message) => {
            handled.push(message);
            return Promise.resolve();
          },
        },
        1,
      );
      fake.join([0]);
      await fake.deliver(0);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(calls).toEqual([
        [[], [0]],
        [[], [0]],
        [[], [0]],
      ]);
      expect(handled).toHaveLength(1);
      expect(consumer.allRestored()).toBe(true);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('does not handle a message of a partition revoked before its restore finished', async () => {
    const fake = fakeKafka();
    const consumer = consumerWith(fake.kafka);
    const handled: InboundCommandMessage[] = [];
    let failing = true;
    await consumer.start(
      {
        onAssignment: () => (failing ? Promise.reject(new Error('restore failed')) : Promise.resolve()),
        onMessage: (message) => {
          handled.push(message);
          return Promise.resolve();
        },
      },
      1,
    );
    fake.join([0]);
    const delivery = fake.deliver(0);
    fake.join([1]);
    failing = false;
    await expect(delivery).rejects.toThrow(/no longer assigned/);
    expect(handled).toEqual([]);
    expect(consumer.restoredPartitions.has(0)).toBe(false);
  });

  it('restores every partition again after rejoining as a new member (evicted without knowing it)', async () => {
    const fake = fakeKafka();
    const consumer = consumerWith(fake.kafka);
    const calls: Array<[number[], number[]]> = [];
    await consumer.start(
      {
        onAssignment: (_assigned, revoked, added) => {
          calls.push([revoked, added]);
          return Promise.resolve();
        },
        onMessage: () => Promise.resolve(),
      },
      1,
    );
    fake.join([0, 1, 2, 3], 'member-1');
    fake.join([0, 3], 'member-1');
    // Paused past its session: the group gave 0 and 3 to another member for a while, then back under a new id.
    fake.join([0, 3], 'member-2');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toEqual([
      [[], [0, 1, 2, 3]],
      [[1, 2], []],
      [[], [0, 3]],
    ]);
    expect(consumer.allRestored()).toBe(true);
  });

  it('tells the host of a new assignment at once, before queued restores run', async () => {
    const fake = fakeKafka();
    const consumer = consumerWith(fake.kafka);
    const seen: Array<readonly number[]> = [];
    let release: () => void = () => {};
    await consumer.start(
      {
        onAssignmentChanged: (assigned) => void seen.push(assigned),
        onAssignment: () => new Promise<void>((resolve) => (release = resolve)),
        onMessage: () => Promise.resolve(),
      },
      1,
    );
    fake.join([0, 1]);
    fake.join([1]);
    expect(seen).toEqual([[0, 1], [1]]);
    release();
  });

  it('gives a catch-up more time than the transaction timeout it may have to wait out', () => {
    expect(catchUpTimeoutFor(10_000)).toBe(120_000);
    expect(catchUpTimeoutFor(900_000)).toBeGreaterThan(900_000 + 10_000);
  });

  it('stops the process when the consumer crashes for good, not when kafkajs restarts it', () => {
    const fake = fakeKafka();
    const fatal: Error[] = [];
    consumerWith(fake.kafka, (error) => fatal.push(error));
    fake.crash(true);
    expect(fatal).toEqual([]);
    fake.crash(false);
    expect(fatal.map((e) => e.message)).toEqual(['broker gone']);
  });

  it('heartbeats while a message waits for its partition restore, so a long lease wait does not get it evicted', async () => {
    const fake = fakeKafka();
    // Heartbeats every 20 ms; the restore takes 300 ms (a previous owner letting go of a lease).
    const consumer = consumerWith(fake.kafka, undefined, 100);
    const handled: InboundCommandMessage[] = [];
    await consumer.start(
      {
        onAssignment: () => new Promise((resolve) => setTimeout(resolve, 300)),
        onMessage: (message) => {
          handled.push(message);
          return Promise.resolve();
        },
      },
      1,
    );
    fake.join([0]);
    let heartbeats = 0;
    await fake.deliver(0, () => {
      heartbeats++;
      return Promise.resolve();
    });
    expect(handled).toHaveLength(1);
    expect(heartbeats).toBeGreaterThanOrEqual(5);
  });

  it('ends the wait for a restore when a heartbeat reports a rebalance, so the group can move on', async () => {
    const fake = fakeKafka();
    const consumer = consumerWith(fake.kafka, undefined, 100);
    await consumer.start(
      {
        onAssignment: () => new Promise(() => {}), // a lease that is never let go
        onMessage: () => Promise.resolve(),
      },
      1,
    );
    fake.join([0]);
    let heartbeats = 0;
    const delivery = fake.deliver(0, () =>
      ++heartbeats < 3 ? Promise.resolve() : Promise.reject(new Error('The group is rebalancing')),
    );
    await expect(delivery).rejects.toThrow(/rebalancing/);
  });
});

describe('command consumer admission', () => {
  it('heartbeats while a message is held back by admit, hands it on once admitted, and ends the hold on a rebalance', async () => {
    const fake = fakeKafka();
    const consumer = consumerWith(fake.kafka, undefined, 100);
    const handled: InboundCommandMessage[] = [];
    let admitted: () => void = () => {};
    let hold: Promise<void> | undefined = new Promise<void>((resolve) => (admitted = resolve));
    await consumer.start(
      {
        onAssignment: () => Promise.resolve(),
        admit: () => hold,
        onMessage: (message) => {
          handled.push(message);
          return Promise.resolve();
        },
      },
      1,
    );
    fake.join([0]);
    let heartbeats = 0;
    const delivery = fake.deliver(0, () => {
      heartbeats++;
      return Promise.resolve();
    });
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(handled).toHaveLength(0);
    expect(heartbeats).toBeGreaterThanOrEqual(3);
    admitted();
    await delivery;
    expect(handled).toHaveLength(1);
    // A hold that a rebalance ends: the message is not handed on (its next owner reads it).
    hold = new Promise(() => {});
    await expect(
      fake.deliver(0, () => Promise.reject(new Error('The group is rebalancing'))),
    ).rejects.toThrow(/rebalancing/);
    expect(handled).toHaveLength(1);
    // Nothing to hold: handed on at once.
    hold = undefined;
    await fake.deliver(0);
    expect(handled).toHaveLength(2);
  });
});

describe('CommandWait', () => {
  it('reads waiting while the commands handed on had waited 2 s or more, and for a second after the last one', () => {
    const wait = new CommandWait();
    expect(wait.waiting(10_000)).toBe(false);
    wait.handedOn(8_500, 10_000); // waited 1.5 s: keeping up
    expect(wait.waiting(10_000)).toBe(false);
    wait.handedOn(7_900, 10_100); // waited 2.2 s: a backlog
    expect(wait.waiting(10_100)).toBe(true);
    expect(wait.waiting(11_100)).toBe(true);
    // Nothing handed on for more than a second: caught up (or idle), not behind.
    expect(wait.waiting(11_101)).toBe(false);
    wait.handedOn(11_000, 11_200); // the backlog is gone
    expect(wait.waiting(11_200)).toBe(false);
  });

  it('ignores a message without a usable timestamp', () => {
    const wait = new CommandWait({ behindMs: 100, freshMs: 1_000 });
    wait.handedOn(0, 5_000);
    wait.handedOn(Number.NaN, 5_100);
    expect(wait.waiting(5_100)).toBe(true);
  });
});
