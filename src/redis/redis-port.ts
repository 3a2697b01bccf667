// The narrow port onto Redis: only the commands this worker sends, so the client stays swappable and a reader
// sees at a glance what we ask of Redis. An ioredis client built by createRedis (connect.ts) satisfies it as is.
// Keys are given WITHOUT the deployment prefix: the client adds it (ioredis `keyPrefix`, also applied to the
// KEYS of our Lua commands).

/** Our Lua commands (src/redis/*.lua), registered on the client with `defineCommand`; KEYS first, then ARGV. */
export interface RedisScriptCommands {
  /** lease-acquire-2.lua: the fence (integer) when granted, null when the lease is held. */
  leaseAcquire(
    leaseKey: string,
    fenceKey: string,
    owner: string,
    ttlMs: number,
    minFence: string,
    fenceRetentionMs: number,
  ): Promise<number | null>;
  /**
   * lease-acquire-many-n.lua: for orders i = 1..n, KEYS lease key and fence counter of each in turn, then ARGV owner,
   * ttl, fence retention and the minFence of each: per order its fence when granted, 0 when its lease is held.
   */
  leaseAcquireMany(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number[]>;
  /** lease-renew-1.lua: 1 when extended, 0 when the lease is not held by `token`. */
  leaseRenew(leaseKey: string, token: string, ttlMs: number): Promise<number>;
  /** lease-release-1.lua: 1 when deleted, 0 when the lease is not held by `token`. */
  leaseRelease(leaseKey: string, token: string): Promise<number>;
  /** lease-holder-1.lua: [value, pttl] of the lease, or null when free. */
  leaseHolder(leaseKey: string): Promise<[string, number] | null>;
  /** quote-cooldown-1.lua: -1 when granted, else the cooldown's remaining milliseconds. */
  quoteCooldown(cooldownKey: string, cooldownMs: number, token?: string): Promise<number>;
  /**
   * create-in-flight-1.lua: "open" (a mark for `ttlMs`) and "close" answer 1; "others": the milliseconds until the
   * last mark of another order than `orderId` expires, 0 when none is out.
   */
  createInFlight(
    siblingKey: string,
    ...args:
      ['open', orderId: string, ttlMs: number] | ['close', orderId: string] | ['others', orderId: string]
  ): Promise<number>;
  /** reference-claim-1.lua: 1 when the reference is claimed by `orderId` (now or before), 0 when by another. */
  referenceClaim(claimKey: string, orderId: string, retentionMs: number): Promise<number>;
  /**
   * request-budget-2.lua: ARGV "acquire", interval_us, capacity, count: [how many of count were admitted, 0] when
   * any was, else [0, microseconds to wait]; ARGV "penalize", back_off_ms: [1, microseconds the penalty still runs].
   */
  requestBudget(
    tatKey: string,
    penaltyKey: string,
    ...args:
      ['acquire', intervalUs: number, capacity: number, count?: number] | ['penalize', backOffMs: number]
  ): Promise<[number, number]>;
}

export interface RedisPort extends RedisScriptCommands {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, secondsToken: 'EX', seconds: number): Promise<'OK'>;
  set(key: string, value: string, secondsToken: 'EX', seconds: number, nx: 'NX'): Promise<'OK' | null>;
  set(key: string, value: string, millisecondsToken: 'PX', milliseconds: number): Promise<'OK'>;
  set(
    key: string,
    value: string,
    millisecondsToken: 'PX',
    milliseconds: number,
    nx: 'NX',
  ): Promise<'OK' | null>;
  del(key: string): Promise<number>;
  pexpire(key: string, milliseconds: number): Promise<number>;
  /** HSET key field value [field value ...]. */
  hset(key: string, ...fieldsAndValues: string[]): Promise<number>;
  hmget(key: string, ...fields: string[]): Promise<Array<string | null>>;
  hdel(key: string, ...fields: string[]): Promise<number>;
  hgetall(key: string): Promise<Record<string, string>>;
}
