// Whether a write survives a failover. Redis replicates asynchronously: a primary answers a lease grant before any
// replica has it, and a replica promoted by Sentinel or by the Cluster then knows nothing of it, so another replica
// of the worker could be granted the same order (with the same fence, the counter's increment being lost too). WAIT
// closes that: it answers how many replicas acknowledged every write this connection made before it. A lease is
// trusted only once enough did (order-lease.ts); the promoted replica then holds it, since Sentinel and the Cluster
// promote the replica with the most of the primary's writes (with one replica, that one).
// WAIT answers for the connection it is sent on, so it goes where the write went: on a Cluster, to the primary of the
// key's slot. It blocks that connection until the replicas answer (about one round trip), so the leases get a
// connection of their own (src/composition/redis.ts). Callers that ask together share one WAIT.
import { Cluster, Command, type Redis } from 'ioredis';
import { keySlot } from './slot-batches.ts';

export interface ReplicaAcks {
  /** Replicas that must acknowledge a write before it is trusted (at least 1). */
  readonly replicas: number;
  /** How long WAIT waits for them, milliseconds. */
  readonly timeoutMs: number;
  /**
   * How many replicas acknowledged every write made through this client, before the call, to the primary that holds
   * `key` (at most `replicas`: WAIT returns as soon as that many did). Rejects like any command on connection trouble.
   */
  acknowledged(key: string): Promise<number>;
}

/**
 * One WAIT at a time per primary. A caller whose write was answered while a WAIT was already out waits for the next
 * one: the one out may have reached Redis before that write did.
 */
class SharedWait {
  #inFlight: Promise<number> | undefined;
  #queued: Promise<number> | undefined;
  readonly #send: () => Promise<number>;

  constructor(send: () => Promise<number>) {
    this.#send = send;
  }

  next(): Promise<number> {
    if (this.#queued) return this.#queued;
    if (!this.#inFlight) return this.#start();
    const queued = this.#inFlight
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.#queued = undefined;
        return this.#start();
      });
    this.#queued = queued;
    return queued;
  }

  #start(): Promise<number> {
    const sent = this.#send().finally(() => {
      if (this.#inFlight === sent) this.#inFlight = undefined;
    });
    this.#inFlight = sent;
    return sent;
  }
}

/** Acknowledgements on `client` (one primary, or a Cluster); undefined when `replicas` is 0 (nothing to wait for). */
export function replicaAcks(
  client: Redis | Cluster,
  opts: { replicas: number; timeoutMs: number },
): ReplicaAcks | undefined {
  const { replicas, timeoutMs } = opts;
  if (replicas <= 0) return undefined;
  const waitCommand = (): Command => new Command('wait', [replicas, timeoutMs], { replyEncoding: 'utf8' });
  const answer = (reply: unknown): number => Number(reply);
  if (!(client instanceof Cluster)) {
    const shared = new SharedWait(async () => answer(await client.sendCommand(waitCommand())));
    return { replicas, timeoutMs, acknowledged: () => shared.next() };
  }
  const keyPrefix = client.options.keyPrefix ?? '';
  const byPrimary = new Map<string, SharedWait>();
  return {
    replicas,
    timeoutMs,
    acknowledged(key) {
      const slot = keySlot(keyPrefix, key);
      // The primary the write went to: the slot's first node in the client's map (the one it sends the slot's
      // commands to). A map not loaded yet has no node for it: then the WAIT itself is refused below.
      const primary = client.slots[slot]?.[0] ?? `slot ${slot}`;
      let shared = byPrimary.get(primary);
      if (!shared) {
        shared = new SharedWait(async () => {
          const command = waitCommand();
          // Sent to the slot's primary, on the connection its commands use (the same Redis instance of the pool).
          void client.sendCommand(command, undefined, { slot });
          return answer(await command.promise);
        });
        byPrimary.set(primary, shared);
      }
      return shared.next();
    },
  };
}

/**
 * The primaries (one, or each of a Cluster's) with fewer connected replicas than `replicas`, from ROLE: on those no
 * lease can be trusted, which the worker says at start rather than only in each refused grant.
 */
export async function primariesShortOfReplicas(
  client: Redis | Cluster,
  replicas: number,
): Promise<Array<{ address: string; replicas: number }>> {
  const primaries = client instanceof Cluster ? client.nodes('master') : [client];
  const short: Array<{ address: string; replicas: number }> = [];
  for (const node of primaries) {
    const role = await node.call('ROLE');
    const connected = Array.isArray(role) && Array.isArray(role[2]) ? role[2].length : 0;
    const address = client instanceof Cluster ? `${node.options.host}:${node.options.port}` : 'primary';
    if (connected < replicas) short.push({ address, replicas: connected });
  }
  return short;
}
