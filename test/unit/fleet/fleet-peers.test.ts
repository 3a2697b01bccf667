// The read API across replicas, in process: each replica a real operations server over its own read view (the
// orders of the partitions it owns), asking the others over HTTP as the worker does; the fleet's members held in
// memory here (their Redis adapter: test/adapter/redis/fleet-members.test.ts). What any replica answers must be what
// one replica holding every order would answer: the same orders, in the same order, page after page.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetPeers, httpAsk, mergePages } from '../../../src/fleet/fleet-peers.ts';
import { FleetView } from '../../../src/fleet/fleet-view.ts';
import { parseListQuery } from '../../../src/fleet/list-query.ts';
import type { SummaryRecord } from '../../../src/fleet/order-summary.ts';
import { bearerCheck } from '../../../src/http/bearer-auth.ts';
import { createOpsServer } from '../../../src/http/http-server.ts';
import { createOrdersApi } from '../../../src/http/orders-api.ts';
import type { FleetMember } from '../../../src/redis/fleet-members.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

const token = 'ops-token-peers-41c2';
const headers = { authorization: `Bearer ${token}` };
const now = Date.parse('2026-06-01T12:00:00Z');
const logger = createLogger({ level: 'silent' });
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((done) => s.close(() => done()))));
});

function record(
  id: string,
  partition: number,
  ageMinutes: number,
  fields: Partial<SummaryRecord> = {},
): SummaryRecord {
  const state = fields.terminal ? 'completed' : 'open';
  return {
    order_id: id,
    partition,
    fence: 1,
    rev: 1,
    seq: 2,
    updated_at: new Date(now - ageMinutes * 60_000).toISOString(),
    mode: 'cefi',
    unique_reference: null,
    terminal: false,
    machine: { resumeFrom: state, context: { request: { depositCurrency: 'ETH' } } },
    ...fields,
  };
}

interface Replica {
  id: string;
  url: string;
  server: Server;
}

/** A fleet: one replica per entry, each owning its partitions and holding those partitions' records. */
async function fleet(
  owners: Array<{ id: string; partitions: number[]; records: SummaryRecord[]; at?: number }>,
  opts: { partitionCount?: number } = {},
): Promise<{ replicas: Replica[]; members: Map<string, FleetMember> }> {
  const members = new Map<string, FleetMember>();
  // Where every order lives, as every replica's state store knows it.
  const placed = new Map<string, number>();
  for (const owner of owners) for (const r of owner.records) placed.set(r.order_id, r.partition);
  const replicas: Replica[] = [];
  for (const owner of owners) {
    const view = new FleetView({ sharesRecords: true });
    for (const r of owner.records) if (owner.partitions.includes(r.partition)) view.apply(r);
    const box = { url: '' };
    const peers = new FleetPeers({
      workerId: owner.id,
      members: {
        current: () => Promise.resolve([...members.values()]),
        announce: (member) => Promise.resolve(void members.set(member.worker_id, member)),
        withdraw: (id) => Promise.resolve(void members.delete(id)),
      },
      ownedPartitions: () => owner.partitions,
      partitionCount: () => opts.partitionCount ?? 3,
      partitionOf: (id) => placed.get(id),
      url: () => box.url,
      ask: httpAsk(owner.id, 2_000),
      logger,
      now: () => now,
    });
    const server = createOpsServer({
      logger,
      readiness: () => Promise.resolve({ ready: true, checks: {} }),
      metrics: () => '',
      routes: createOrdersApi({
        auth: bearerCheck([token]),
        view,
        peers,
        replicaOf: () => Promise.resolve(null),
        workerId: owner.id,
        now: () => now,
      }),
    });
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
    box.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    members.set(owner.id, {
      worker_id: owner.id,
      url: box.url,
      partitions: owner.partitions,
      at: owner.at ?? now,
    });
    replicas.push({ id: owner.id, url: box.url, server });
  }
  return { replicas, members };
}

async function get(
  url: string,
  path: string,
): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> {
  const response = await fetch(`${url}${path}`, { headers });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    retryAfter: response.headers.get('retry-after'),
  };
}

