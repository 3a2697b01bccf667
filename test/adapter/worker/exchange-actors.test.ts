// The runtime's actors over the exchange client and undici's MockAgent: the lookup of a create in doubt (complete,
// format-aware, never adopting a sibling's order), the lease check as a request leaves, and the wait for calls in
// flight before a lease may be released.
import { afterEach, describe, expect, it } from 'vitest';
import type { CreateOrderInput } from '../../../machines/order-types.ts';
import { QuoteCooldown } from '../../../src/redis/quote-cooldown.ts';
import { useOwnRedis } from '../redis/redis-fixture.ts';
import type { CreatesInFlight } from '../../../src/redis/creates-in-flight.ts';
import type { ReferenceClaims } from '../../../src/redis/reference-claims.ts';
import {
  createExchangeActors,
  type ExchangeActorDeps,
  type OrderBarrier,
} from '../../../src/worker/exchange-actors.ts';
import {
  RecordingBudget,
  mockExchange,
  mockedClient,
  orderFixture,
  rateFixture,
  type MockExchange,
} from '../../support/exchange/mock-exchange.ts';

let exchange: MockExchange | undefined;
afterEach(async () => {
  await exchange?.agent.close();
  exchange = undefined;
});

const T = Date.parse('2026-11-22T06:00:00.000Z');
const address = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

const create: CreateOrderInput = {
  orderId: 'o-1',
  mode: 'cefi',
  attempt: 1,
  depositCurrency: 'BTC',
  withdrawCurrency: 'ETH',
  depositAmount: '0.1',
  withdrawAmount: null,
  withdrawAddress: address,
  withdrawAddressExtraId: null,
  refundAddress: null,
  refundAddressExtraId: null,
  referralCode: null,
  markup: null,
  side: null,
  rateId: null,
  isLimitOrder: false,
  limitTtlSeconds: null,
  userTimezone: null,
};

class MemoryClaims implements ReferenceClaims {
  readonly owners = new Map<string, string>();
  claim(reference: string, orderId: string): Promise<boolean> {
    const owner = this.owners.get(reference);
    if (owner === undefined) this.owners.set(reference, orderId);
    return Promise.resolve(owner === undefined || owner === orderId);
  }
  owner(reference: string): Promise<string | null> {
    return Promise.resolve(this.owners.get(reference) ?? null);
  }
}

/** The POSTs out right now, as Redis keeps them (create-in-flight-1.lua), on the test's clock. */
class MemoryInFlight implements CreatesInFlight {
  readonly marks = new Map<string, Map<string, number>>();
  readonly opened: string[] = [];
  readonly clock: () => number;
  constructor(clock: () => number = () => Date.now()) {
    this.clock = clock;
  }
  open(siblings: string, orderId: string, ttlMs: number): Promise<void> {
    this.opened.push(orderId);
    const marks = this.marks.get(siblings) ?? new Map<string, number>();
    marks.set(orderId, this.clock() + ttlMs);
    this.marks.set(siblings, marks);
    return Promise.resolve();
  }
  close(siblings: string, orderId: string): Promise<void> {
    this.marks.get(siblings)?.delete(orderId);
    return Promise.resolve();
  }
  othersOut(siblings: string, orderId: string): Promise<number> {
    let longest = 0;
    for (const [other, until] of this.marks.get(siblings) ?? [])
      if (other !== orderId) longest = Math.max(longest, until - this.clock());
    return Promise.resolve(longest);
  }
}

/** The actors as one order host sees them: built over the deps, fenced by the host's barrier. */
function fencedActors({ durable, mayAct, ownerOfReference, ...deps }: ExchangeActorDeps & OrderBarrier) {
  const calls = createExchangeActors(deps);
  return {
    ...calls.actors({ durable, mayAct, ownerOfReference }),
    inflight: calls.inflight,
    settled: calls.settled,
  };
}

function actors(overrides: Partial<ExchangeActorDeps & OrderBarrier> = {}) {
  exchange = mockExchange();
  const claims = new MemoryClaims();
  const deps: ExchangeActorDeps & OrderBarrier = {
    client: mockedClient(exchange),
    cooldown: {} as QuoteCooldown,
    durable: () => Promise.resolve(),
    mayAct: () => true,
    claims,
    inFlight: new MemoryInFlight(),
    ownerOfReference: () => undefined,
    now: () => T + 60_000,
    ...overrides,
  };
  return { exchange, claims, deps, actors: fencedActors(deps) };
}

