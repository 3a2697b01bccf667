// The CeFi listing of several replicas sharing one walk per interval through a real Redis (ListingShare): one
// replica walks, every replica gets the rows of its own orders, nobody walks again before the interval has passed,
// nobody walks while another walk is under way, and without Redis each replica walks on its own as before.
import { describe, expect, it } from 'vitest';
import { ListingShare, listingKeys } from '../../../src/redis/listing-share.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { CefiListing, type ListedMode } from '../../../src/worker/cefi-listing.ts';
import { fakeExchange, fakeHost } from '../../support/listing-fakes.ts';
import { useOwnRedis } from '../redis/redis-fixture.ts';

const redis = useOwnRedis();
const logger = createLogger({ level: 'silent', workerId: 'test' });
const intervalMs = 30_000;

/** Six CeFi orders in two statuses, three driven by each of two replicas. */
function twoReplicas(prefix: string) {
  const exchange = fakeExchange({
    cefi: [
      { reference: 'A1', status: 'INITIAL' },
      { reference: 'B1', status: 'INITIAL' },
      { reference: 'A2', status: 'INITIAL' },
      { reference: 'B2', status: 'PAID' },
      { reference: 'A3', status: 'PAID' },
      { reference: 'B3', status: 'UNCONFIRMED PAYMENT' },
    ],
  });
  let skew = 0;
  const now = (): number => exchange.now() + skew;
  const replica = async (local: Record<string, string>) => {
    const host = fakeHost(local, ['cefi'] satisfies ListedMode[]);
    const share = new ListingShare(await redis.client({ keyPrefix: prefix }), { intervalMs });
    const listing = new CefiListing({
      source: exchange.source,
      target: host.target,
      modes: ['cefi'],
      intervalMs,
      now,
      logger,
      share,
    });
    return { host, listing, share };
  };
  return {
    exchange,
    replica,
    now,
    /** Moves the replicas' clock on (the exchange's own moves 10 ms a page). */
    later: (ms: number) => void (skew += ms),
  };
}

