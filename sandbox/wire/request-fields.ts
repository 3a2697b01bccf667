// Request-body schemas in zod that answer with the exchange's own (Django REST framework) field messages:
// "This field is required.", "A valid number is required.", ... Every field tolerates JSON null as "absent"
// for optional fields, and issues are mapped to the v2 `errors` object keyed by field name.
import { z } from 'zod';
import { parseDecimal } from '../domain/decimal.ts';
import { validationError, type FieldErrorMap } from '../http/http-kit.ts';
import { messages } from './messages.ts';

type Presence = { required?: boolean };

function absent(value: unknown): boolean {
  return value === undefined || value === null;
}

function fail(ctx: z.RefinementCtx, message: string): typeof z.NEVER {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}

/**
 * A field where null, absent and "" all mean "not given" ("This field is required." when it must be given);
 * any other value goes to `parse`.
 */
function givenField<T>(options: Presence, parse: (value: unknown, ctx: z.RefinementCtx) => T) {
  return z
    .unknown()
    .optional()
    .transform((value, ctx): T | undefined => {
      if (absent(value) || value === '') return options.required ? fail(ctx, messages.required) : undefined;
      return parse(value, ctx);
    });
}

export function stringField(
  options: Presence & { maxLength?: number; pattern?: RegExp; patternMessage?: string } = {},
) {
  return z
    .unknown()
    .optional()
    .transform((value, ctx): string | undefined => {
      if (absent(value))
        return options.required
          ? fail(ctx, value === null ? messages.mayNotBeNull : messages.required)
          : undefined;
      if (typeof value !== 'string' && typeof value !== 'number') return fail(ctx, messages.notAString);
      const text = String(value).trim();
      if (text === '') return options.required ? fail(ctx, messages.mayNotBeBlank) : undefined;
      if (options.maxLength !== undefined && text.length > options.maxLength)
        return fail(ctx, messages.maxLength(options.maxLength));
      if (options.pattern && !options.pattern.test(text)) {
        return fail(ctx, options.patternMessage ?? 'This value does not match the required pattern.');
      }
      return text;
    });
}

export function decimalField(options: Presence = {}) {
  return givenField(
    options,
    (value, ctx): bigint => parseDecimal(value) ?? fail(ctx, messages.invalidNumber),
  );
}

export function integerField(options: Presence = {}) {
  return givenField(options, (value, ctx): number => {
    const number = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
    return typeof number === 'number' && Number.isSafeInteger(number)
      ? number
      : fail(ctx, messages.invalidInteger);
  });
}

const TRUE = new Set<unknown>([true, 'true', 'True', 'TRUE', 1, '1', 'yes', 'on']);
const FALSE = new Set<unknown>([false, 'false', 'False', 'FALSE', 0, '0', 'no', 'off']);

export function booleanField() {
  return z
    .unknown()
    .optional()
    .transform((value, ctx): boolean | undefined => {
      if (absent(value)) return undefined;
      if (TRUE.has(value)) return true;
      if (FALSE.has(value)) return false;
      return fail(ctx, messages.invalidBoolean);
    });
}

export function choiceField<const T extends string>(choices: readonly T[], options: Presence = {}) {
  return givenField(options, (value, ctx): T => {
    const text = typeof value === 'string' ? value.toUpperCase() : String(value);
    const found = choices.find((c) => c.toUpperCase() === text);
    return found ?? fail(ctx, messages.invalidChoice(String(value)));
  });
}

/** Currency given as a code string, or as the object forms real v2 clients send ({code|contract_address, network}). */
export interface CurrencySelector {
  code?: string;
  contractAddress?: string | null;
  network?: string;
}

export function currencyField(options: Presence = {}) {
  return givenField(options, (value, ctx): CurrencySelector => {
    if (typeof value === 'string') return { code: value.trim() };
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const record = value as Record<string, unknown>;
      const network = typeof record['network'] === 'string' ? record['network'] : undefined;
      if (typeof record['code'] === 'string')
        return network ? { code: record['code'], network } : { code: record['code'] };
      if ('contract_address' in record && network) {
        const address = record['contract_address'];
        if (address === null || typeof address === 'string') return { contractAddress: address, network };
      }
    }
    return fail(ctx, messages.notAString);
  });
}

/** Validates `body` against a schema built from the fields above; throws the exchange's 400 on any issue. */
export function parseFields<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const errors: FieldErrorMap = {};
  for (const issue of result.error.issues) {
    const field = issue.path.length > 0 ? String(issue.path[0]) : 'non_field_errors';
    (errors[field] ??= []).push(issue.message);
  }
  throw validationError(errors);
}
