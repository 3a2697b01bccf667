// The one filter of the fleet's order lists, as the read API takes it from a query string and the inspector from its
// flags: which orders (state or phase, mode, how long unmoved) and which page. Validated with zod; a bad value is a
// clear error naming the parameter. The cursor is opaque to callers: the (since, order_id) of the last order shown.
import { z } from 'zod';

const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "10m", "1h", "2d", "500ms" as milliseconds; undefined when it is not one. */
export function parseDuration(value: string): number | undefined {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * (units[match[2]!] ?? 0);
}

const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 30s, 10m, 1h or 2d' });
    return z.NEVER;
  }
  return ms;
});

/**
 * `open`: every unfinished order (parked ones included); `active`: unfinished and not parked (with `older_than`:
 * stalled); `parked`; `finished`; or a machine state by name (`creating.waiting`, `open`...: see
 * machines/resume-keys.ts). `open` is the phase, not the machine state of that name: `state=open` lists both.
 */
export const phaseFilters = ['open', 'active', 'parked', 'finished'] as const;

/**
 * The order of every list: oldest `since` (epoch ms) first, then by order id. The view sorts its page by it and the
 * read API merges the owners' pages by it, so a cursor means the same place in both.
 */
export function compareListOrder(
  aSinceMs: number,
  aOrderId: string,
  bSinceMs: number,
  bOrderId: string,
): number {
  if (aSinceMs !== bSinceMs) return aSinceMs - bSinceMs;
  return aOrderId < bOrderId ? -1 : aOrderId > bOrderId ? 1 : 0;
}

const cursorSchema = z.tuple([z.string(), z.string()]);

export function encodeCursor(since: string, orderId: string): string {
  return Buffer.from(JSON.stringify([since, orderId])).toString('base64url');
}

export const listQuerySchema = z
  .object({
    state: z
      .string()
      .regex(/^[a-z][A-Za-z.]{0,40}$/, 'must be open, active, parked, finished or a machine state name')
      .optional(),
    mode: z.enum(['defi', 'cefi', 'cefi_fixed']).optional(),
    older_than: duration.optional(),
    limit: z.coerce.number().int().min(1).max(1_000).default(100),
    cursor: z
      .string()
      .max(600)
      .transform((value, ctx) => {
        try {
          return cursorSchema.parse(JSON.parse(Buffer.from(value, 'base64url').toString()));
        } catch {
          ctx.addIssue({ code: 'custom', message: 'is not a cursor this API gave out' });
          return z.NEVER;
        }
      })
      .optional(),
  })
  .strict();
export type ListQuery = z.output<typeof listQuerySchema>;

/** The query from URL search parameters (each at most once), or the problems, one per parameter. */
export function parseListQuery(
  params: URLSearchParams,
): { ok: true; query: ListQuery } | { ok: false; problems: string[] } {
  const raw: Record<string, string> = {};
  const problems: string[] = [];
  for (const [name, value] of params) {
    if (name in raw) problems.push(`${name}: given more than once`);
    raw[name] = value;
  }
  const parsed = listQuerySchema.safeParse(raw);
  if (!parsed.success)
    problems.push(
      ...parsed.error.issues.map((issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown parameter(s): ${issue.keys.join(', ')}`
          : `${issue.path.join('.') || 'query'}: ${issue.message}`,
      ),
    );
  return problems.length || !parsed.success ? { ok: false, problems } : { ok: true, query: parsed.data };
}
