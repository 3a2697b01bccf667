// Which replica answers for which state partitions, and where: each replica's read API address and the partitions
// it owns (caught up), kept in one Redis hash (one key, so one hash slot on a Cluster) and announced again every few
// seconds by each replica (src/fleet/fleet-peers.ts). A replica asked for an order of a partition it does not own
// asks the member announcing it. An entry not announced again for `staleAfterMs` is a replica gone (killed, paused,
// cut off): it is not asked, and the reader deletes it once it is ten times that old. Announcements carry no secret:
// the read API's token is the caller's own, passed on with the request.
import { z } from 'zod';
import type { RedisPort } from './redis-port.ts';

const membersKey = 'fleet:members';

export const fleetMemberSchema = z.object({
  worker_id: z.string().min(1).max(128),
  /** The member's operations port, as the others reach it (OPS_ADVERTISE_URL). */
  url: z
    .string()
    .max(512)
    .regex(/^https?:\/\/\S+$/),
  /** The state partitions it owns and holds whole (caught up). */
  partitions: z.array(z.number().int().min(0)).max(100_000),
  /** When it announced this (epoch ms, its clock). */
  at: z.number().int(),
});
export type FleetMember = z.infer<typeof fleetMemberSchema>;

export class FleetMembers {
  readonly #redis: Pick<RedisPort, 'hset' | 'hdel' | 'hgetall'>;
  readonly #staleAfterMs: number;

  constructor(redis: Pick<RedisPort, 'hset' | 'hdel' | 'hgetall'>, opts: { staleAfterMs?: number } = {}) {
    this.#redis = redis;
    this.#staleAfterMs = opts.staleAfterMs ?? 15_000;
  }

  get staleAfterMs(): number {
    return this.#staleAfterMs;
  }

  async announce(member: FleetMember): Promise<void> {
    await this.#redis.hset(membersKey, member.worker_id, JSON.stringify(fleetMemberSchema.parse(member)));
  }

  /** This member stops (a clean shutdown): nobody asks it from now on. */
  async withdraw(workerId: string): Promise<void> {
    await this.#redis.hdel(membersKey, workerId);
  }

  /**
   * The members announced within `staleAfterMs` of `now`. An entry that is not a member (written by something else,
   * or by another version) is left out, and so is one ten times stale, which is deleted.
   */
  async current(now: number): Promise<FleetMember[]> {
    const entries = await this.#redis.hgetall(membersKey);
    const members: FleetMember[] = [];
    const gone: string[] = [];
    for (const [field, value] of Object.entries(entries)) {
      let parsed: ReturnType<typeof fleetMemberSchema.safeParse>;
      try {
        parsed = fleetMemberSchema.safeParse(JSON.parse(value));
      } catch {
        continue;
      }
      if (!parsed.success || parsed.data.worker_id !== field) continue;
      const age = now - parsed.data.at;
      if (age > 10 * this.#staleAfterMs) gone.push(field);
      else if (age <= this.#staleAfterMs) members.push(parsed.data);
    }
    if (gone.length > 0) await this.#redis.hdel(membersKey, ...gone).catch(() => {});
    return members;
  }
}
