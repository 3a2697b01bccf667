// An order that ends with a deposit the exchange had not recorded is an operator's business: the host counts each
// such end once committed (worker_deposits_unrecorded_total) and logs it, and the end the host writes itself (an
// abandoned halted order) says so as the machine's ends do. The machine binding reads the deposit off the persisted
// form the same way the machine does (machines/order-deposits.ts).
import { describe, expect, it } from 'vitest';
import type { OrderRecord, OrderStateStore } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord } from '../../../src/kafka/transactional-writer.ts';
import type {
  MachineBinding,
  OrderActorHandle,
  StartOrderOptions,
} from '../../../src/worker/machine-binding.ts';
import { createXStateBinding } from '../../../src/worker/xstate-binding.ts';
import type { OrderContext } from '../../../machines/order-types.ts';
import { OrderHarness, exchangeOrder, ok, orderInput } from '../machines/order-harness.ts';
import { createCommand, hostOver, noMetrics, openOrderStatus, withSuspend } from './host-fixtures.ts';
import { fakeEvent } from '../../support/fake-events.ts';

const unconfirmed = { tx_hash: '0xabc', state: 'unconfirmed', accepted_at: '2026-01-01T00:00:01.000Z' };

function harness(unrecorded: typeof unconfirmed | null) {
  const records = new Map<string, OrderRecord>();
  const written: OutboundRecord[] = [];
  const starts: StartOrderOptions[] = [];
  const counted: Array<[string, string]> = [];
  const store = {
    get: (id: string) => records.get(id),
    apply: (record: OrderRecord) => void records.set(record.order_id, record),
    recordsOfPartition: () => [],
    catchUp: () => Promise.resolve(),
    orderIdByReference: () => undefined,
  } as unknown as OrderStateStore;
  const writer = {
    write: (out: OutboundRecord[]) => {
      written.push(...out);
      return Promise.resolve(true);
    },
  };
  const leases = withSuspend({
    acquire: () => Promise.resolve({ fence: 1 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  });
  let terminal = false;
  const handle: OrderActorHandle = {
    can: () => true,
    send: () => {},
    status: () => ({ ...openOrderStatus(), terminal }),
    persisted: () => ({ fake: true, terminal }),
    stop: () => {},
  };
  const binding: MachineBinding = {
    create: (_command, start) => {
      starts.push(start);
      return handle;
    },
    restore: () => handle,
    resting: () => null,
    unrecordedDeposit: () => unrecorded as ReturnType<NonNullable<MachineBinding['unrecordedDeposit']>>,
  };
  const host = hostOver(
    { store, writer, leases, binding },
    { metrics: { ...noMetrics, depositUnrecorded: (outcome, state) => void counted.push([outcome, state]) } },
  );
  host.setAssignment([0]);
  let offset = 0;
  const send = (value: unknown) =>
    host.handleMessage({
      topic: 'commands',
      partition: 0,
      offset: String(offset++),
      key: 'o-1',
      value: Buffer.from(JSON.stringify(value)),
    });
  const events = () =>
    written
      .filter((record) => record.topic === 'events')
      .map((record) => JSON.parse(record.value) as Record<string, unknown>);
  return { host, starts, counted, send, events, end: () => (terminal = true) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('order host: ends that leave a deposit unrecorded', () => {
  it('counts an end committed with an unrecorded deposit, by end and state, and no other end', async () => {
    const h = harness(null);
    await h.send(createCommand);
    h.starts[0]?.onChange([fakeEvent({ type: 'order.status_changed', status: 'PAID' })]);
    await tick();
    expect(h.counted).toEqual([]);
    h.end();
    h.starts[0]?.onChange([
      fakeEvent({
        type: 'order.canceled',
        unique_reference: 'REF',
        reason: 'exchange',
        unrecorded_deposit: unconfirmed,
      }),
    ]);
    await tick();
    await tick();
    expect(h.counted).toEqual([['canceled', 'unconfirmed']]);
  });

  it('says so in the order.failed it writes when an operator abandons a halted order holding a deposit', async () => {
    const h = harness(unconfirmed);
    await h.send(createCommand);
    h.starts[0]?.onError(new RangeError('Invalid time value'));
    await tick();
    await h.send({ type: 'order.settle', command_id: 'c-3', order_id: 'o-1', resolution: 'abandon' });
    expect(h.events().at(-1)).toMatchObject({
      type: 'order.failed',
      reason: 'abandoned_by_operator',
      unrecorded_deposit: unconfirmed,
    });
    expect(h.counted).toEqual([['failed', 'unconfirmed']]);
  });
});

describe('machine binding: the unrecorded deposit of a persisted form', () => {
  const binding = createXStateBinding({
    orderConfig: {},
    actors: {} as Parameters<typeof createXStateBinding>[0]['actors'],
  });

  it('reads the accepted deposit of a stored order the exchange has not recorded, and none once it has', async () => {
    const h = await OrderHarness.start(orderInput({ mode: 'cefi' }), {
      createOrder: [ok({ order: exchangeOrder(), reused: false })],
    });
    await h.send({ type: 'SUBMIT_DEPOSIT', txHash: '0xabc', at: h.clock.now() });
    const persisted = h.persisted();
    h.stop();
    expect(binding.unrecordedDeposit?.(persisted)).toMatchObject({ tx_hash: '0xabc', state: 'unconfirmed' });
    const context: OrderContext = {
      ...persisted.context,
      order: exchangeOrder({ depositTransaction: '0xabc' }),
    };
    expect(binding.unrecordedDeposit?.({ ...persisted, context })).toBeNull();
    expect(binding.unrecordedDeposit?.({ not: 'a persisted order' })).toBeNull();
  });
});