/** A page of GET /orders/ (newest first), each order `minutesAgo` before T, with a `next` cursor when more follow. */
function page(entries: Array<Record<string, unknown>>, next: string | null) {
  return { results: entries, pagination: { next, previous: null } };
}
function order(ref: string, minutesAgo: number, overrides: Record<string, unknown> = {}) {
  return orderFixture({
    unique_reference: ref,
    created_on: new Date(T - minutesAgo * 60_000).toISOString(),
    deposit_amount: '0.10000000',
    withdraw_address: address,
    ...overrides,
  });
}
const signal = new AbortController().signal;

describe('exchange actors: the lookup of a create in doubt', () => {
  it('scans every page of the window (past five) before answering, and finds a match on page seven', async () => {
    const { exchange: ex, actors: a } = actors();
    for (let p = 0; p < 8; p++) {
      const entries = [
        order(`OTHER${p}`, -1, { withdraw_address: '0x0000000000000000000000000000000000000001' }),
      ];
      if (p === 6) entries.push(order('MINE', -1));
      ex.reply(
        'GET',
        p === 0 ? '/orders/' : `/orders/?cursor=c${p}`,
        200,
        page(entries, p < 7 ? `c${p + 1}` : null),
      );
    }
    const found = await a.findExistingOrder({ create, since: T }, signal);
    expect(found.order?.uniqueReference).toBe('MINE');
  });

  it('concludes "not created" only after the whole window: stops at a page entirely before it', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply('GET', '/orders/', 200, page([order('X1', -1, { deposit_amount: '0.2' })], 'c1'));
    ex.reply('GET', '/orders/?cursor=c1', 200, page([order('OLD', 10)], 'c2'));
    const found = await a.findExistingOrder({ create, since: T }, signal);
    expect(found.order).toBeNull();
    expect(ex.requests.map((r) => r.path)).toEqual(['/orders/', '/orders/?cursor=c1']);
  });

  it('matches an address the exchange stored in lower case (EVM); a base58 one in another case is a near match (parked), never "not created"', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply(
      'GET',
      '/orders/',
      200,
      page([order('LOWER', -1, { withdraw_address: address.toLowerCase() })], null),
    );
    expect((await a.findExistingOrder({ create, since: T }, signal)).order?.uniqueReference).toBe('LOWER');
    await ex.agent.close();
    const base58 = '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2';
    const second = actors();
    second.exchange.reply(
      'GET',
      '/orders/',
      200,
      page([order('CASE', -1, { withdraw_address: base58.toLowerCase() })], null),
    );
    // Not ours (case changes a base58 address), and not proof that ours is absent either.
    await expect(
      second.actors.findExistingOrder({ create: { ...create, withdrawAddress: base58 }, since: T }, signal),
    ).rejects.toMatchObject({ action: 'fatal', code: 'lookup_near_match' });
  });

  it('never adopts an exchange order that a sibling order already owns (durably or by claim)', async () => {
    const {
      exchange: ex,
      actors: a,
      claims,
    } = actors({
      // null: an order of a partition this replica does not own records ELSEWHERE (its id is not held here).
      ownerOfReference: (ref) =>
        ref === 'SIBLING1' ? 'o-sibling-1' : ref === 'ELSEWHERE' ? null : undefined,
    });
    claims.owners.set('SIBLING2', 'o-sibling-2');
    ex.reply(
      'GET',
      '/orders/',
      200,
      // Oldest first: each taken one is asked before the free one, created last.
      page([order('SIBLING1', -1), order('SIBLING2', -2), order('ELSEWHERE', -3), order('FREE', -4)], null),
    );
    const found = await a.findExistingOrder({ create, since: T }, signal);
    expect(found.order?.uniqueReference).toBe('FREE');
    expect(claims.owners.get('FREE')).toBe('o-1');
  });

  it('says once that it can never finish (never "not found") when the pages do not end before the window', async () => {
    const { exchange: ex } = actors();
    const told: string[] = [];
    const a = fencedActors({
      client: mockedClient(ex),
      cooldown: {} as QuoteCooldown,
      durable: () => Promise.resolve(),
      mayAct: () => true,
      claims: new MemoryClaims(),
      inFlight: new MemoryInFlight(),
      ownerOfReference: () => undefined,
      now: () => T,
      maxLookupPages: 3,
      onCreateDoubt: (doubt) => void told.push(doubt.kind),
    });
    ex.reply(
      'GET',
      (p) => p.startsWith('/orders/'),
      200,
      page([order('X', -1, { deposit_amount: '9' })], 'again'),
      {
        times: 3,
      },
    );
    // The listing only grows: a window past the cap now is past it for good, so it is not retried (item 6).
    await expect(a.findExistingOrder({ create, since: T }, signal)).rejects.toMatchObject({
      action: 'fatal',
      code: 'lookup_unreachable',
    });
    expect(told).toEqual(['lookup_unreachable']);
  });
});

