// Rest and wake, the two transitions of an order's life that passivation added: an order quiet for the idle time
// rests (its actor stopped, its lease suspended, a deadline kept), and wakes at that deadline, for a signal or a
// command, or for a poll's news (a poll at rest that only confirms it keeps it resting). The lifecycle builds this
// part and hands it the little of itself it needs (LifeContext: an actor's start, a lost lease, a halt), as
// BullMQ's Worker hands its LockManager a minimal context.
import { context } from '@opentelemetry/api';
import { DeadlineQueue } from '../deadline-queue.ts';
import type {
  MachineBinding,
  OrderActorEvent,
  OrderActorHandle,
  RestingOrder,
  StartOrderOptions,
} from '../machine-binding.ts';
import type { HostState } from './host-state.ts';
import type { OrderWrites } from './order-writes.ts';
import { PollsAtRest, type PollTaker } from './polls-at-rest.ts';
import type { WakeReason } from './ports.ts';
import { stateLabel, writtenThrough } from './rest-rules.ts';
import * as phases from './slot-phases.ts';
import { actorOf, isOut, isStopped, restOf, type OrderSlot, type Resting } from './slot-phases.ts';

/** What rest and wake need of the lifecycle that builds them. */
export interface LifeContext {
  /** The options an actor of the slot starts with (its clock, its changes written, its errors halting it). */
  startOptions(slot: OrderSlot): StartOrderOptions;
  /** The order's lease was lost (or may have been driven elsewhere): it is reloaded from Kafka. */
  onLeaseLost(orderId: string, live?: boolean): Promise<void>;
  /** The order stopped on an error its machine does not model (order.parked internal_error). */
  haltOrder(slot: OrderSlot, error: unknown): void;
}

export class RestAndWake {
  private readonly state: HostState;
  private readonly binding: MachineBinding;
  private readonly writes: OrderWrites;
  private readonly life: LifeContext;
  readonly passivateIdleMs: number;
  /** Live orders that may be idle: checked for passivation at their deadline. */
  private readonly idleChecks: DeadlineQueue<string>;
  /** Passivated orders: woken at their machine's next deadline. */
  private readonly wakes: DeadlineQueue<string>;
  private readonly polls: PollsAtRest;
  /** State labels of passivated orders, shared (a handful of distinct strings for any number of orders). */
  private readonly stateLabels = new Map<string, string>();

  constructor(state: HostState, binding: MachineBinding, writes: OrderWrites, life: LifeContext) {
    this.state = state;
    this.binding = binding;
    this.writes = writes;
    this.life = life;
    this.passivateIdleMs = state.opts.passivateIdleMs ?? 0;
    this.idleChecks = new DeadlineQueue((orderId) => this.passivateIfIdle(orderId), state.opts.now);
    this.wakes = new DeadlineQueue((orderId) => this.wakeDue(orderId), state.opts.now);
    this.polls = new PollsAtRest(state, binding, (orderId, at) => this.wakes.schedule(orderId, at));
  }

  /** Orders driven here whose actor is stopped while they only wait (their slot keeps the record). */
  get resting(): number {
    return this.wakes.size;
  }

  /** After a revocation: the deadline queues' storage sized for the orders that stay. */
  compactDeadlines(): void {
    this.wakes.compact();
    this.idleChecks.compact();
  }

  /** The writer failed for good: no order is checked or woken again. */
  clearDeadlines(): void {
    this.idleChecks.clear();
    this.wakes.clear();
  }

  /** The order's latest record just became durable: if it stays that way, look at it again after the idle time. */
  noteQuiet(slot: OrderSlot): void {
    if (this.passivateIdleMs <= 0 || isOut(slot) || !actorOf(slot)) return;
    this.idleChecks.schedule(slot.orderId, this.state.opts.now() + this.passivateIdleMs);
  }

  forgetDeadlines(slot: OrderSlot): void {
    if (this.state.holds(slot)) return;
    this.idleChecks.cancel(slot.orderId);
    this.wakes.cancel(slot.orderId);
    const rest = restOf(slot);
    rest?.polling?.abort();
    if (rest) rest.polling = undefined;
  }

  /**
   * An order quiet for the idle time: stops its actor when it only waits - its latest record durable and written
   * from the actor as it is now, nothing pending, no call in flight, still ours - and keeps the record (the one the
   * state store holds too) and the machine's next deadline. The actor's timers go with it.
   */
  private passivateIfIdle(orderId: string): void {
    const slot = this.state.slots.get(orderId);
    const actor = slot && actorOf(slot);
    if (!slot || !actor || isOut(slot) || this.state.writerFailed) return;
    if (!writtenThrough(slot)) return;
    if (!this.state.mayAct(orderId)) return;
    // A call still running ends with a transition (and a write that notes the order quiet again); look again
    // after another idle time in any case.
    if (this.state.opts.callInFlight?.(orderId)) {
      this.noteQuiet(slot);
      return;
    }
    const status = actor.status();
    if (status.terminal) return;
    // Hints waiting for their GET are not in the record (a hint is not written): live until that GET.
    if (status.hintDueAt != null) {
      this.noteQuiet(slot);
      return;
    }
    const resting = this.binding.resting(slot.record.machine);
    if (resting === null) return;
    this.rest(slot, stateLabel(JSON.parse(status.state) as unknown), resting, status.confirmedAt);
    actor.stop();
    this.state.opts.metrics?.orderPassivated();
  }

