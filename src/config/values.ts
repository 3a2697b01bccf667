// The rules of single environment values that every part of the configuration shares: URLs, secrets, lists,
// booleans and integers as the environment spells them (strings), each parsed by zod into what the worker uses.
import { z } from 'zod';

export const httpUrl = z
  .string()
  .trim()
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL')
  .transform((value) => value.replace(/\/+$/, ''));

export const optionalSecret = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

/** A comma-separated list of secrets (surrounding spaces and empty entries dropped). */
export const secretList = z
  .string()
  .optional()
  .transform((value) =>
    (value ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ''),
  );

/** `true` or `false` only: z.coerce.boolean() would read "false" as true. */
export const booleanFromEnv = z
  .enum(['true', 'false'], { error: 'must be true or false' })
  .default('false')
  .transform((value) => value === 'true');

export const intFromEnv = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

export const flagFromEnv = z
  .enum(['true', 'false', '1', '0', ''], { error: 'must be true or false' })
  .optional()
  .transform((value) => value === 'true' || value === '1');

export const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

/** A comma-separated list whose every item is one of `allowed` (the OTEL_* list variables). */
export const listOf = (allowed: readonly string[]) =>
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((item) => item.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(allowed as [string, ...string[]])));

/** `key=value,key=value` (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS), values percent-encoded. */
export const keyValueList = z
  .string()
  .refine(
    (value) => value.trim() === '' || value.split(',').every((pair) => /^\s*[^=\s]+\s*=/.test(pair)),
    'must be a comma-separated list of key=value',
  );

export const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a valid Kafka topic name');