describe('exchange actors: fencing money-moving calls', () => {
  it('sends nothing when the lease is no longer ours as the request leaves', async () => {
    let ours = true;
    const { exchange: ex, actors: a } = actors({
      durable: () => {
        ours = false; // the lease is lost while waiting for durability and the budget
        return Promise.resolve();
      },
      mayAct: () => ours,
    });
    ex.reply('POST', '/orders/', 201, order('NEW', 0));
    await expect(a.createOrder(create, signal)).rejects.toMatchObject({
      code: 'not_owner',
      action: 'backoff',
    });
    expect(ex.requests).toHaveLength(0);
  });

  it('checks the lease again as the POST is written, after it passed the check before the pool', async () => {
    // The first check (after durability and the budget) passes; the second, undici's request start just before
    // the bytes are written, finds the lease lapsed (a replica that stalled while its request waited for a
    // connection): nothing is sent.
    let checks = 0;
    const { exchange: ex, actors: a } = actors({ mayAct: () => ++checks === 1 });
    ex.reply('POST', '/orders/', 201, order('NEW', 0));
    await expect(a.createOrder(create, signal)).rejects.toMatchObject({
      code: 'not_owner',
      action: 'backoff',
    });
    // (MockAgent records a request as it matches it, before the request-start hook: that nothing reaches a real
    // socket is shown by test/adapter/exchange/fence-at-send.test.ts.)
    expect(checks).toBe(2);
  });

  it('reports a 503 answer to the create as unknown_outcome, and claims the reference of a created order', async () => {
    const { exchange: ex, actors: a, claims } = actors();
    ex.reply('POST', '/orders/', 503, { detail: 'Service Unavailable' });
    await expect(a.createOrder(create, signal)).rejects.toMatchObject({ action: 'unknown_outcome' });
    ex.reply('POST', '/orders/', 201, order('NEW', 0));
    ex.reply('GET', '/orders/NEW/', 200, order('NEW', 0, { deposit_address: 'confirmed-address' }));
    const created = await a.createOrder(create, signal);
    expect(claims.owners.get('NEW')).toBe('o-1');
    // What is published is what the confirming GET read.
    expect(created.order.depositAddress).toBe('confirmed-address');
    expect(ex.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /orders/',
      'POST /orders/',
      'GET /orders/NEW/',
    ]);
  });

  it('settled() waits for a POST in flight (bounded), so a lease is never released under it', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply('POST', '/orders/', 201, order('SLOW', 0), { delayMs: 300 });
    ex.reply('GET', '/orders/SLOW/', 200, order('SLOW', 0));
    const started = Date.now();
    const call = a.createOrder(create, signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.settled('o-1', 5_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await expect(call).resolves.toMatchObject({ order: { uniqueReference: 'SLOW' } });
    const bounded = Date.now();
    ex.reply('POST', '/orders/', 201, order('SLOWER', 0), { delayMs: 2_000 });
    ex.reply('GET', '/orders/SLOWER/', 200, order('SLOWER', 0));
    const slower = a.createOrder(create, signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.settled('o-1', 100);
    expect(Date.now() - bounded).toBeLessThan(1_500);
    await slower;
  });

  it('adopts only an exchange order that matches and that no other order owns', async () => {
    const { exchange: ex, actors: a, claims } = actors();
    claims.owners.set('TAKEN', 'o-2');
    ex.reply('GET', '/orders/OTHERPAIR/', 200, order('OTHERPAIR', 0, { deposit_currency: 'LTC' }));
    ex.reply('GET', '/orders/TAKEN/', 200, order('TAKEN', 0));
    ex.reply('GET', '/orders/GOOD/', 200, order('GOOD', 0));
    await expect(a.adoptOrder({ create, uniqueReference: 'OTHERPAIR' }, signal)).rejects.toMatchObject({
      code: 'adopt_mismatch',
    });
    await expect(a.adoptOrder({ create, uniqueReference: 'TAKEN' }, signal)).rejects.toMatchObject({
      code: 'reference_owned',
    });
    await expect(a.adoptOrder({ create, uniqueReference: 'GOOD' }, signal)).resolves.toMatchObject({
      order: { uniqueReference: 'GOOD' },
    });
  });
});

describe("exchange actors: the machine's status GET", () => {
  const fetchInput = { orderId: 'o-1', mode: 'cefi' as const, uniqueReference: 'LIVE1' };

  it("leaves without waiting for the order's writes (a read moves nothing), while a POST waits for them", async () => {
    // The order's last change is still being committed (its durability never settles here).
    let durableAsked = 0;
    const { exchange: ex, actors: a } = actors({
      durable: () => {
        durableAsked++;
        return new Promise<void>(() => {});
      },
    });
    ex.reply('GET', '/orders/LIVE1/', 200, order('LIVE1', 5));
    const waited = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1_000));
    await expect(Promise.race([a.fetchOrder(fetchInput, signal), waited])).resolves.toMatchObject({
      order: { uniqueReference: 'LIVE1' },
      at: T + 60_000,
    });
    expect(durableAsked).toBe(0);
    ex.reply('POST', '/orders/', 201, order('NEW', 0));
    void a.createOrder(create, signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(durableAsked).toBe(1);
    expect(ex.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /orders/LIVE1/']);
  });

  it('sends nothing once the lease is no longer ours, and counts as a call of the order until it ends', async () => {
    let ours = false;
    const { exchange: ex, actors: a } = actors({ mayAct: () => ours });
    await expect(a.fetchOrder(fetchInput, signal)).rejects.toMatchObject({
      code: 'not_owner',
      action: 'backoff',
      at: T + 60_000,
    });
    expect(ex.requests).toHaveLength(0);
    ours = true;
    ex.reply('GET', '/orders/LIVE1/', 200, order('LIVE1', 5), { delayMs: 50 });
    const call = a.fetchOrder(fetchInput, signal);
    expect(a.inflight()).toBe(1);
    await call;
    expect(a.inflight()).toBe(0);
  });
});

describe('exchange actors: a deposit hash the exchange already knows', () => {
  const deposit = { orderId: 'o-1', mode: 'cefi' as const, uniqueReference: 'R1', txHash: '0xABCDEF01' };
  const known = { detail: 'External deposit notification with tx_id 0xABCDEF01already exists' };

  it('is success when this order carries the hash (confirmed with a GET)', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply('PATCH', '/orders/R1/', 400, known);
    ex.reply('GET', '/orders/R1/', 200, order('R1', 0, { deposit_transaction: '0xabcdef01' }));
    await expect(a.submitDeposit(deposit, signal)).resolves.toMatchObject({ alreadyRecorded: true });
  });

  it('is a specific refusal when the hash belongs to another order', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply('PATCH', '/orders/R1/', 400, known);
    ex.reply('GET', '/orders/R1/', 200, order('R1', 0, { deposit_transaction: '' }));
    await expect(a.submitDeposit(deposit, signal)).rejects.toMatchObject({
      action: 'fatal',
      code: 'deposit_hash_on_another_order',
    });
  });
});

