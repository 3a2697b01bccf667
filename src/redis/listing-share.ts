// One walk of the CeFi listing per interval for all replicas of a deployment, shared through Redis. GET /orders/
// lists every CeFi order of the API key, whichever replica drives it: when each replica walked the whole listing
// for its own orders, R replicas spent R times the requests of one (at 10,000 open CeFi orders and 20 rows a page,
// 3 replicas asked about 3,000 pages a minute of a key allowed 2,500 requests a minute). Now the replica that finds
// the mode's last walk older than the interval claims the next one (a key set NX with the interval as its expiry,
// renewed while it walks), writes every page's rows into a hash of that walk as it goes, and names the walk the
// latest once it has ended; every other replica takes the rows of its own orders from that hash (HMGET) once it
// sees the new walk. A row taken this way is what the walker read, stamped with the time its page left, and is
// treated exactly as one read here (the machine never believes a row: another status is a GET of the order).
// Redis failing costs the sharing, not the listing: the caller then walks on its own (src/worker/cefi-listing.ts).
// Keys (the deployment prefix added by the client), one hash tag per mode so a mode's keys share a Cluster slot:
//   cefi-listing:{<mode>}:walking     the walker's token, expires after the interval unless renewed
//   cefi-listing:{<mode>}:latest      "<walk id> <started at ms>" of the last walk that ended
//   cefi-listing:{<mode>}:rows:<walk> unique_reference -> "<at ms> <status>", expires after three intervals
import { randomUUID } from 'node:crypto';
import { invalidArgument, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort } from './redis-port.ts';

/** A listing row as the walker read it: the order's status on the exchange at `at` (its page's request left). */
export interface SharedRow {
  uniqueReference: string;
  status: string;
  at: number;
}

/** The last walk of a mode that ended: its id and when it started (epoch ms). */
export interface LatestWalk {
  walk: string;
  startedAt: number;
}

export interface ListingShareOptions {
  /** The listing's interval: a walk older than this is due again, and a walker's claim lasts this long. */
  intervalMs: number;
  /** Rows asked for in one HMGET (default 1,000). */
  chunk?: number;
}

export function listingKeys(mode: string): {
  walking: string;
  latest: string;
  rows: (walk: string) => string;
} {
  const base = `cefi-listing:{${mode}}`;
  return { walking: `${base}:walking`, latest: `${base}:latest`, rows: (walk) => `${base}:rows:${walk}` };
}

/** A status as the listing names it ("UNCONFIRMED PAYMENT", "PRE-RELEASE"): printable ASCII. */
const statusPattern = /^[\x20-\x7e]{1,64}$/;
const walkPattern = /^[0-9a-z-]{1,80}$/;

export class ListingShare {
  readonly #redis: RedisPort;
  readonly #intervalMs: number;
  readonly #chunk: number;

  constructor(redis: RedisPort, opts: ListingShareOptions) {
    if (!Number.isSafeInteger(opts.intervalMs) || opts.intervalMs <= 0)
      throw invalidArgument(`intervalMs must be a positive integer, got ${opts.intervalMs}`);
    this.#redis = redis;
    this.#intervalMs = opts.intervalMs;
    this.#chunk = opts.chunk ?? 1_000;
  }

  /** The mode's last walk that ended, or null (none within three intervals, or an entry in another form). */
  async latest(mode: string): Promise<LatestWalk | null> {
    let value: string | null;
    try {
      value = await this.#redis.get(listingKeys(mode).latest);
    } catch (error) {
      throw toRedisWorkerError(error, 'read the latest listing walk');
    }
    const [walk, startedAt] = (value ?? '').split(' ');
    const started = Number(startedAt);
    if (!walk || !walkPattern.test(walk) || !Number.isSafeInteger(started)) return null;
    return { walk, startedAt: started };
  }

  /**
   * Claims the mode's next walk for this replica: a token when no other replica is walking it, else null. The claim
   * lasts one interval unless `keep` renews it.
   */
  async claim(mode: string): Promise<{ walk: string; token: string } | null> {
    const walk = `${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
    try {
      const granted = await this.#redis.set(listingKeys(mode).walking, walk, 'PX', this.#intervalMs, 'NX');
      return granted === 'OK' ? { walk, token: walk } : null;
    } catch (error) {
      throw toRedisWorkerError(error, 'claim a listing walk');
    }
  }

  /** Renews the claim for one more interval: false when it lapsed and another replica holds it. */
  async keep(mode: string, token: string): Promise<boolean> {
    try {
      return (await this.#redis.leaseRenew(listingKeys(mode).walking, token, this.#intervalMs)) === 1;
    } catch (error) {
      throw toRedisWorkerError(error, 'renew a listing walk');
    }
  }

  /** Adds a page's rows to the walk's hash (kept three intervals). */
  async record(mode: string, walk: string, rows: readonly SharedRow[]): Promise<void> {
    if (rows.length === 0) return;
    const fields: string[] = [];
    for (const row of rows) {
      if (!row.uniqueReference || !statusPattern.test(row.status) || !Number.isSafeInteger(row.at)) continue;
      fields.push(row.uniqueReference, `${row.at} ${row.status}`);
    }
    if (fields.length === 0) return;
    const key = listingKeys(mode).rows(walk);
    try {
      await Promise.all([this.#redis.hset(key, ...fields), this.#redis.pexpire(key, 3 * this.#intervalMs)]);
    } catch (error) {
      throw toRedisWorkerError(error, 'record listing rows');
    }
  }

  /** Names the walk the mode's latest and lets the claim go. */
  async complete(mode: string, walk: string, startedAt: number, token: string): Promise<void> {
    const keys = listingKeys(mode);
    try {
      await this.#redis.set(keys.latest, `${walk} ${startedAt}`, 'PX', 3 * this.#intervalMs);
      await this.#redis.leaseRelease(keys.walking, token);
    } catch (error) {
      throw toRedisWorkerError(error, 'complete a listing walk');
    }
  }

  /** Lets the claim go without naming the walk the latest (a walk cut short: another replica makes the next one). */
  async release(mode: string, token: string): Promise<void> {
    try {
      await this.#redis.leaseRelease(listingKeys(mode).walking, token);
    } catch (error) {
      throw toRedisWorkerError(error, 'release a listing walk');
    }
  }

  /** The walk's rows of these orders (those it listed; an entry in another form is left out). */
  async rowsOf(mode: string, walk: string, references: readonly string[]): Promise<SharedRow[]> {
    const key = listingKeys(mode).rows(walk);
    const rows: SharedRow[] = [];
    for (let i = 0; i < references.length; i += this.#chunk) {
      const chunk = references.slice(i, i + this.#chunk);
      let values: Array<string | null>;
      try {
        values = await this.#redis.hmget(key, ...chunk);
      } catch (error) {
        throw toRedisWorkerError(error, 'read listing rows');
      }
      for (const [index, value] of values.entries()) {
        const uniqueReference = chunk[index];
        if (value === null || value === undefined || uniqueReference === undefined) continue;
        const space = value.indexOf(' ');
        const stamp = Number(value.slice(0, space));
        const status = value.slice(space + 1);
        if (space <= 0 || !statusPattern.test(status) || !Number.isSafeInteger(stamp)) continue;
        rows.push({ uniqueReference, status, at: stamp });
      }
    }
    return rows;
  }
}
