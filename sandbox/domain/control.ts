// The typed control surface shared by the TypeScript handle and the admin HTTP API: advance an order (walking
// every intermediate status, one webhook each), schedule automatic progress, move the sandbox clock (applying
// every move that falls due), arm faults, and inspect orders and webhook deliveries.
import type { SandboxContext } from './context.ts';
import { displayDecimal } from './decimal.ts';
import type { FaultSpec, FaultView } from './faults.ts';
import type { LateLanding } from './late-landings.ts';
import { resolveAdvanceTarget, statusCodes, type OrderStatus } from './order-lifecycle.ts';
import { TransitionRefused, type AutoSchedule, type Order } from './order-store.ts';
import { toV2Order } from '../wire/v2-representation.ts';
import type { WebhookDelivery, WebhookOutcomeCount, WebhookState } from './webhook-dispatcher.ts';

export class NotFound extends Error {
  override name = 'NotFound';
}

/** An order as the control surface shows it: the v2 representation plus sandbox bookkeeping. */
export interface ControlOrderView {
  order: Record<string, unknown>;
  statusCode: number;
  mode: string;
  partnerId: string | null;
  history: { status: OrderStatus; at: string }[];
  /** The amounts the creating request gave (null: not given), as sent, whatever the exchange stored. */
  requested: { depositAmount: string | null; withdrawAmount: string | null };
}

export interface SandboxControl {
  describe(): Record<string, unknown>;
  clockView(): { now: number; iso: string; offsetMs: number };
  advanceClock(ms: number): number;
  listOrders(): ControlOrderView[];
  getOrder(reference: string): ControlOrderView | undefined;
  getOrderOrThrow(reference: string): ControlOrderView;
  /** `to` is an AdvanceTarget; plain strings are accepted from the admin API and refused when unknown. */
  advanceOrder(reference: string, to: string): OrderStatus[];
  emitKycStatus(reference: string, status: string): void;
  getAutoSchedule(): AutoSchedule;
  setAutoSchedule(schedule: Partial<AutoSchedule>, reference?: string): AutoSchedule;
  injectFault(spec: FaultSpec): number;
  clearFaults(): void;
  listFaults(): FaultView[];
  /** Requests held back by late_landing: when each arrived, was dropped, lands or landed, and what it answered. */
  lateLandings(): LateLanding[];
  listWebhookDeliveries(): WebhookDelivery[];
  /** Deliveries counted by outcome, HTTP status and error (no bodies: cheap for tens of thousands). */
  webhookOutcomes(): WebhookOutcomeCount[];
  /** Deliveries queued or in flight. */
  webhooksPending(): number;
  webhookStates(): WebhookState[];
  setWebhookEnabled(webhookId: string, enabled: boolean): void;
}

function view(order: Order): ControlOrderView {
  return {
    order: toV2Order(order),
    statusCode: statusCodes[order.status],
    mode: order.mode,
    partnerId: order.partnerId ?? null,
    history: order.history.map((h) => ({ status: h.status, at: new Date(h.at).toISOString() })),
    requested: {
      depositAmount:
        order.requested.depositAmount === undefined ? null : displayDecimal(order.requested.depositAmount),
      withdrawAmount:
        order.requested.withdrawAmount === undefined ? null : displayDecimal(order.requested.withdrawAmount),
    },
  };
}

export function createControl(ctx: SandboxContext, describe: () => Record<string, unknown>): SandboxControl {
  const orderOrThrow = (reference: string): Order => {
    const order = ctx.orders.get(reference);
    if (!order) throw new NotFound(`no order ${reference}`);
    ctx.orders.sweepOrder(order, ctx.clock.now());
    return order;
  };
  return {
    describe,
    clockView: () => ({
      now: ctx.clock.now(),
      iso: new Date(ctx.clock.now()).toISOString(),
      offsetMs: ctx.clock.offsetMs(),
    }),
    advanceClock(ms) {
      const now = ctx.clock.advance(ms);
      ctx.orders.sweep(now);
      return now;
    },
    listOrders: () => ctx.orders.newestFirst(() => true).map(view),
    getOrder(reference) {
      const order = ctx.orders.get(reference);
      return order ? view(order) : undefined;
    },
    getOrderOrThrow: (reference) => view(orderOrThrow(reference)),
    advanceOrder(reference, to) {
      const order = orderOrThrow(reference);
      const target = resolveAdvanceTarget(to);
      if (!target) throw new TransitionRefused(order.status, to as OrderStatus);
      return ctx.orders.advance(order, target, ctx.clock.now());
    },
    emitKycStatus(reference, status) {
      ctx.webhooks.kycStatusChanged(orderOrThrow(reference), status);
    },
    getAutoSchedule: () => ({ ...ctx.orders.defaultSchedule() }),
    setAutoSchedule(schedule, reference) {
      if (reference !== undefined) {
        const order = orderOrThrow(reference);
        const merged = { ...(order.schedule ?? ctx.orders.defaultSchedule()), enabled: true, ...schedule };
        ctx.orders.setOrderSchedule(order, merged);
        return merged;
      }
      const merged = { ...ctx.orders.defaultSchedule(), ...schedule };
      ctx.orders.setDefaultSchedule(merged);
      return merged;
    },
    injectFault: (spec) => ctx.faults.inject(spec),
    clearFaults: () => ctx.faults.clear(),
    listFaults: () => ctx.faults.list(),
    lateLandings: () => ctx.landings.list(),
    listWebhookDeliveries: () => ctx.webhooks.deliveries(),
    webhookOutcomes: () => ctx.webhooks.outcomeCounts(),
    webhooksPending: () => ctx.webhooks.pendingCount,
    webhookStates: () => ctx.webhooks.states(),
    setWebhookEnabled(webhookId, enabled) {
      if (!ctx.webhooks.setEnabled(webhookId, enabled))
        throw new NotFound(`no webhook configuration ${webhookId}`);
    },
  };
}