describe('exchange actors: order.created is confirmed by a GET', () => {
  it('leaves the create in doubt (unknown_outcome) when the confirming GET fails, having claimed the reference', async () => {
    const { exchange: ex, actors: a, claims } = actors();
    ex.reply('POST', '/orders/', 201, order('UNCONFIRMED', 0));
    ex.reply('GET', '/orders/UNCONFIRMED/', 404, { detail: 'Not found.' });
    await expect(a.createOrder(create, signal)).rejects.toMatchObject({
      action: 'unknown_outcome',
      code: 'create_unconfirmed',
    });
    expect(claims.owners.get('UNCONFIRMED')).toBe('o-1');
    // The lookup that follows finds that order and may adopt it: it is this order's own claim.
    ex.reply('GET', '/orders/', 200, page([order('UNCONFIRMED', -1)], null));
    await expect(a.findExistingOrder({ create, since: T }, signal)).resolves.toMatchObject({
      order: { uniqueReference: 'UNCONFIRMED' },
    });
  });
});

describe('exchange actors: the actionable-quote cooldown, between requests as the exchange sees them', () => {
  const redis = useOwnRedis();
  const quote = {
    orderId: 'o-q',
    mode: 'defi' as const,
    pair: 'ETHUSDT',
    depositCurrency: 'USDT',
    withdrawCurrency: 'ETH',
    depositAmount: '100',
    withdrawAmount: null,
    markup: null,
    referralCode: null,
    actionable: true,
  };

  it('never repeats an actionable quote inside the client, and counts the window from the completed request', async () => {
    const cooldown = new QuoteCooldown(await redis.client({ keyPrefix: redis.prefix() }));
    const { exchange: ex, actors: a } = actors({ cooldown, now: () => Date.now() });
    const arrivals: number[] = [];
    ex.reply('GET', (p) => p.startsWith('/rate/?'), 503, { detail: 'busy' });
    ex.reply('GET', (p) => p.startsWith('/rate/?'), 200, [
      { ...rateFixture(), pair: 'ETHUSDT', expiration_time_unix: String(Math.floor(Date.now() / 1000) + 60) },
    ]);
    const windowMs = 400;
    expect(await a.acquireQuoteSlot({ ...quote, cooldownMs: windowMs }, signal)).toMatchObject({
      granted: true,
    });
    await expect(a.requestQuote(quote, signal)).rejects.toMatchObject({ code: 'http_503' });
    const firstDone = Date.now();
    arrivals.push(ex.requests.length);
    expect(ex.requests).toHaveLength(1); // no 100-200 ms retry inside the 15 s window
    const refused = await a.acquireQuoteSlot({ ...quote, cooldownMs: windowMs }, signal);
    expect(refused.granted).toBe(false);
    if (refused.granted) return;
    expect(refused.retryAt).toBeGreaterThanOrEqual(firstDone + windowMs - 50);
    await new Promise((resolve) => setTimeout(resolve, refused.retryAt - Date.now() + 5));
    expect(await a.acquireQuoteSlot({ ...quote, cooldownMs: windowMs }, signal)).toMatchObject({
      granted: true,
    });
    const secondSent = Date.now();
    const second = await a.requestQuote(quote, signal);
    expect(typeof second.rate).toBe('string');
    expect(secondSent - firstDone).toBeGreaterThanOrEqual(windowMs - 50);
  });

  it('holds an identical request from another order while a granted one waits to leave, and refuses it at the door', async () => {
    const prefix = redis.prefix();
    const first = actors({ cooldown: new QuoteCooldown(await redis.client({ keyPrefix: prefix })) });
    const second = fencedActors({
      client: mockedClient(first.exchange),
      cooldown: new QuoteCooldown(await redis.client({ keyPrefix: prefix })),
      durable: () => Promise.resolve(),
      mayAct: () => true,
      claims: new MemoryClaims(),
      inFlight: new MemoryInFlight(),
      ownerOfReference: () => undefined,
      now: () => Date.now(),
    });
    expect(await first.actors.acquireQuoteSlot({ ...quote, cooldownMs: 400 }, signal)).toMatchObject({
      granted: true,
    });
    // The slot is held while the first request has not left yet: the other replica may not take it.
    const other = await second.acquireQuoteSlot({ ...quote, orderId: 'o-other', cooldownMs: 400 }, signal);
    expect(other.granted).toBe(false);
    await expect(second.requestQuote({ ...quote, orderId: 'o-other' }, signal)).rejects.toMatchObject({
      code: 'quote_cooldown',
    });
    expect(first.exchange.requests).toHaveLength(0);
  });
});

