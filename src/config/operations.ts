// The configuration of fleet operations, as parts of the one schema in src/config.ts (which spreads them in): the read
// API's bearer tokens, the operator public keys the worker verifies order.settle with, the stalled-order threshold;
// and the variables of the operator tools (inspector, console), which the worker never reads. Keys are checked here,
// once: a key that is not an Ed25519 public key stops start-up naming its key id.
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { booleanFromEnv, secretList } from './values.ts';

const keyId = /^[A-Za-z0-9._@-]{1,64}$/;

/** `<key_id>=<base64 of the DER SubjectPublicKeyInfo>`, comma-separated (`openssl pkey -pubout -outform DER | base64`). */
const operatorPublicKeys = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const keys: Array<{ keyId: string; spki: string }> = [];
    for (const entry of (value ?? '').split(',').map((item) => item.trim())) {
      if (entry === '') continue;
      const at = entry.indexOf('=');
      const id = at > 0 ? entry.slice(0, at).trim() : '';
      const der = at > 0 ? entry.slice(at + 1).trim() : '';
      if (!keyId.test(id)) {
        ctx.addIssue({
          code: 'custom',
          message: 'each entry is <key_id>=<base64 DER public key>; a key id is 1-64 of A-Za-z0-9._@-',
        });
        continue;
      }
      try {
        const key = createPublicKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'spki' });
        if (key.asymmetricKeyType !== 'ed25519') throw new Error(String(key.asymmetricKeyType));
      } catch {
        ctx.addIssue({ code: 'custom', message: `key ${id} is not a base64 DER Ed25519 public key` });
        continue;
      }
      if (keys.some((key) => key.keyId === id))
        ctx.addIssue({ code: 'custom', message: `key id ${id} is given twice` });
      keys.push({ keyId: id, spki: der });
    }
    return keys;
  });

/** STALLED_AFTER_MS as the workers and the console read it. */
const stalledAfterMs = z.coerce
  .number()
  .int()
  .min(60_000)
  .max(30 * 86_400_000)
  .default(3_600_000);

/** The worker's variables of fleet operations (spread into src/config.ts configVariables). */
export const operationsVariables = {
  /** Bearer token(s) of the read API on METRICS_PORT; unset: the API is off (404). Two during a rotation. */
  OPS_API_TOKEN: secretList,
  OPERATOR_PUBLIC_KEYS: operatorPublicKeys,
  /** Development only: order.settle accepted without an operator signature. */
  OPERATOR_COMMANDS_UNSIGNED: booleanFromEnv,
  /** How long a signed operator command stays valid after it was signed. */
  OPERATOR_SIGNATURE_MAX_AGE_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .max(30 * 86_400_000)
    .default(86_400_000),
  /** An open, unparked order whose record has not changed for this long counts as stalled. */
  STALLED_AFTER_MS: stalledAfterMs,
  /**
   * This replica's operations port as the other replicas reach it: they pass it read API requests for the orders
   * of the partitions it owns. Unset: http://127.0.0.1:<METRICS_PORT> (every replica on one host).
   */
  OPS_ADVERTISE_URL: z
    .string()
    .trim()
    .max(512)
    .refine(
      (value) => /^https?:\/\/[^\s/]+(\/\S*)?$/.test(value),
      'must be an http(s) URL, e.g. http://10.0.0.7:9464',
    )
    .transform((value) => value.replace(/\/+$/, ''))
    .optional(),
};

type OperationsInput = z.output<z.ZodObject<typeof operationsVariables>>;

export function operationsConfig(value: OperationsInput) {
  return {
    apiTokens: value.OPS_API_TOKEN,
    operatorKeys: value.OPERATOR_PUBLIC_KEYS,
    operatorCommandsUnsigned: value.OPERATOR_COMMANDS_UNSIGNED,
    operatorSignatureMaxAgeMs: value.OPERATOR_SIGNATURE_MAX_AGE_MS,
    stalledAfterMs: value.STALLED_AFTER_MS,
    advertiseUrl: value.OPS_ADVERTISE_URL,
  };
}
export type OperationsConfig = ReturnType<typeof operationsConfig>;

