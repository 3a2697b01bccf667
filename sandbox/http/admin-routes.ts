// The control surface under its own prefix (default /_sandbox): advance orders (one, or a batch in one request),
// set the automatic schedule, move the sandbox clock, arm and clear faults, read webhook deliveries (or only their
// counts by outcome, and how many are pending) and re-enable disabled webhooks. Not part of the exchange; no
// authentication (the sandbox is a local test double). Bodies use camelCase like the TS handle.
import { z } from 'zod';
import type { SandboxControl } from '../domain/control.ts';
import type { AutoSchedule } from '../domain/order-store.ts';
import { faultSpecSchema } from '../domain/faults.ts';
import { bodyObject, HttpError, route, type Route, type SandboxRequest } from './http-kit.ts';

function parse<S extends z.ZodType>(schema: S, request: SandboxRequest): z.output<S> {
  const result = schema.safeParse(bodyObject(request));
  if (!result.success) throw new HttpError({ status: 400, body: { detail: z.prettifyError(result.error) } });
  return result.data;
}

/** A refusal of the control surface as HTTP: 404 for an unknown order or webhook, 409 for a refused move. */
function refusal(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const status = (error as Error).name === 'NotFound' ? 404 : 409;
  return new HttpError({ status, body: { detail: (error as Error).message } });
}

function guard<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    throw refusal(error);
  }
}

/** One reference of a batch advance: the statuses it passed, or why it did not move (the others still do). */
type BatchAdvanceResult =
  { reference: string; passed: string[] } | { reference: string; status: number; detail: string };

const batchAdvanceSchema = z.object({
  references: z.array(z.string().min(1)).min(1).max(10_000),
  to: z.string().min(1),
});

const scheduleSchema = z.object({
  enabled: z.boolean().optional(),
  stepMs: z.int().positive().optional(),
  outcome: z.enum(['completed', 'refunded', 'canceled']).optional(),
  uniqueReference: z.string().optional(),
});

export function adminRoutes(control: SandboxControl): Route[] {
  return [
    route('GET', '/', () => ({ status: 200, body: control.describe() })),
    route('GET', '/clock/', () => ({ status: 200, body: control.clockView() })),
    route('POST', '/clock/advance/', (request) => {
      const { ms } = parse(z.object({ ms: z.number().nonnegative() }), request);
      control.advanceClock(ms);
      return { status: 200, body: control.clockView() };
    }),
    route('GET', '/orders/', () => ({ status: 200, body: control.listOrders() })),
    // Many orders in one request (a benchmark moves thousands): each as POST /orders/{ref}/advance/ would, in the
    // order given; a reference that cannot move is reported in its place and does not stop the rest.
    route('POST', '/orders/advance/', (request) => {
      const { references, to } = parse(batchAdvanceSchema, request);
      const results = references.map((reference): BatchAdvanceResult => {
        try {
          return { reference, passed: control.advanceOrder(reference, to) };
        } catch (error) {
          const { reply } = refusal(error);
          const detail = (reply.body as { detail?: unknown } | undefined)?.detail;
          return { reference, status: reply.status, detail: typeof detail === 'string' ? detail : '' };
        }
      });
      return { status: 200, body: { results } };
    }),
    route('GET', '/orders/{ref}/', (request) => ({
      status: 200,
      body: guard(() => control.getOrderOrThrow(request.params['ref'] ?? '')),
    })),
    route('POST', '/orders/{ref}/advance/', (request) => {
      const { to } = parse(z.object({ to: z.string().min(1) }), request);
      const passed = guard(() => control.advanceOrder(request.params['ref'] ?? '', to));
      return { status: 200, body: { passed, order: control.getOrderOrThrow(request.params['ref'] ?? '') } };
    }),
    route('POST', '/orders/{ref}/kyc/', (request) => {
      const { status } = parse(z.object({ status: z.string().min(1) }), request);
      guard(() => control.emitKycStatus(request.params['ref'] ?? '', status));
      return { status: 202, body: { queued: true } };
    }),
    route('GET', '/schedule/', () => ({ status: 200, body: control.getAutoSchedule() })),
    route('POST', '/schedule/', (request) => {
      const { uniqueReference, ...given } = parse(scheduleSchema, request);
      const schedule = Object.fromEntries(
        Object.entries(given).filter(([, v]) => v !== undefined),
      ) as Partial<AutoSchedule>;
      const result = guard(() => control.setAutoSchedule(schedule, uniqueReference));
      return { status: 200, body: result };
    }),
    route('GET', '/faults/', () => ({ status: 200, body: control.listFaults() })),
    route('POST', '/faults/', (request) => {
      const spec = parse(faultSpecSchema, request);
      return { status: 201, body: { id: control.injectFault(spec) } };
    }),
    route('GET', '/faults/late-landings/', () => ({
      status: 200,
      body: {
        pending: control.lateLandings().filter((l) => l.state === 'pending').length,
        landings: control.lateLandings(),
      },
    })),
    route('DELETE', '/faults/', () => {
      control.clearFaults();
      return { status: 204 };
    }),
    route('GET', '/webhooks/', () => ({ status: 200, body: control.webhookStates() })),
    route('GET', '/webhooks/deliveries/', () => ({ status: 200, body: control.listWebhookDeliveries() })),
    route('GET', '/webhooks/outcomes/', () => ({ status: 200, body: control.webhookOutcomes() })),
    route('GET', '/webhooks/pending/', () => ({ status: 200, body: { pending: control.webhooksPending() } })),
    route('POST', '/webhooks/{id}/enable/', (request) => {
      guard(() => control.setWebhookEnabled(request.params['id'] ?? '', true));
      return { status: 200, body: control.webhookStates() };
    }),
    route('POST', '/webhooks/{id}/disable/', (request) => {
      guard(() => control.setWebhookEnabled(request.params['id'] ?? '', false));
      return { status: 200, body: control.webhookStates() };
    }),
  ];
}