describe("exchange actors: a resting order's routine poll, made by the host", () => {
  function resting() {
    exchange = mockExchange();
    const budget = new RecordingBudget();
    const calls = createExchangeActors({
      client: mockedClient(exchange, { budget }),
      cooldown: {} as QuoteCooldown,
      claims: new MemoryClaims(),
      inFlight: new MemoryInFlight(),
      now: () => T + 60_000,
    });
    return { ex: exchange, budget, calls };
  }
  const input = { orderId: 'o-1', mode: 'cefi' as const, uniqueReference: 'REST1' };

  it('GETs the order at the lowest priority with no lease or durability wait, counted as a call of the order', async () => {
    const { ex, budget, calls } = resting();
    ex.reply('GET', '/orders/REST1/', 200, order('REST1', 5), { delayMs: 50 });
    const poll = calls.pollResting(input, () => {}, signal);
    expect(calls.busy('o-1')).toBe(true);
    expect(calls.inflight()).toBe(1);
    await expect(poll).resolves.toMatchObject({ order: { uniqueReference: 'REST1' }, at: T + 60_000 });
    expect(calls.busy('o-1')).toBe(false);
    expect(calls.inflight()).toBe(0);
    expect(budget.acquired.map((a) => a.priority)).toEqual(['low']);
  });

  it('sends nothing once the order no longer rests, and hands a failure over as the machine would get it', async () => {
    const { ex, calls } = resting();
    const woken = new Error('order o-1 no longer rests here');
    await expect(
      calls.pollResting(
        input,
        () => {
          throw woken;
        },
        signal,
      ),
    ).rejects.toMatchObject({ kind: 'exchange_failure', at: T + 60_000 });
    expect(ex.requests).toHaveLength(0);
    ex.reply('GET', '/orders/REST1/', 503, { detail: 'Service Unavailable' }, { times: 3 });
    await expect(calls.pollResting(input, () => {}, signal)).rejects.toMatchObject({
      kind: 'exchange_failure',
      action: 'backoff',
      at: T + 60_000,
    });
  });
});

