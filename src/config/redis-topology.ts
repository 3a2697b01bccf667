// Where Redis is: one endpoint (REDIS_URL), a Sentinel set (REDIS_SENTINELS + REDIS_SENTINEL_NAME) or a Cluster
// (REDIS_CLUSTER_NODES), exactly one of them; and how many replicas must hold a lease before the worker trusts it.
// The variables' zod rules, their cross-checks and the topology src/redis/connect.ts builds its client from. Part of
// the configuration: only src/config.ts reads the environment, and it parses these with the rest.
import { z } from 'zod';

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

export type RedisTopology =
  | { readonly kind: 'standalone'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisNode[];
      /** The primary's name in the Sentinel set (`sentinel monitor <name> …`). */
      readonly name: string;
      /** TLS to the sentinels and to the primary they name. */
      readonly tls: boolean;
      readonly sentinelUsername: string | undefined;
      readonly sentinelPassword: string | undefined;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisNode[]; readonly tls: boolean };

/**
 * How many replicas must acknowledge a lease grant or renewal (Redis WAIT) before the worker trusts it, and how long
 * it waits for them. 0: the primary's answer is enough (a failover may then lose a grant: see
 * docs/decisions/redis-coordination.md, "Failover").
 */
export interface LeaseReplication {
  readonly replicas: number;
  readonly timeoutMs: number;
}

export interface RedisEndpoints {
  readonly topology: RedisTopology;
  readonly leaseReplication: LeaseReplication;
}

const blankIsUnset = (value: unknown): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

const entryPattern = /^(?:(rediss?):\/\/)?(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]@,]+):(\d{1,5})$/;

/** `host:port,host:port`; each entry may be written `redis://host:port` or `rediss://host:port` (TLS), all alike. */
const nodeList = z.preprocess(
  blankIsUnset,
  z
    .string()
    .transform((value, ctx) => {
      const entries = value
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean);
      const nodes: Array<RedisNode & { tls: boolean }> = [];
      for (const entry of entries) {
        const match = entryPattern.exec(entry);
        const port = Number(match?.[3]);
        if (!match?.[2] || port < 1 || port > 65_535) {
          ctx.addIssue({
            code: 'custom',
            message: `each entry must be host:port (optionally redis:// or rediss://), got ${JSON.stringify(entry)}`,
          });
          return z.NEVER;
        }
        nodes.push({ host: match[2].replace(/^\[(.*)\]$/, '$1'), port, tls: match[1] === 'rediss' });
      }
      if (nodes.length === 0) {
        ctx.addIssue({ code: 'custom', message: 'needs at least one host:port' });
        return z.NEVER;
      }
      if (nodes.some((node) => node.tls !== nodes[0]?.tls)) {
        ctx.addIssue({ code: 'custom', message: 'mixes rediss:// entries with plain ones: use one for all' });
        return z.NEVER;
      }
      return { nodes: nodes.map(({ host, port }) => ({ host, port })), tls: nodes[0]?.tls ?? false };
    })
    .optional(),
);

const optionalTrimmed = z.preprocess(
  blankIsUnset,
  z
    .string()
    .transform((value) => value.trim())
    .optional(),
);

/** The Redis topology's variables, spread into the configuration's schema (src/config.ts). */
export const redisTopologyVariables = {
  REDIS_URL: z.preprocess(
    blankIsUnset,
    z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional(),
  ),
  REDIS_SENTINELS: nodeList,
  REDIS_SENTINEL_NAME: z.preprocess(
    blankIsUnset,
    z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, . _ - only (the name Sentinel monitors)')
      .optional(),
  ),
  REDIS_SENTINEL_USERNAME: optionalTrimmed,
  REDIS_SENTINEL_PASSWORD: optionalTrimmed,
  REDIS_CLUSTER_NODES: nodeList,
  REDIS_LEASE_MIN_REPLICAS: z.preprocess(blankIsUnset, z.coerce.number().int().min(0).max(10).optional()),
  // Below the lease client's command timeout (1 s), so the WAIT answers before the command would time out.
  REDIS_LEASE_REPLICA_TIMEOUT_MS: z.preprocess(
    blankIsUnset,
    z.coerce.number().int().min(10).max(900).default(300),
  ),
};

const topologyVariables = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;
const sentinelOnly = ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_USERNAME', 'REDIS_SENTINEL_PASSWORD'] as const;