/** Rules between the variables above, as lines naming the variable to fix. */
export function operationsProblems(env: Record<string, string | undefined>): string[] {
  const unsigned = env['OPERATOR_COMMANDS_UNSIGNED']?.trim() === 'true';
  const keys = Boolean(env['OPERATOR_PUBLIC_KEYS']?.replace(/[\s,]/g, ''));
  return unsigned && keys
    ? [
        'OPERATOR_COMMANDS_UNSIGNED: must not be true while OPERATOR_PUBLIC_KEYS is set (signed operator commands would sit beside unsigned ones)',
      ]
    : [];
}

// --- The operator tools' own variables (inspector, console); never read by the worker. -------------------------

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const httpUrl = z
  .string()
  .trim()
  .refine((value) => /^https?:\/\/\S+$/.test(value), 'must be an http(s) URL')
  .transform((value) => value.replace(/\/+$/, ''));

export const operatorToolSchema = z
  .object({
    /** PEM (PKCS#8) Ed25519 private key file the tools sign operator commands with. */
    OPERATOR_KEY_FILE: optionalText,
    /** The key id the worker knows the matching public key by (OPERATOR_PUBLIC_KEYS). */
    OPERATOR_KEY_ID: z.string().regex(keyId, '1-64 of A-Za-z0-9._@-').optional(),
    /** The exchange, for `find-exchange-order` (GET /orders/, CeFi only), with the worker's keys. */
    EXCHANGE_API_URL: httpUrl.optional(),
    EXCHANGE_API_KEY_CEFI: optionalText,
    EXCHANGE_API_KEY_CEFI_FIXED: optionalText,
    EXCHANGE_API_KEY_DEFI: optionalText,
    /** The console's address (`npm run console`) and the token it asks for (as the read API does). */
    CONSOLE_HOST: z.string().trim().min(1).default('127.0.0.1'),
    CONSOLE_PORT: z.coerce.number().int().min(0).max(65535).default(9470),
    OPS_API_TOKEN: secretList,
    /** As on the workers: the console's stalled list shows open orders unchanged this long. */
    STALLED_AFTER_MS: stalledAfterMs,
    /** A trace UI's address for one trace, with `{trace_id}` in it (Jaeger: http://localhost:16686/trace/{trace_id}). */
    TRACE_UI_URL: z
      .string()
      .trim()
      .refine((value) => value.includes('{trace_id}'), 'must contain {trace_id}')
      .optional(),
  })
  .loose()
  .superRefine((value, ctx) => {
    if ((value.OPERATOR_KEY_FILE === undefined) !== (value.OPERATOR_KEY_ID === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['OPERATOR_KEY_FILE'],
        message: 'OPERATOR_KEY_FILE and OPERATOR_KEY_ID go together',
      });
  })
  .transform((value, ctx) => {
    let signingKey: string | undefined;
    if (value.OPERATOR_KEY_FILE !== undefined) {
      try {
        signingKey = readFileSync(value.OPERATOR_KEY_FILE, 'utf8');
      } catch (error) {
        ctx.addIssue({
          code: 'custom',
          path: ['OPERATOR_KEY_FILE'],
          message: `cannot read ${value.OPERATOR_KEY_FILE} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        });
        return z.NEVER;
      }
    }
    return {
      signer:
        signingKey !== undefined && value.OPERATOR_KEY_ID !== undefined
          ? { keyId: value.OPERATOR_KEY_ID, privateKeyPem: signingKey }
          : undefined,
      exchange:
        value.EXCHANGE_API_URL === undefined
          ? undefined
          : {
              baseUrl: value.EXCHANGE_API_URL,
              credentials: {
                ...(value.EXCHANGE_API_KEY_CEFI ? { cefi: value.EXCHANGE_API_KEY_CEFI } : {}),
                ...(value.EXCHANGE_API_KEY_CEFI_FIXED
                  ? { cefi_fixed: value.EXCHANGE_API_KEY_CEFI_FIXED }
                  : {}),
                ...(value.EXCHANGE_API_KEY_DEFI ? { defi: value.EXCHANGE_API_KEY_DEFI } : {}),
              },
            },
      console: { host: value.CONSOLE_HOST, port: value.CONSOLE_PORT },
      apiTokens: value.OPS_API_TOKEN,
      traceUiUrl: value.TRACE_UI_URL,
      stalledAfterMs: value.STALLED_AFTER_MS,
    };
  });
export type OperatorToolConfig = z.output<typeof operatorToolSchema>;