describe('exchange actors: status reads out at once are bounded', () => {
  it('refuses a status read beyond maxStatusReads at once, as throttled, sends nothing for it, and takes reads again as they end', async () => {
    exchange = mockExchange();
    let refused = 0;
    const calls = createExchangeActors({
      client: mockedClient(exchange),
      cooldown: {} as QuoteCooldown,
      claims: new MemoryClaims(),
      inFlight: new MemoryInFlight(),
      now: () => T + 60_000,
      maxStatusReads: 2,
      onStatusReadRefused: () => void refused++,
    });
    const live = calls.actors({
      durable: () => Promise.resolve(),
      mayAct: () => true,
      ownerOfReference: () => undefined,
    });
    exchange.reply('GET', '/orders/A/', 200, order('A', 5), { delayMs: 100 });
    exchange.reply('GET', '/orders/B/', 200, order('B', 5), { delayMs: 100 });
    exchange.reply('GET', '/orders/C/', 200, order('C', 5));
    // One poll made at rest and one by a live machine take the two places; a third read of either kind is refused.
    const atRest = calls.pollResting(
      { orderId: 'o-a', mode: 'cefi', uniqueReference: 'A' },
      () => {},
      signal,
    );
    const polled = live.fetchOrder({ orderId: 'o-b', mode: 'cefi', uniqueReference: 'B' }, signal);
    await expect(
      live.fetchOrder({ orderId: 'o-c', mode: 'cefi', uniqueReference: 'C' }, signal),
    ).rejects.toMatchObject({
      kind: 'exchange_failure',
      action: 'throttled',
      code: 'status_reads_at_capacity',
      at: T + 60_000,
    });
    await expect(
      calls.pollResting({ orderId: 'o-c', mode: 'cefi', uniqueReference: 'C' }, () => {}, signal),
    ).rejects.toMatchObject({ action: 'throttled', code: 'status_reads_at_capacity' });
    expect(refused).toBe(2);
    await expect(atRest).resolves.toMatchObject({ order: { uniqueReference: 'A' } });
    await expect(polled).resolves.toMatchObject({ order: { uniqueReference: 'B' } });
    expect(exchange.requests.map((r) => r.path)).toEqual(['/orders/A/', '/orders/B/']);
    // The places came back as the reads ended.
    await expect(
      live.fetchOrder({ orderId: 'o-c', mode: 'cefi', uniqueReference: 'C' }, signal),
    ).resolves.toMatchObject({ order: { uniqueReference: 'C' } });
    expect(calls.inflight()).toBe(0);
  });
});