  /** Loaded or Live -> Resting: nothing to do until the next event, and a deadline for it. */
  rest(slot: OrderSlot, label: string, resting: RestingOrder, confirmedAt: number | null): void {
    const { wakeAt } = resting;
    let state = this.stateLabels.get(label);
    if (state === undefined) this.stateLabels.set(label, (state = label));
    // The lease is no longer renewed (it runs out on its ttl), and is kept again or taken up again when it wakes.
    const leaseRenewedAt = this.state.opts.leases.suspend(slot.orderId);
    phases.toResting(slot, {
      state,
      wakeAt,
      pollDeferrableUntil: resting.pollDeferrableUntil ?? null,
      confirmedAt,
      leaseRenewedAt,
    });
    this.wakes.schedule(slot.orderId, wakeAt);
  }

  /** A resting order confirmed without waking it: its confirmation and next wake move as the machine's would. */
  restAgain(slot: OrderSlot, rest: Resting, resting: RestingOrder): void {
    rest.confirmedAt = resting.confirmedAt;
    rest.pollDeferrableUntil = resting.pollDeferrableUntil ?? null;
    rest.wakeAt = resting.wakeAt;
    this.wakes.schedule(slot.orderId, resting.wakeAt);
  }

  private wakeDue(orderId: string): void {
    const slot = this.state.slots.get(orderId);
    const rest = slot && restOf(slot);
    if (!slot || !rest) return;
    const now = this.state.opts.now();
    if (rest.wakeAt > now) {
      this.wakes.schedule(orderId, rest.wakeAt);
      return;
    }
    // A routine poll (a safety net: webhooks announce changes) waits while the replica is saturated, in steps, up
    // to the longest interval the interface document recommends since the last confirmation: commands, hints and
    // creations come first. Any other deadline is never put off. Each order keeps its phase within the step (its
    // wake moves by whole steps from where it was due): polls put off together must not all come due together once
    // the load eases, which would block the event loop for seconds (measured: thousands of wakes in one burst, 30
    // leases lost and Redis answers taken for timeouts).
    const until = rest.pollDeferrableUntil;
    if (until !== null && until > now && this.state.opts.pollsMayWait?.()) {
      this.polls.putOff(orderId, rest, now, until, 'saturated');
      return;
    }
    if (!rest.polling && this.polls.poll(slot, rest, now, this.takerFor(slot, rest))) return;
    this.wake(slot, 'timer');
  }

  /** Applies a poll made at rest: the order rests on when the answer only confirms it, else it is woken with it. */
  private takerFor(slot: OrderSlot, rest: Resting): PollTaker {
    return {
      answered: (answer) => {
        const confirmed = this.binding.confirmedByPoll?.(slot.record.machine, answer) ?? null;
        if (confirmed === null) {
          this.state.opts.metrics?.polledAtRest?.('news');
          this.wakeWith(slot, 'poll', { type: 'POLLED', output: answer });
          return;
        }
        // As a live order's confirming poll (persist): not written.
        this.writes.holdUnwritten(slot, confirmed.machine);
        this.restAgain(slot, rest, confirmed.resting);
        this.state.opts.metrics?.polledAtRest?.('confirmed');
      },
      failed: (error) => this.wakeWith(slot, 'poll', { type: 'POLL_FAILED', error }),
    };
  }

  /**
   * Wakes a resting order and hands it an event once it is live (after its lease is taken up again, if need be), in
   * the trace it is called in.
   */
  wakeWith(slot: OrderSlot, reason: WakeReason, event: OrderActorEvent): void {
    const ctx = context.active();
    const deliver = (): void => {
      const actor = actorOf(slot);
      if (!actor || !this.state.holds(slot) || isOut(slot)) return;
      if (!this.state.mayAct(slot.orderId) || !actor.can(event)) return;
      context.with(ctx, () => actor.send(event));
    };
    if (this.wake(slot, reason)) deliver();
    else if (this.state.resuming.has(slot.orderId)) void this.awake(slot.orderId).then(deliver);
  }

