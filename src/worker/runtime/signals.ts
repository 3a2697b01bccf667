// What reaches an order besides its commands: webhook hints (in-process or routed), bulk listing rows and the
// reconciliation sweep's nudges, and the views the gauges read (orders by state, confirmation freshness, open
// exchange orders). A resting order is woken for a signal through the lifecycle, or kept at rest when the machine
// says the signal only confirms it.
import { context, isSpanContextValid, SpanKind, trace } from '@opentelemetry/api';
import { originLink } from '../../telemetry/order-sampler.ts';
import type { MachineBinding, OrderActorEvent } from '../machine-binding.ts';
import type { HostState } from './host-state.ts';
import type { OrderLifecycle } from './lifecycle.ts';
import type { RestAndWake } from './rest-and-wake.ts';
import type { ListingOutcome } from './ports.ts';
import { stateLabel } from './rest-rules.ts';
import { actorOf, isOut, originOf, restOf, trailOf, type OrderSlot } from './slot-phases.ts';
import { inOrderTrace, orderAttributes, tracer } from './tracing.ts';

/** Hint spans a waiting GET links at most (a webhook storm for one order must not grow a slot). */
const maxHintLinks = 8;

export class OrderSignals {
  private readonly state: HostState;
  private readonly binding: MachineBinding;
  /** Wakes a resting order for a signal, or keeps it at rest when the signal only confirms it. */
  private readonly rests: RestAndWake;

  constructor(state: HostState, binding: MachineBinding, lifecycle: OrderLifecycle) {
    this.state = state;
    this.binding = binding;
    this.rests = lifecycle.rests;
  }

  /** See OrderHost.deliverHint. */
  deliverHint(
    hint: { orderId: string; status: string; receivedAt: string },
    { wake = true, again = true }: { wake?: boolean; again?: boolean } = {},
  ): boolean {
    const slot = this.state.slots.get(hint.orderId);
    if (slot && restOf(slot)) {
      if (!wake) return false;
      if (!this.rests.wake(slot, 'hint') && this.state.resuming.has(hint.orderId)) {
        // Its lease is being taken up again from Redis: the hint follows once the order is live (once only).
        if (again) void this.rests.awake(hint.orderId).then(() => this.deliverHint(hint, { again: false }));
        return true;
      }
    }
    const actor = slot && actorOf(slot);
    if (!slot || !actor || isOut(slot) || !this.state.mayAct(hint.orderId)) return false;
    const event: OrderActorEvent = { type: 'WEBHOOK_HINT', status: hint.status, at: this.state.opts.now() };
    if (!actor.can(event)) return true;
    // In the webhook's trace, linked to the order's first (a sampler keeps it with the order's other traces).
    const origin = originOf(slot);
    const span = tracer.startSpan('order webhook hint', {
      kind: SpanKind.INTERNAL,
      attributes: orderAttributes(slot),
      ...(origin ? { links: [originLink(origin)] } : {}),
    });
    try {
      context.with(trace.setSpan(context.active(), span), () => this.takeHint(slot, event, hint.receivedAt));
    } finally {
      span.end();
    }
    return true;
  }

  /**
   * A webhook's hint to a live order that takes it, however it came (handed over in-process, or routed here through
   * the commands topic): the machine decides what to GET and when. A hint never changes state by itself, so nothing
   * is written for it; the machine's own writes (the GET's answer) follow as always.
   */
  takeHint(slot: OrderSlot, event: OrderActorEvent, receivedAt: string): void {
    const trail = trailOf(slot);
    const at = Date.parse(receivedAt);
    if (trail && Number.isFinite(at)) trail.webhookAt = at;
    actorOf(slot)?.send(event);
    // A hint the machine keeps waiting for the ones after it: its span is linked from the GET's trace later.
    if (actorOf(slot)?.status().hintDueAt == null) return;
    const spanContext = trace.getActiveSpan()?.spanContext();
    if (!trail || !spanContext || !isSpanContextValid(spanContext)) return;
    const links = (trail.hintLinks ??= []);
    if (links.length < maxHintLinks) links.push(spanContext);
  }

  /** See OrderHost.deliverListing. */
  deliverListing(
    row: { uniqueReference: string; status: string; at: number },
    again = true,
  ): ListingOutcome | Promise<ListingOutcome> {
    const orderId = this.state.ownerOfReference(row.uniqueReference);
    const slot = orderId == null ? undefined : this.state.slots.get(orderId);
    // A passivated order stays at rest for a row that only confirms it (the machine says what it would do with it:
    // move its next poll out), and is handed that listing when it wakes. For any other row it is woken like for a
    // hint: the machine decides (another status is a GET), and it rests again after the idle time. Its lease may
    // have to be taken up again from Redis first: the row follows once the order is live.
    const resting = slot && restOf(slot);
    const atRest = slot && resting && !isOut(slot) ? this.confirmAtRest(slot, row) : undefined;
    if (atRest) return atRest;
    if (slot && resting && !this.rests.wake(slot, 'listing') && this.state.resuming.has(slot.orderId))
      return again ? this.rests.awake(slot.orderId).then(() => this.deliverListing(row, false)) : 'ignored';
    const actor = slot && actorOf(slot);
    if (!slot || !actor || isOut(slot) || !this.state.mayAct(slot.orderId)) return 'not_here';
    const status = actor.status();
    if (status.uniqueReference !== row.uniqueReference) return 'not_here';
    const event: OrderActorEvent = { type: 'LISTED', status: row.status, at: row.at };
    if (!actor.can(event)) return 'ignored';
    if (status.lastStatus === row.status) {
      // A confirmation only re-arms a timer: no trace of its own (thousands per round).
      actor.send(event);
      return 'confirmed';
    }
    inOrderTrace(slot, 'order listing hint', () => actor.send(event));
    return 'differed';
  }

