// The command handler never waits without a bound (commandWaitBoundMs): kafkajs rejoins its group only between
// messages, so a handler that waits for a lease past the session timeout leaves a zombie member. Past the bound the
// command fails as retryable, with nothing of it written and its offset not committed: it is delivered again.
import { describe, expect, it } from 'vitest';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import type { MachineBinding } from '../../../src/worker/machine-binding.ts';
import { WorkerError } from '../../../src/errors.ts';
import { commandWaitBoundOf } from '../../../src/timeouts.ts';
import {
  createCommand,
  hostOver,
  memoryStore,
  openOrderHandle,
  openRecord,
  withSuspend,
} from './host-fixtures.ts';

function harness(acquire: () => Promise<{ fence: number } | null>, commandWaitBoundMs?: number) {
  const records = new Map<string, OrderRecord>();
  const store = memoryStore(records);
  const writes: Array<{ records: OutboundRecord[]; offsets: unknown[] }> = [];
  const writer = {
    write: (out: OutboundRecord[], offsets: unknown[] = []) => {
      writes.push({ records: out, offsets });
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const handle = openOrderHandle();
  const binding: MachineBinding = { create: () => handle, restore: () => handle, resting: () => null };
  const leases = withSuspend({ acquire, release: () => Promise.resolve(), isValid: () => true });
  const host = hostOver(
    { store, writer, leases, binding },
    commandWaitBoundMs === undefined ? {} : { commandWaitBoundMs },
  );
  host.setAssignment([0]);
  return { host, writes, records };
}

const message = {
  topic: 'commands',
  partition: 0,
  offset: '7',
  key: 'o-1',
  value: Buffer.from(JSON.stringify(createCommand)),
};

describe('order host: bounded waits in the command handler', () => {
  it('fails an order.create as retryable when its lease stays held past the bound, committing nothing', async () => {
    // Another replica holds the lease and never lets go.
    const { host, writes } = harness(() => Promise.resolve(null), 300);
    await host.onAssignment([], [0]);
    const startedAt = performance.now();
    const handled = host.handleMessage(message);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(host.commandRunningForMs()).toBeGreaterThanOrEqual(40);
    const error = await Promise.race([
      handled.then(
        () => 'handled',
        (e: unknown) => e,
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3_000)),
    ]);
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as WorkerError).code).toBe('command_wait_exceeded');
    expect((error as WorkerError).retryable).toBe(true);
    expect(performance.now() - startedAt).toBeLessThan(2_000);
    // Nothing written, no offset committed: the consumer delivers the command again.
    expect(writes).toEqual([]);
    expect(host.commandRunningForMs()).toBeUndefined();
    expect(host.activeOrders).toBe(0);
  });

  it('fails a command as retryable when the load of its order waits for a lease past the bound', async () => {
    const { host, writes, records } = harness(() => Promise.resolve(null), 300);
    await host.onAssignment([], []);
    // An unfinished order of this partition nobody drives here: its command loads it first (and waits for its lease).
    records.set('o-1', openRecord('o-1', 0));
    const cancel = {
      type: 'order.cancel',
      command_id: 'c-2',
      order_id: 'o-1',
    };
    const outcome = await Promise.race([
      host.handleMessage({ ...message, offset: '8', value: Buffer.from(JSON.stringify(cancel)) }).then(
        () => 'handled',
        (e: unknown) => e,
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3_000)),
    ]);
    expect(outcome).toBeInstanceOf(WorkerError);
    expect((outcome as WorkerError).retryable).toBe(true);
    expect(writes).toEqual([]);
  });

  it('derives the bound from the Kafka session timeout, well under it', () => {
    expect(commandWaitBoundOf(15_000)).toBe(5_000);
    expect(commandWaitBoundOf(45_000)).toBeLessThan(45_000 / 2);
  });

  it('counts live orders apart from resting ones, and no handler as running when idle', () => {
    const { host } = harness(() => Promise.resolve({ fence: 1 }));
    expect(host.liveOrders).toBe(0);
    expect(host.commandRunningForMs()).toBeUndefined();
  });
});