  /**
   * Wakes a passivated order: re-creates its actor from its durable record, exactly as a restore does, once its
   * lease is held again. True when it is live now: its suspended lease had a third of its ttl left on the local
   * clock (kept again without asking Redis: nobody else can have taken it), so the wake is synchronous and the event
   * that woke it is delivered after, in order. False otherwise: stopped or halted, or its lease is being taken up
   * again from Redis (`resuming`; `awake` resolves once that is over), the event to follow then.
   */
  wake(slot: OrderSlot, reason: WakeReason): boolean {
    const rest = restOf(slot);
    if (!rest) return Boolean(actorOf(slot));
    if (isOut(slot) || this.state.writerFailed) return false;
    // A poll made at rest is not waited for: the live machine polls for itself.
    rest.polling?.abort();
    rest.polling = undefined;
    const orderId = slot.orderId;
    const renewedAt = rest.leaseRenewedAt;
    if (
      renewedAt !== undefined &&
      !this.state.resuming.has(orderId) &&
      this.state.opts.leases.keepAgain(
        orderId,
        slot.fence,
        renewedAt,
        () => void this.life.onLeaseLost(orderId),
      )
    )
      return this.wakeNow(slot, reason);
    void this.resumeLease(slot, reason);
    return false;
  }

  /** Resolves once a wake under way for the order (its lease taken up again, or a reload) is over. */
  async awake(orderId: string): Promise<void> {
    await this.state.resuming.get(orderId);
    await this.state.reloading.get(orderId);
  }

  /**
   * Takes a resting order's suspended lease up again from Redis, then wakes it. The record the slot rests with is
   * this replica's latest when nobody held the lease in between: the lease was still ours (same fence) or the new
   * fence follows ours directly, and the state topic holds nothing newer for the order. Otherwise (another replica
   * drove it in between, or holds it now) the order is reloaded from Kafka under the lease, as after a lost lease,
   * and comes back live.
   */
  private resumeLease(slot: OrderSlot, reason: WakeReason): Promise<void> {
    const { resuming } = this.state;
    const { leases, state } = this.state.opts;
    const orderId = slot.orderId;
    const pending = resuming.get(orderId);
    if (pending) return pending;
    const resume = (async () => {
      const fence = slot.fence;
      const grant = await leases
        .resume(orderId, fence, () => void this.life.onLeaseLost(orderId))
        .catch((error: unknown) => {
          this.state.logger.warn(
            { orderId, err: { message: (error as Error).message } },
            'could not take the lease of a resting order up again',
          );
          return null;
        });
      const here =
        this.state.holds(slot) &&
        !isStopped(slot) &&
        restOf(slot) !== undefined &&
        this.state.assigned.has(slot.partition) &&
        !this.state.writerFailed;
      if (!here) {
        if (grant) await leases.release(orderId).catch(() => {});
        return;
      }
      const stored = state.get(orderId);
      if (grant && grant.fence <= fence + 1 && (!stored || stored.rev <= slot.record.rev)) {
        slot.fence = grant.fence;
        this.wakeNow(slot, reason);
        return;
      }
      if (grant) await leases.release(orderId).catch(() => {});
      this.state.logger.info(
        { orderId, fence, granted: grant?.fence ?? null },
        'a resting order may have been driven elsewhere meanwhile; reloading it from Kafka',
      );
      // Awaited here, so whoever awaits the wake (`awake`) awaits the reload too.
      await this.life.onLeaseLost(orderId, true);
    })().finally(() => resuming.delete(orderId));
    resuming.set(orderId, resume);
    return resume;
  }

  /** The wake itself, once the lease is held: Resting -> Waking -> Live, the actor re-created from the record. */
  private wakeNow(slot: OrderSlot, reason: WakeReason): boolean {
    const rest = restOf(slot);
    if (!rest) return Boolean(actorOf(slot));
    const { listedAt, polling } = rest;
    this.wakes.cancel(slot.orderId);
    polling?.abort();
    phases.toWaking(slot);
    let actor: OrderActorHandle;
    try {
      actor = this.binding.restore(slot.record.machine, this.life.startOptions(slot));
      if (phases.isWaking(slot)) phases.toLive(slot, actor);
    } catch (error) {
      this.state.logger.error(
        { orderId: slot.orderId, err: { message: (error as Error).message } },
        'could not re-create the passivated order; it is parked (internal_error)',
      );
      this.life.haltOrder(slot, error);
      return false;
    }
    // The latest listing that confirmed it at rest (it showed the status the order rests with), as the live machine
    // would have taken it, before the event that woke it. Its record changes with it and is written like any change.
    if (listedAt !== undefined) {
      const { lastStatus } = actor.status();
      const listed: OrderActorEvent = { type: 'LISTED', status: lastStatus ?? '', at: listedAt };
      if (lastStatus !== null && actor.can(listed)) actor.send(listed);
    }
    this.state.opts.metrics?.orderReactivated(reason);
    // Woken for nothing (a hint its state does not want, a duplicate command): quiet again after the idle time.
    this.noteQuiet(slot);
    return true;
  }
}