/**
 * The rules between the topology's variables, on the raw environment, so they are reported together with every other
 * problem (zod skips an object's refinements while any field is invalid): exactly one topology, and the Sentinel
 * variables with REDIS_SENTINELS only.
 */
export function redisTopologyProblems(env: Record<string, string | undefined>): string[] {
  const set = (name: string): boolean => (env[name]?.trim() ?? '') !== '';
  const given = topologyVariables.filter(set);
  const problems: string[] = [];
  if (given.length === 0)
    problems.push(
      'REDIS_URL: is required (or REDIS_SENTINELS with REDIS_SENTINEL_NAME for a Sentinel set, or REDIS_CLUSTER_NODES for a Cluster)',
    );
  if (given.length > 1)
    problems.push(
      `${given[1]}: give exactly one Redis topology (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES); found ${given.join(' and ')}`,
    );
  if (set('REDIS_SENTINELS') && !set('REDIS_SENTINEL_NAME'))
    problems.push('REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS (the name the sentinels monitor)');
  if (!set('REDIS_SENTINELS'))
    for (const name of sentinelOnly)
      if (set(name)) problems.push(`${name}: is set but REDIS_SENTINELS is not`);
  // Redis keys start with `eow:<CONSUMER_GROUP>:`. A brace there becomes part of every key's hash tag: "{}" makes a
  // Cluster hash whole keys (a lease and its fence counter land in two slots), "{x}" puts every key in one slot.
  if (set('REDIS_CLUSTER_NODES') && /[{}]/.test(env['CONSUMER_GROUP'] ?? ''))
    problems.push(
      'CONSUMER_GROUP: must not contain { or } with REDIS_CLUSTER_NODES (it prefixes every Redis key, and a brace changes the hash slot of every key)',
    );
  if (set('REDIS_SENTINEL_USERNAME') && !set('REDIS_SENTINEL_PASSWORD'))
    problems.push('REDIS_SENTINEL_PASSWORD: is required with REDIS_SENTINEL_USERNAME');
  return problems;
}

type TopologyInput = {
  [K in keyof typeof redisTopologyVariables]?: z.output<(typeof redisTopologyVariables)[K]>;
};

/** The variable that names where Redis is (for messages such as "needs a rediss:// REDIS_SENTINELS"). */
export function redisTopologyVariable(value: TopologyInput): (typeof topologyVariables)[number] {
  if (value.REDIS_SENTINELS) return 'REDIS_SENTINELS';
  if (value.REDIS_CLUSTER_NODES) return 'REDIS_CLUSTER_NODES';
  return 'REDIS_URL';
}

/** Whether the connection to Redis is TLS: a rediss:// URL, or rediss:// node entries. */
export function redisUsesTls(value: TopologyInput): boolean {
  if (value.REDIS_SENTINELS) return value.REDIS_SENTINELS.tls;
  if (value.REDIS_CLUSTER_NODES) return value.REDIS_CLUSTER_NODES.tls;
  return value.REDIS_URL?.startsWith('rediss://') ?? false;
}

/** The endpoints, once redisTopologyProblems found nothing (so exactly one topology is given). */
export function redisEndpoints(value: TopologyInput): RedisEndpoints {
  const topology: RedisTopology = value.REDIS_SENTINELS
    ? {
        kind: 'sentinel',
        sentinels: value.REDIS_SENTINELS.nodes,
        name: value.REDIS_SENTINEL_NAME ?? '',
        tls: value.REDIS_SENTINELS.tls,
        sentinelUsername: value.REDIS_SENTINEL_USERNAME,
        sentinelPassword: value.REDIS_SENTINEL_PASSWORD,
      }
    : value.REDIS_CLUSTER_NODES
      ? { kind: 'cluster', nodes: value.REDIS_CLUSTER_NODES.nodes, tls: value.REDIS_CLUSTER_NODES.tls }
      : { kind: 'standalone', url: value.REDIS_URL ?? '' };
  return {
    topology,
    leaseReplication: {
      // A Sentinel set or a Cluster has replicas to fail over to: a grant they do not hold is not trusted.
      replicas: value.REDIS_LEASE_MIN_REPLICAS ?? (topology.kind === 'standalone' ? 0 : 1),
      timeoutMs: value.REDIS_LEASE_REPLICA_TIMEOUT_MS ?? 300,
    },
  };
}