describe('exchange actors: a claim the create honours (issue 50, item 1)', () => {
  it("never publishes a created order that another order's lookup took first: in doubt, with the reference", async () => {
    const doubts: string[] = [];
    const { exchange: ex, actors: a, claims } = actors({ onCreateDoubt: (d) => void doubts.push(d.kind) });
    claims.owners.set('NEW', 'o-sibling');
    ex.reply('POST', '/orders/', 201, order('NEW', 0));
    ex.reply('GET', '/orders/NEW/', 200, order('NEW', 0));
    await expect(a.createOrder(create, signal)).rejects.toMatchObject({
      action: 'unknown_outcome',
      code: 'created_order_claimed_elsewhere',
      evidence: { uniqueReference: 'NEW', claim: 'another_order', created: true },
    });
    expect(claims.owners.get('NEW')).toBe('o-sibling');
    expect(doubts).toEqual(['claimed_elsewhere']);
  });

  it('leaves the create in doubt, not created, when its claim cannot be confirmed (Redis down)', async () => {
    const claims = new MemoryClaims();
    claims.claim = () => Promise.reject(new Error('redis unreachable: Command timed out'));
    const { exchange: ex, actors: a } = actors({ claims });
    ex.reply('POST', '/orders/', 201, order('NEW', 0));
    ex.reply('GET', '/orders/NEW/', 200, order('NEW', 0));
    await expect(a.createOrder(create, signal)).rejects.toMatchObject({
      action: 'unknown_outcome',
      code: 'create_claim_unconfirmed',
      evidence: { uniqueReference: 'NEW', claim: 'unconfirmed', created: true },
    });
  });

  it("takes a 200 reuse answering a first POST for another order's order (no claim), and one repeating a doubt for its own", async () => {
    const { exchange: ex, actors: a, claims } = actors();
    const defi = { ...create, mode: 'defi' as const, rateId: 'rate-1' };
    ex.reply('POST', '/orders/', 200, order('SOMEONES', 0));
    ex.reply('GET', '/orders/SOMEONES/', 200, order('SOMEONES', 0));
    await expect(a.createOrder(defi, signal)).rejects.toMatchObject({
      action: 'unknown_outcome',
      code: 'reused_foreign_order',
      evidence: { uniqueReference: 'SOMEONES', claim: 'another_order', created: false },
    });
    expect(claims.owners.has('SOMEONES')).toBe(false);
    // Nor is it taken by a repeat of that doubt: the doubt remembers it is another order's.
    ex.reply('POST', '/orders/', 200, order('SOMEONES', 0));
    await expect(
      a.createOrder({ ...defi, attempt: 2, repeatsDoubt: true, foreignReferences: ['SOMEONES'] }, signal),
    ).rejects.toMatchObject({ code: 'reused_foreign_order' });
    // A repeat of a doubt answered with a reuse is this order's own first POST.
    ex.reply('POST', '/orders/', 200, order('MINE', 0));
    ex.reply('GET', '/orders/MINE/', 200, order('MINE', 0));
    await expect(a.createOrder({ ...defi, attempt: 2, repeatsDoubt: true }, signal)).resolves.toMatchObject({
      order: { uniqueReference: 'MINE' },
      reused: true,
    });
    expect(claims.owners.get('MINE')).toBe('o-1');
  });

  it("takes no order a sibling's POST still out may be about to claim; the sibling claims and publishes it alone", async () => {
    exchange = mockExchange();
    const claims = new MemoryClaims();
    const inFlight = new MemoryInFlight();
    const shared = {
      client: mockedClient(exchange),
      cooldown: {} as QuoteCooldown,
      durable: () => Promise.resolve(),
      mayAct: () => true,
      claims,
      inFlight,
      ownerOfReference: () => undefined,
      now: () => T + 60_000,
    };
    const lookup = fencedActors(shared); // o-1, in doubt
    const sibling = fencedActors(shared); // o-2: same pair, address and amount
    exchange.reply('POST', '/orders/', 201, order('SIBLINGS', 0), { delayMs: 300 });
    exchange.reply('GET', '/orders/SIBLINGS/', 200, order('SIBLINGS', 0));
    exchange.reply('GET', '/orders/', 200, page([order('SIBLINGS', 0)], null), { times: 2 });
    const posting = sibling.createOrder({ ...create, orderId: 'o-2' }, signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The sibling's order is already listed, its POST's answer not back yet.
    const first = await lookup.findExistingOrder({ create, since: T }, signal);
    expect(first.order).toBeNull();
    expect(first.recheckAt).toBeGreaterThan(T + 60_000);
    expect(claims.owners.has('SIBLINGS')).toBe(false);
    await expect(posting).resolves.toMatchObject({ order: { uniqueReference: 'SIBLINGS' } });
    expect(claims.owners.get('SIBLINGS')).toBe('o-2');
    expect(inFlight.marks.get([...inFlight.marks.keys()][0] ?? '')?.size ?? 0).toBe(0);
    // Looked up again: the sibling's, not ours, and nothing else is there.
    const second = await lookup.findExistingOrder({ create, since: T }, signal);
    expect(second).toMatchObject({ order: null });
    expect(second.recheckAt).toBeUndefined();
  });
});

describe('exchange actors: "not created" only when nothing even nearly matches (issue 50, item 2)', () => {
  const precise = { ...create, depositAmount: '0.123456789012345678' };

  it('finds its 18-decimal order stored with 8 decimals (rounded or cut)', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply('GET', '/orders/', 200, page([order('ROUNDED', -1, { deposit_amount: '0.12345679' })], null));
    await expect(a.findExistingOrder({ create: precise, since: T }, signal)).resolves.toMatchObject({
      order: { uniqueReference: 'ROUNDED' },
    });
    await ex.agent.close();
    const again = actors();
    again.exchange.reply(
      'GET',
      '/orders/',
      200,
      page([order('CUT', -1, { deposit_amount: '0.12345678' })], null),
    );
    await expect(
      again.actors.findExistingOrder({ create: precise, since: T }, signal),
    ).resolves.toMatchObject({ order: { uniqueReference: 'CUT' } });
  });

  it('parks on a near match nobody claimed (an amount just beyond rounding, an extra id we never sent)', async () => {
    const doubts: string[] = [];
    const { exchange: ex, actors: a } = actors({ onCreateDoubt: (d) => void doubts.push(d.kind) });
    ex.reply('GET', '/orders/', 200, page([order('NEAR', -1, { deposit_amount: '0.12345690' })], null));
    await expect(a.findExistingOrder({ create: precise, since: T }, signal)).rejects.toMatchObject({
      action: 'fatal',
      code: 'lookup_near_match',
    });
    ex.reply('GET', '/orders/', 200, page([order('MEMO', -1, { withdraw_address_extra_id: '777' })], null));
    await expect(a.findExistingOrder({ create, since: T }, signal)).rejects.toMatchObject({
      code: 'lookup_near_match',
    });
    expect(doubts).toEqual(['near_match', 'near_match']);
  });

  it('concludes "not created" past a near match that another order claimed (it is explained)', async () => {
    const { exchange: ex, actors: a, claims } = actors();
    claims.owners.set('NEAR', 'o-sibling');
    ex.reply('GET', '/orders/', 200, page([order('NEAR', -1, { deposit_amount: '0.12345690' })], null));
    await expect(a.findExistingOrder({ create: precise, since: T }, signal)).resolves.toMatchObject({
      order: null,
    });
  });

  it('lets an operator adopt an order stored with 8 decimals, never one with another extra id', async () => {
    const { exchange: ex, actors: a } = actors();
    ex.reply('GET', '/orders/STORED/', 200, order('STORED', 0, { deposit_amount: '0.12345679' }));
    ex.reply('GET', '/orders/MEMO/', 200, order('MEMO', 0, { withdraw_address_extra_id: '777' }));
    await expect(a.adoptOrder({ create: precise, uniqueReference: 'STORED' }, signal)).resolves.toMatchObject(
      { order: { uniqueReference: 'STORED' } },
    );
    await expect(a.adoptOrder({ create, uniqueReference: 'MEMO' }, signal)).rejects.toMatchObject({
      code: 'adopt_mismatch',
    });
  });
});

