// An operator command (order.settle) that arrives on another partition than its order's: it is forwarded with its
// operator headers, and screened where its order lives. A signed one still verifies there (the signature covers the
// key and value, which a forward keeps) and is accepted; an unsigned one is refused there, `unauthorized`, in the
// order's history (its next seq) with where it first arrived, like any other refusal of a forwarded command.
import { describe, expect, it } from 'vitest';
import { signOperatorCommand } from '../../../src/contract/operator-signature.ts';
import type { OrderRecord } from '../../../src/kafka/order-state-store.ts';
import type { OutboundRecord, TransactionalWriter } from '../../../src/kafka/transactional-writer.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
} from '../../../src/worker/machine-binding.ts';
import { OperatorAuthority } from '../../../src/worker/operator-authority.ts';
import { testOperator } from '../../support/operator-key.ts';
import { hostOver, memoryStore, openOrderStatus, openRecord, withSuspend } from './host-fixtures.ts';

const now = 1_000_000;

function harness() {
  const records = new Map<string, OrderRecord>([['o-1', openRecord('o-1', 0)]]);
  const written: OutboundRecord[] = [];
  const writer = {
    write: (out: OutboundRecord[]) => {
      written.push(...out);
      return Promise.resolve(true);
    },
  } as unknown as TransactionalWriter;
  const sent: OrderActorEvent[] = [];
  const handle: OrderActorHandle = {
    can: () => true,
    send: (event) => void sent.push(event),
    status: openOrderStatus,
    persisted: () => ({ fake: true }),
    stop: () => {},
  };
  const binding: MachineBinding = {
    create: () => handle,
    restore: () => handle,
    resting: () => null,
  };
  const leases = withSuspend({
    acquire: () => Promise.resolve({ fence: 2 }),
    release: () => Promise.resolve(),
    isValid: () => true,
  });
  const refused: string[] = [];
  const host = hostOver(
    { store: memoryStore(records), writer, leases, binding },
    {
      now: () => now,
      operatorAuthority: new OperatorAuthority({
        keys: [{ keyId: testOperator.keyId, spki: testOperator.publicSpki }],
        allowUnsigned: false,
        maxAgeMs: 600_000,
        onRefused: ({ problem }) => void refused.push(problem),
      }),
    },
  );
  host.setAssignment([0, 1]);
  const offsets = [0, 0];
  const send = (partition: number, value: string, headers: Record<string, string>) =>
    host.handleMessage({
      topic: 'commands',
      partition,
      offset: String(offsets[partition]!++),
      key: 'o-1',
      value: Buffer.from(value),
      headers,
    });
  const events = () =>
    written.filter((r) => r.topic === 'events').map((r) => JSON.parse(r.value) as Record<string, unknown>);
  const forwarded = () => written.filter((r) => r.topic === 'commands');
  return { send, events, forwarded, sent, refused };
}

const settle = JSON.stringify({
  type: 'order.settle',
  command_id: 'settle-1',
  order_id: 'o-1',
  resolution: 'adopt',
  unique_reference: 'REF',
});

describe('an operator command forwarded to its order', () => {
  it('keeps its operator headers, still verifies on the order partition, and is accepted there', async () => {
    const h = harness();
    const signed = signOperatorCommand(testOperator, { key: 'o-1', value: settle }, now - 5_000);
    await h.send(1, settle, {
      ...signed,
      traceparent: '00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
    expect(h.events()).toEqual([]);
    const [copy] = h.forwarded();
    expect(copy).toMatchObject({ partition: 0, key: 'o-1', value: settle });
    expect(copy!.headers).toEqual({
      ...signed,
      traceparent: '00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'forwarded-from': 'commands:1:0',
      'forward-hops': '1',
    });

    await h.send(0, copy!.value, copy!.headers!);
    expect(h.refused).toEqual([]);
    expect(h.sent).toMatchObject([{ type: 'SETTLE', resolution: 'adopt', uniqueReference: 'REF' }]);
    expect(h.events()).toMatchObject([
      {
        type: 'order.operator_command',
        seq: 5,
        command_id: 'settle-1',
        command_type: 'order.settle',
        resolution: 'adopt',
        unique_reference: 'REF',
        operator: { key_id: testOperator.keyId, signed_at: signed['operator-signed-at'] },
      },
    ]);
  });

  it('refuses an unsigned one on the order partition, after its forward, in the order history', async () => {
    const h = harness();
    await h.send(1, settle, {});
    // Not refused where it arrived: forwarded, like any command of an order that lives elsewhere.
    expect(h.events()).toEqual([]);
    const [copy] = h.forwarded();
    expect(copy).toMatchObject({ partition: 0, headers: { 'forwarded-from': 'commands:1:0' } });

    await h.send(0, copy!.value, copy!.headers!);
    expect(h.sent).toEqual([]);
    expect(h.refused).toHaveLength(1);
    expect(h.events()).toMatchObject([
      {
        type: 'command.rejected',
        reason: 'unauthorized',
        command_id: 'settle-1',
        order_id: 'o-1',
        seq: 5,
        event_id: 'o-1:5',
        source: { topic: 'commands', partition: 0, offset: '0' },
        forwarded_from: { topic: 'commands', partition: 1, offset: '0' },
      },
    ]);
    expect(String(h.events()[0]!['message'])).toMatch(/must be signed with an operator key/);
  });

  it('refuses a copy whose value was changed after signing (a forged forward) on the order partition', async () => {
    const h = harness();
    const signed = signOperatorCommand(testOperator, { key: 'o-1', value: settle }, now - 5_000);
    const abandon = settle.replace('"resolution":"adopt","unique_reference":"REF"', '"resolution":"abandon"');
    await h.send(0, abandon, { ...signed, 'forwarded-from': 'commands:1:7', 'forward-hops': '1' });
    expect(h.sent).toEqual([]);
    expect(h.events()).toMatchObject([
      {
        type: 'command.rejected',
        reason: 'unauthorized',
        seq: 5,
        forwarded_from: { partition: 1, offset: '7' },
      },
    ]);
    expect(String(h.events()[0]!['message'])).toMatch(/does not match this command/);
  });
});