/** Every order id a list gives, page after page, and the largest page. */
async function pageThrough(
  url: string,
  filter: string,
  limit: number,
): Promise<{ ids: string[]; largest: number }> {
  const ids: string[] = [];
  let largest = 0;
  let cursor: string | null = null;
  for (let pages = 0; pages < 500; pages++) {
    const answer = await get(url, `/orders?${filter}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(answer.status).toBe(200);
    const orders = answer.body['orders'] as Array<{ order_id: string }>;
    largest = Math.max(largest, orders.length);
    ids.push(...orders.map((o) => o.order_id));
    cursor = answer.body['next_cursor'] as string | null;
    if (cursor === null) return { ids, largest };
  }
  throw new Error('more than 500 pages');
}

function expectedIds(records: SummaryRecord[], filter: string, limit: number): string[] {
  const one = new FleetView();
  for (const r of records) one.apply(r);
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const parsed = parseListQuery(
      new URLSearchParams(`${filter}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`),
    );
    if (!parsed.ok) throw new Error(parsed.problems.join());
    const page = one.list(parsed.query, now);
    ids.push(...page.orders.map((o) => o.order_id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

describe('the read API across replicas', () => {
  it('lists, from any replica, the orders one replica holding them all would list, in its order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            partition: fc.integer({ min: 0, max: 2 }),
            // Few distinct ages: many orders share a `since`, ordered by id.
            age: fc.integer({ min: 0, max: 6 }),
            terminal: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        fc.constantFrom('state=open', 'state=finished', 'older_than=3m'),
        fc.integer({ min: 1, max: 6 }),
        fc.boolean(),
        async (entries, filter, limit, handover) => {
          const records = entries.map((e, i) =>
            record(`o${String(i).padStart(2, '0')}`, e.partition, e.age, { terminal: e.terminal }),
          );
          // While partition 2 changes hands (from w-c to w-b), its old owner still announces it, older, with
          // stale copies of its orders; w-c owns partition 1 meanwhile.
          const stale = records
            .filter((r) => r.partition === 2)
            .map((r) => ({ ...r, order_id: `${r.order_id}-stale` }));
          const { replicas } = await fleet(
            handover
              ? [
                  { id: 'w-a', partitions: [0], records },
                  { id: 'w-b', partitions: [2], records },
                  { id: 'w-c', partitions: [1, 2], records: [...records, ...stale], at: now - 5_000 },
                ]
              : [
                  { id: 'w-a', partitions: [0], records },
                  { id: 'w-b', partitions: [1, 2], records },
                ],
          );
          const expected = expectedIds(records, filter, limit);
          for (const replica of replicas.slice(0, 2)) {
            const { ids, largest } = await pageThrough(replica.url, filter, limit);
            expect(ids).toEqual(expected);
            expect(largest).toBeLessThanOrEqual(limit);
          }
          await Promise.all(servers.splice(0).map((s) => new Promise<void>((done) => s.close(() => done()))));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('answers an order from the replica that owns it, found by id or by its reference, and 404 only when no owner holds it', async () => {
    const { replicas } = await fleet([
      { id: 'w-a', partitions: [0], records: [record('a-1', 0, 1)] },
      {
        id: 'w-b',
        partitions: [1, 2],
        records: [record('b-1', 1, 1, { unique_reference: 'REFB1', seq: 7 })],
      },
    ]);
    const [a] = replicas;
    const byId = await get(a!.url, '/orders/b-1');
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({
      order: { order_id: 'b-1', seq: 7 },
      replica: null,
      answered_by: 'w-a',
    });
    // A reference this replica cannot place: every owner is asked.
    expect((await get(a!.url, '/orders/REFB1')).body).toMatchObject({ order: { order_id: 'b-1' } });
    const missing = await get(a!.url, '/orders/nobody');
    expect(missing.status).toBe(404);
    expect(missing.body['answered_by']).toBe('w-a');
  });

  it('answers a request another replica passed on from its own view only', async () => {
    const { replicas } = await fleet([
      { id: 'w-a', partitions: [0], records: [record('a-1', 0, 1)] },
      { id: 'w-b', partitions: [1, 2], records: [record('b-1', 1, 1)] },
    ]);
    const passed = await fetch(`${replicas[0]!.url}/orders/b-1`, {
      headers: { ...headers, 'x-fleet-forwarded': 'w-b' },
    });
    expect(passed.status).toBe(404);
    const page = (await (
      await fetch(`${replicas[0]!.url}/orders?state=open`, {
        headers: { ...headers, 'x-fleet-forwarded': 'w-b' },
      })
    ).json()) as { orders: Array<{ order_id: string }> };
    expect(page.orders.map((o) => o.order_id)).toEqual(['a-1']);
  });

  it('answers 503 with Retry-After, never a short list or a 404, while a partition has no owner answering', async () => {
    const { replicas, members } = await fleet([
      { id: 'w-a', partitions: [0], records: [record('a-1', 0, 1)] },
      { id: 'w-b', partitions: [1, 2], records: [record('b-1', 1, 1)] },
    ]);
    const [a, b] = replicas;
    // Nobody announces partition 2 (a rebalance under way).
    members.set('w-b', { ...members.get('w-b')!, partitions: [1] });
    const list = await get(a!.url, '/orders?state=open');
    expect(list.status).toBe(503);
    expect(list.retryAfter).toBe('2');
    expect(String(list.body['detail'])).toMatch(/state partition\(s\) 2/);
    // An id this replica cannot place might be on partition 2: not a 404.
    expect((await get(a!.url, '/orders/nobody')).status).toBe(503);
    // The owner is gone without a word (its entry not stale yet).
    members.set('w-b', { ...members.get('w-b')!, partitions: [1, 2] });
    await new Promise<void>((done) => b!.server.close(() => done()));
    b!.server.closeAllConnections();
    const gone = await get(a!.url, '/orders/b-1');
    expect(gone.status).toBe(503);
    expect(String(gone.body['detail'])).toMatch(/w-b did not answer/);
    expect((await get(a!.url, '/orders?state=open')).status).toBe(503);
    // Its own orders it still answers.
    expect((await get(a!.url, '/orders/a-1')).status).toBe(200);
  });
});

describe('mergePages', () => {
  it('announces nothing before it owns a partition, then every change, including giving them all up', async () => {
    const announced: number[][] = [];
    let owned: number[] = [];
    let clock = now;
    const peers = new FleetPeers({
      workerId: 'w-a',
      members: {
        current: () => Promise.resolve([]),
        announce: (member) => Promise.resolve(void announced.push(member.partitions)),
        withdraw: () => Promise.resolve(),
      },
      ownedPartitions: () => owned,
      partitionCount: () => 2,
      partitionOf: () => undefined,
      url: () => 'http://127.0.0.1:1',
      ask: () => Promise.reject(new Error('not asked')),
      logger,
      now: () => clock,
    });
    // Starting: nothing owned yet (Redis may not even be reached yet), so nothing to say.
    await peers.tick();
    expect(announced).toEqual([]);
    owned = [1, 0];
    await peers.tick();
    await peers.tick();
    owned = [];
    clock += 1;
    await peers.tick();
    expect(announced).toEqual([[0, 1], []]);
  });

  it('ends a page where the first source with more stopped, so that nothing after it is skipped', () => {
    const order = (id: string, minute: number) =>
      ({ order_id: id, since: new Date(now + minute * 60_000).toISOString() }) as never;
    const page = mergePages(
      [
        { orders: [order('a', 1), order('b', 2)], moreAfter: [now + 2 * 60_000, 'b'] },
        { orders: [order('c', 1), order('d', 3), order('e', 4)], moreAfter: null },
      ],
      10,
    );
    expect(page.orders.map((o) => o.order_id)).toEqual(['a', 'c', 'b']);
    expect(page.next_cursor).not.toBeNull();
  });
});