describe('CeFi listing shared between replicas', () => {
  it('makes one walk per interval for all replicas, each taking the rows of its own orders', async () => {
    const setup = twoReplicas(redis.prefix());
    const a = await setup.replica({ A1: 'INITIAL', A2: 'INITIAL', A3: 'PAID' });
    const b = await setup.replica({ B1: 'INITIAL', B2: 'PAID', B3: 'UNCONFIRMED PAYMENT' });

    const first = await a.listing.round();
    const walked = setup.exchange.requests.length;
    expect(walked).toBeGreaterThan(0);
    expect(first.outcomes.confirmed).toBe(3);
    const walkedAt = new Map(a.host.delivered.map((row) => [row.uniqueReference, row.at]));

    // The other replica asks the exchange nothing: its orders' rows come from the walk, stamped as the walker read
    // them (the status of each as the page showed it).
    const second = await b.listing.round();
    expect(setup.exchange.requests).toHaveLength(walked);
    expect(second.sharedRows).toBe(3);
    expect(second.outcomes).toMatchObject({ confirmed: 3, differed: 0, not_here: 0 });
    expect(b.host.delivered.map((row) => [row.uniqueReference, row.status, row.at]).sort()).toEqual([
      ['B1', 'INITIAL', walkedAt.get('B1')],
      ['B2', 'PAID', walkedAt.get('B2')],
      ['B3', 'UNCONFIRMED PAYMENT', walkedAt.get('B3')],
    ]);

    // Within the interval nobody walks again, and a walk's rows are taken once.
    setup.later(20_000);
    await a.listing.round();
    const again = await b.listing.round();
    expect(setup.exchange.requests).toHaveLength(walked);
    expect(again.sharedRows).toBe(0);
    expect(b.host.delivered).toHaveLength(3);

    // Once it has passed, the first replica to look walks (here the other one), and the first takes its rows.
    setup.later(10_000);
    const next = await b.listing.round();
    expect(setup.exchange.requests).toHaveLength(2 * walked);
    expect(next.sharedRows).toBe(0);
    const taken = await a.listing.round();
    expect(setup.exchange.requests).toHaveLength(2 * walked);
    expect(taken.sharedRows).toBe(3);
    expect(a.host.delivered).toHaveLength(6 + 3);
  });

  it('does not walk while another replica is walking, nor take the rows of a walk not ended', async () => {
    const prefix = redis.prefix();
    const setup = twoReplicas(prefix);
    const b = await setup.replica({ B1: 'INITIAL' });
    const elsewhere = new ListingShare(await redis.client({ keyPrefix: prefix }), { intervalMs });
    const claim = await elsewhere.claim('cefi');
    expect(claim).not.toBeNull();
    await elsewhere.record('cefi', claim?.walk ?? '', [{ uniqueReference: 'B1', status: 'INITIAL', at: 5 }]);

    const waiting = await b.listing.round();
    expect(waiting.walkedElsewhere).toEqual(['cefi']);
    expect(waiting.sharedRows).toBe(0);
    expect(setup.exchange.requests).toHaveLength(0);

    await elsewhere.complete('cefi', claim?.walk ?? '', setup.exchange.now(), claim?.token ?? '');
    const taken = await b.listing.round();
    expect(taken.sharedRows).toBe(1);
    expect(b.host.delivered).toEqual([{ uniqueReference: 'B1', status: 'INITIAL', at: 5 }]);
    expect(setup.exchange.requests).toHaveLength(0);
  });

  it('takes the rows of a walk that lasted longer than the interval, and walks next as it is due', async () => {
    const prefix = redis.prefix();
    const setup = twoReplicas(prefix);
    const b = await setup.replica({ B1: 'INITIAL' });
    const elsewhere = new ListingShare(await redis.client({ keyPrefix: prefix }), { intervalMs });
    const claim = await elsewhere.claim('cefi');
    await elsewhere.record('cefi', claim?.walk ?? '', [{ uniqueReference: 'B1', status: 'INITIAL', at: 5 }]);
    // Started 40 s ago (the budget was tight), ended now.
    await elsewhere.complete('cefi', claim?.walk ?? '', setup.now() - 40_000, claim?.token ?? '');
    const round = await b.listing.round();
    expect(round.sharedRows).toBe(1);
    expect(b.host.delivered[0]).toEqual({ uniqueReference: 'B1', status: 'INITIAL', at: 5 });
    expect(setup.exchange.requests.length).toBeGreaterThan(0);
  });

  it('walks again once a walker that stopped answering let its claim lapse', async () => {
    const prefix = redis.prefix();
    const setup = twoReplicas(prefix);
    const b = await setup.replica({ B1: 'INITIAL' });
    const short = new ListingShare(await redis.client({ keyPrefix: prefix }), { intervalMs: 200 });
    expect(await short.claim('cefi')).not.toBeNull();
    expect((await b.listing.round()).walkedElsewhere).toEqual(['cefi']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const walked = await b.listing.round();
    expect(walked.walkedElsewhere).toEqual([]);
    expect(setup.exchange.requests.length).toBeGreaterThan(0);
    expect(b.host.delivered.map((row) => row.uniqueReference)).toContain('B1');
  });

  it('walks on its own when Redis does not answer, as without a share', async () => {
    const setup = twoReplicas(redis.prefix());
    const host = fakeHost({ A1: 'INITIAL' }, ['cefi']);
    const client = await redis.client({ commandTimeoutMs: 200 });
    const listing = new CefiListing({
      source: setup.exchange.source,
      target: host.target,
      modes: ['cefi'],
      intervalMs,
      now: setup.now,
      logger,
      share: new ListingShare(client, { intervalMs }),
    });
    await redis.server().stop();
    const round = await listing.round();
    const walked = setup.exchange.requests.length;
    expect(walked).toBeGreaterThan(0);
    expect(round.outcomes.confirmed).toBe(1);
    // Rounds come every few seconds with a share; alone, it still walks once an interval at most.
    await listing.round();
    expect(setup.exchange.requests).toHaveLength(walked);
    setup.later(intervalMs);
    await listing.round();
    expect(setup.exchange.requests).toHaveLength(2 * walked);
  });

  it("keeps a mode's keys in one Cluster slot", () => {
    const keys = listingKeys('cefi_fixed');
    for (const key of [keys.walking, keys.latest, keys.rows('w1')]) expect(key).toContain('{cefi_fixed}');
  });
});
