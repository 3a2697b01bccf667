// In production the worker's secrets travel encrypted only: the exchange's API keys and referral tokens over https,
// a Redis password over rediss://. Production is what the worker image says it is: `NODE_ENV=production` (set by
// deploy/Dockerfile, so every container of the image is production unless told otherwise). A development deployment
// of the image against the sandbox (deploy/k8s/overlays/dev, docker-compose.yml) says so with
// ALLOW_INSECURE_TRANSPORT=true, which is logged as a warning at every start. Outside production (npm start, tests,
// the demo) plain http and redis:// stay accepted. docs/decisions/insecure-transport-in-production.md.

export interface TransportSettings {
  readonly NODE_ENV?: string | undefined;
  readonly ALLOW_INSECURE_TRANSPORT: boolean;
  readonly EXCHANGE_API_URL: string;
  readonly EXCHANGE_API_V1_URL?: string | undefined;
  readonly REDIS_URL?: string | undefined;
  readonly REDIS_PASSWORD?: string | undefined;
  /** Sentinel and Cluster entries: TLS when given as rediss:// (redis-topology.ts). */
  readonly REDIS_SENTINELS?: { readonly tls: boolean } | undefined;
  readonly REDIS_SENTINEL_PASSWORD?: string | undefined;
  readonly REDIS_CLUSTER_NODES?: { readonly tls: boolean } | undefined;
}

export const isProduction = (nodeEnv: string | undefined): boolean => nodeEnv?.trim() === 'production';

/** What would send a secret in clear, one entry per variable to fix (values never included). */
function cleartextSecrets(value: TransportSettings): Array<{ variable: string; message: string }> {
  const found: Array<{ variable: string; message: string }> = [];
  for (const variable of ['EXCHANGE_API_URL', 'EXCHANGE_API_V1_URL'] as const) {
    const url = value[variable];
    if (url !== undefined && !url.startsWith('https://'))
      found.push({
        variable,
        message: 'is plain http: the API keys and referral tokens would travel in clear',
      });
  }
  if (value.REDIS_SENTINELS !== undefined || value.REDIS_CLUSTER_NODES !== undefined) {
    // A Sentinel set or a Cluster: TLS is all entries or none (redis-topology.ts).
    const variable = value.REDIS_SENTINELS !== undefined ? 'REDIS_SENTINELS' : 'REDIS_CLUSTER_NODES';
    const tls = (value.REDIS_SENTINELS ?? value.REDIS_CLUSTER_NODES)?.tls === true;
    const password = value.REDIS_PASSWORD !== undefined || value.REDIS_SENTINEL_PASSWORD !== undefined;
    if (!tls && password)
      found.push({
        variable: value.REDIS_PASSWORD !== undefined ? 'REDIS_PASSWORD' : 'REDIS_SENTINEL_PASSWORD',
        message: `a Redis password over redis:// travels in clear; give ${variable} as rediss:// entries`,
      });
    return found;
  }
  const url = value.REDIS_URL ?? '';
  const passwordInUrl = /^redis:\/\/[^/@]*:[^/@]+@/.test(url);
  if (url.startsWith('redis://') && (passwordInUrl || value.REDIS_PASSWORD !== undefined))
    found.push({
      variable: passwordInUrl ? 'REDIS_URL' : 'REDIS_PASSWORD',
      message: 'a Redis password over redis:// travels in clear; use a rediss:// REDIS_URL',
    });
  return found;
}

/** Refusals: in production, without ALLOW_INSECURE_TRANSPORT=true, every secret sent in clear is a problem. */
export function insecureTransportProblems(
  value: TransportSettings,
): Array<{ variable: string; message: string }> {
  if (!isProduction(value.NODE_ENV) || value.ALLOW_INSECURE_TRANSPORT) return [];
  return cleartextSecrets(value).map(({ variable, message }) => ({
    variable,
    message: `${message} (NODE_ENV=production; set ALLOW_INSECURE_TRANSPORT=true for a development deployment only)`,
  }));
}

/** The warning at start when ALLOW_INSECURE_TRANSPORT=true lets production send secrets in clear. */
export function insecureTransportWarnings(value: TransportSettings): string[] {
  if (!isProduction(value.NODE_ENV) || !value.ALLOW_INSECURE_TRANSPORT) return [];
  const found = cleartextSecrets(value);
  return found.length === 0
    ? []
    : [
        `ALLOW_INSECURE_TRANSPORT=true with NODE_ENV=production: ${found
          .map((each) => `${each.variable} ${each.message}`)
          .join('; ')} (development deployments only)`,
      ];
}