describe('exchange actors: the lookup of a parked order, and the reference an order knows (issue 50, items 6, 7)', () => {
  it('asks for the reference the order already knows, not the oldest candidate', async () => {
    const { exchange: ex, actors: a, claims } = actors();
    claims.owners.set('MINE', 'o-1'); // claimed by its own POST, whose confirming GET failed
    ex.reply('GET', '/orders/', 200, page([order('MINE', -2), order('OLDER', -1)], null));
    ex.reply('GET', '/orders/MINE/', 200, order('MINE', -2));
    await expect(
      a.findExistingOrder({ create: { ...create, knownReference: 'MINE' }, since: T }, signal),
    ).resolves.toMatchObject({ order: { uniqueReference: 'MINE' } });
    expect(claims.owners.has('OLDER')).toBe(false);
  });

  it('never concludes "not created" when its POST made an order another order holds', async () => {
    const { exchange: ex, actors: a, claims } = actors();
    claims.owners.set('MADE', 'o-sibling');
    ex.reply('GET', '/orders/', 200, page([order('MADE', -1)], null));
    await expect(
      a.findExistingOrder({ create: { ...create, knownReference: 'MADE' }, since: T }, signal),
    ).rejects.toMatchObject({ action: 'fatal', code: 'created_order_claimed_elsewhere' });
  });

  it("runs a parked order's lookup at low priority within the parked lookups' share", async () => {
    exchange = mockExchange();
    const budget = new RecordingBudget();
    const a = fencedActors({
      client: mockedClient(exchange, { budget }),
      cooldown: {} as QuoteCooldown,
      durable: () => Promise.resolve(),
      mayAct: () => true,
      claims: new MemoryClaims(),
      inFlight: new MemoryInFlight(),
      ownerOfReference: () => undefined,
      now: () => T + 60_000,
    });
    exchange.reply('GET', '/orders/', 200, page([], null), { times: 2 });
    await a.findExistingOrder({ create, since: T, parked: true }, signal);
    await a.findExistingOrder({ create, since: T }, signal);
    expect(budget.acquired.map(({ priority, share }) => [priority, share])).toEqual([
      ['low', 'parked_lookup'],
      ['high', undefined],
    ]);
  });
});