  /**
   * A listing row for a passivated order that the machine would take as a confirmation: the slot's deadlines move
   * as the machine's would, and the order stays at rest ('confirmed'). A row older than a confirmation already
   * taken this way is 'ignored' (as the machine ignores a stale page). Undefined: the order must be woken for it.
   * Waking each listed order (re-creating its actor, taking its lease up again from Redis, writing the record of
   * the confirmation, resting again) once per listing round was measured as most of a replica's work with
   * thousands of CeFi orders open.
   */
  private confirmAtRest(
    slot: OrderSlot,
    row: { uniqueReference: string; status: string; at: number },
  ): ListingOutcome | undefined {
    const rest = restOf(slot);
    if (!rest || !this.binding.restingAfterListing) return undefined;
    if (rest.listedAt !== undefined && row.at < rest.listedAt) return 'ignored';
    const resting = this.binding.restingAfterListing(slot.record.machine, row);
    if (resting === null) return undefined;
    rest.listedAt = row.at;
    this.rests.restAgain(slot, rest, resting);
    return 'confirmed';
  }

  /**
   * The reconciliation sweep's nudges: an order on the exchange whose status was last confirmed longer than
   * `maxAgeMs` ago is nudged to poll now; a resting one whose wake is overdue is woken. Returns how many were nudged.
   */
  nudgeOverdue(now: number, maxAgeMs: number): number {
    let nudged = 0;
    for (const slot of [...this.state.slots.values()]) {
      // A passivated order polls when it wakes; one whose wake is overdue (its timer held back) is woken here.
      const rest = restOf(slot);
      if (rest) {
        if (now - rest.wakeAt > maxAgeMs) this.rests.wake(slot, 'reconcile');
        continue;
      }
      const actor = actorOf(slot);
      const status = actor?.status();
      if (!actor || !status || status.terminal || !status.uniqueReference || status.lastConfirmedAt === null)
        continue;
      if (now - status.lastConfirmedAt <= maxAgeMs || now - slot.lastNudgeAt <= maxAgeMs) continue;
      const nudge: OrderActorEvent = { type: 'WEBHOOK_HINT', at: now };
      if (!actor.can(nudge)) continue;
      inOrderTrace(slot, 'order reconcile', () => actorOf(slot)?.send(nudge));
      slot.lastNudgeAt = now;
      nudged++;
    }
    if (nudged) this.state.opts.metrics?.reconcileNudged(nudged);
    return nudged;
  }

  /** Unfinished orders driven here, per machine state (`a.b` for a nested state value), passivated ones included. */
  openOrdersByState(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const slot of this.state.slots.values()) {
      let state: string;
      const rest = restOf(slot);
      if (rest) state = rest.state;
      else {
        const status = actorOf(slot)?.status();
        if (!status || status.terminal) continue;
        state = stateLabel(JSON.parse(status.state) as unknown);
      }
      counts.set(state, (counts.get(state) ?? 0) + 1);
    }
    return counts;
  }

  /** See OrderHost.confirmationFreshness. */
  confirmationFreshness(now: number, maxAgeMs: number): { open: number; overdue: number } {
    let open = 0;
    let overdue = 0;
    for (const slot of this.state.slots.values()) {
      // A passivated order is open at the exchange by definition (it rests only while monitoring it).
      const status = restOf(slot) ?? actorOf(slot)?.status();
      if (!status || ('terminal' in status && (status.terminal || status.uniqueReference === null))) continue;
      open++;
      if (status.confirmedAt === null || now - status.confirmedAt > maxAgeMs) overdue++;
    }
    return { open, overdue };
  }

  /** The unique references of the open exchange orders of `mode` driven here (live or at rest). */
  openReferences(mode: string, first = false): string[] {
    const references: string[] = [];
    for (const slot of this.state.slots.values()) {
      const reference = openReferenceOf(slot, mode);
      if (reference === null) continue;
      references.push(reference);
      if (first) break;
    }
    return references;
  }
}

/** The order's exchange order when it is of `mode` and open; null otherwise. */
function openReferenceOf(slot: OrderSlot, mode: string): string | null {
  if (slot.record.mode !== mode || isOut(slot)) return null;
  // A passivated order rests only while monitoring its exchange order: it is one (and the listing wakes it).
  if (restOf(slot)) return slot.record.unique_reference;
  const status = actorOf(slot)?.status();
  return status && status.uniqueReference !== null && !status.terminal ? status.uniqueReference : null;
}
