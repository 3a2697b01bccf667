// Secured connections: Kafka TLS and SASL, Redis TLS and ACL user. Their variables, the rules between them (one
// issue per problem, on the variable to fix) and the settings the Kafka and Redis clients are built with.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { redisTopologyVariable, type redisTopologyVariables, redisUsesTls } from './redis-topology.ts';
import { flagFromEnv, optionalSecret, optionalText } from './values.ts';

// Certificates and keys are files (Kubernetes mounts Secrets as files); they are read here, once, and must be PEM.
export const pemFile = z
  .string()
  .trim()
  .min(1)
  .transform((path, ctx) => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      ctx.issues.push({
        code: 'custom',
        input: path,
        message: `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      });
      return z.NEVER;
    }
    if (!/-----BEGIN [A-Z0-9 ]+-----/.test(text)) {
      ctx.issues.push({ code: 'custom', input: path, message: `${path} is not a PEM file` });
      return z.NEVER;
    }
    return text;
  });

/** Unset or empty: no file. */
export const optionalPemFile = z.preprocess(
  (value) => (typeof value === 'string' && value.trim() === '' ? undefined : value),
  pemFile.optional(),
);

export const connectionSecurityVariables = {
  KAFKA_SSL: flagFromEnv,
  KAFKA_SSL_CA_FILE: optionalPemFile,
  KAFKA_SSL_CERT_FILE: optionalPemFile,
  KAFKA_SSL_KEY_FILE: optionalPemFile,
  KAFKA_SSL_KEY_PASSWORD: optionalSecret,
  KAFKA_SSL_SERVERNAME: optionalText,
  KAFKA_SASL_MECHANISM: z
    .enum(['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'], {
      error: 'must be plain, scram-sha-256, scram-sha-512 or oauthbearer',
    })
    .optional(),
  KAFKA_SASL_USERNAME: optionalText,
  KAFKA_SASL_PASSWORD: optionalSecret,
  KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: optionalText,
  REDIS_USERNAME: optionalText,
  REDIS_PASSWORD: optionalSecret,
  REDIS_TLS_CA_FILE: optionalPemFile,
  REDIS_TLS_CERT_FILE: optionalPemFile,
  REDIS_TLS_KEY_FILE: optionalPemFile,
  REDIS_TLS_SERVERNAME: optionalText,
};

export type SecurityInput = {
  [K in keyof typeof connectionSecurityVariables]?: z.output<(typeof connectionSecurityVariables)[K]>;
} & {
  [K in keyof typeof redisTopologyVariables]?: z.output<(typeof redisTopologyVariables)[K]>;
};

/** Cross-variable rules of the secured connections: one issue per problem, on the variable to fix. */
export function checkConnectionSecurity(
  value: SecurityInput,
  issue: (variable: string, message: string) => void,
): void {
  const kafkaTlsFiles = [
    'KAFKA_SSL_CA_FILE',
    'KAFKA_SSL_CERT_FILE',
    'KAFKA_SSL_KEY_FILE',
    'KAFKA_SSL_KEY_PASSWORD',
    'KAFKA_SSL_SERVERNAME',
  ] as const;
  if (!value.KAFKA_SSL)
    for (const name of kafkaTlsFiles)
      if (value[name] !== undefined) issue(name, 'is set but KAFKA_SSL is not true');
  if ((value.KAFKA_SSL_CERT_FILE === undefined) !== (value.KAFKA_SSL_KEY_FILE === undefined))
    issue('KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together');
  const mechanism = value.KAFKA_SASL_MECHANISM;
  if (mechanism === undefined) {
    for (const name of [
      'KAFKA_SASL_USERNAME',
      'KAFKA_SASL_PASSWORD',
      'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE',
    ] as const)
      if (value[name] !== undefined) issue(name, 'is set but KAFKA_SASL_MECHANISM is not');
  } else if (mechanism === 'oauthbearer') {
    if (value.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE === undefined)
      issue('KAFKA_SASL_OAUTHBEARER_TOKEN_FILE', 'is required with KAFKA_SASL_MECHANISM=oauthbearer');
    if (!value.KAFKA_SSL)
      issue('KAFKA_SSL', 'must be true with KAFKA_SASL_MECHANISM=oauthbearer (bearer tokens)');
  } else {
    if (value.KAFKA_SASL_USERNAME === undefined)
      issue('KAFKA_SASL_USERNAME', `is required with KAFKA_SASL_MECHANISM=${mechanism}`);
    if (value.KAFKA_SASL_PASSWORD === undefined)
      issue('KAFKA_SASL_PASSWORD', `is required with KAFKA_SASL_MECHANISM=${mechanism}`);
    if (mechanism === 'plain' && !value.KAFKA_SSL)
      issue('KAFKA_SSL', 'must be true with KAFKA_SASL_MECHANISM=plain (it sends the password in clear)');
  }
  const rediss = redisUsesTls(value);
  for (const name of [
    'REDIS_TLS_CA_FILE',
    'REDIS_TLS_CERT_FILE',
    'REDIS_TLS_KEY_FILE',
    'REDIS_TLS_SERVERNAME',
  ] as const)
    if (!rediss && value[name] !== undefined)
      issue(name, `needs a rediss:// ${redisTopologyVariable(value)}`);
  if ((value.REDIS_TLS_CERT_FILE === undefined) !== (value.REDIS_TLS_KEY_FILE === undefined))
    issue('REDIS_TLS_CERT_FILE', 'REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together');
  const inUrl = /^rediss?:\/\/[^/@]*@/.test(value.REDIS_URL ?? '');
  if (inUrl && (value.REDIS_USERNAME !== undefined || value.REDIS_PASSWORD !== undefined))
    issue(
      'REDIS_PASSWORD',
      'give the Redis credentials either in REDIS_URL or in REDIS_USERNAME/REDIS_PASSWORD',
    );
  if (value.REDIS_USERNAME !== undefined && value.REDIS_PASSWORD === undefined)
    issue('REDIS_PASSWORD', 'is required with REDIS_USERNAME');
}

export function connectionSecurity(value: SecurityInput) {
  const kafkaSasl =
    value.KAFKA_SASL_MECHANISM === undefined
      ? undefined
      : value.KAFKA_SASL_MECHANISM === 'oauthbearer'
        ? { mechanism: 'oauthbearer' as const, tokenFile: value.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE ?? '' }
        : {
            mechanism: value.KAFKA_SASL_MECHANISM,
            username: value.KAFKA_SASL_USERNAME ?? '',
            password: value.KAFKA_SASL_PASSWORD ?? '',
          };
  return {
    kafka: {
      tls: value.KAFKA_SSL
        ? {
            ca: value.KAFKA_SSL_CA_FILE,
            cert: value.KAFKA_SSL_CERT_FILE,
            key: value.KAFKA_SSL_KEY_FILE,
            passphrase: value.KAFKA_SSL_KEY_PASSWORD,
            servername: value.KAFKA_SSL_SERVERNAME,
          }
        : undefined,
      sasl: kafkaSasl,
    },
    redis: {
      tls: redisUsesTls(value)
        ? {
            ca: value.REDIS_TLS_CA_FILE,
            cert: value.REDIS_TLS_CERT_FILE,
            key: value.REDIS_TLS_KEY_FILE,
            servername: value.REDIS_TLS_SERVERNAME,
          }
        : undefined,
      username: value.REDIS_USERNAME,
      password: value.REDIS_PASSWORD,
    },
  };
}

export type KafkaSecurity = ReturnType<typeof connectionSecurity>['kafka'];
export type RedisSecurity = ReturnType<typeof connectionSecurity>['redis'];
