// The routine poll of a resting order, made without waking it: the host makes the machine's GET (a read: no lease,
// nothing to make durable first) and hands the answer back to its caller, which applies it (the lifecycle). Also
// where such a poll is put off: while the replica is saturated, or while maxPollsAtRest polls at rest are out.
import { context, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { onceEvery } from '../../telemetry/logger.ts';
import { originLink } from '../../telemetry/order-sampler.ts';
import { withOrderId } from '../../telemetry/propagation.ts';
import { isStatusReadRefusal, type MachineBinding, type PollAnswer } from '../machine-binding.ts';
import type { HostState } from './host-state.ts';
import type { PollDeferralReason } from './ports.ts';
import { pollPutOffTo } from './rest-rules.ts';
import { isOut, originOf, restOf, type OrderSlot, type Resting } from './slot-phases.ts';
import { orderAttributes, tracer } from './tracing.ts';

/** Where a poll at rest hands its outcome: an answer to apply, or a failure (other than a refusal before sending). */
export interface PollTaker {
  answered(answer: PollAnswer): void;
  failed(error: unknown): void;
}

export class PollsAtRest {
  private readonly state: HostState;
  private readonly binding: MachineBinding;
  /** Moves a resting order's wake (the lifecycle's deadline queue). */
  private readonly scheduleWake: (orderId: string, at: number) => void;
  /** Polls made at rest that are out now, and how many may be. */
  private out = 0;
  private readonly max: number;
  /** Says that routine polls wait for the calls at rest already out at most once a minute. */
  private readonly atCapacityWarning = onceEvery(60_000);

  constructor(
    state: HostState,
    binding: MachineBinding,
    scheduleWake: (orderId: string, at: number) => void,
  ) {
    this.state = state;
    this.binding = binding;
    this.scheduleWake = scheduleWake;
    this.max = Math.max(1, Math.floor(state.opts.maxPollsAtRest ?? 100));
  }

  /**
   * A resting order due for its routine poll and for nothing else is polled without waking it; true when it was
   * (or put off a step for capacity), false when it must be woken instead. An answer that only confirms the order
   * moves its confirmation and next poll, as the machine would, and it rests on: no actor, no lease taken up from
   * Redis, nothing written (as for a live order's confirming poll). Any other answer, or a failure, wakes it and is
   * handed to it (POLLED, POLL_FAILED): `take` hears which, in the poll's trace. While the GET is out the order
   * wakes as before for anything else (an event, its next other deadline), and the GET is then aborted: the live
   * machine polls for itself.
   */
  poll(slot: OrderSlot, rest: Resting, now: number, take: PollTaker): boolean {
    const pollResting = this.state.opts.pollResting;
    if (!pollResting || !this.binding.pollDueAtRest || !this.binding.confirmedByPoll) return false;
    if (isOut(slot) || this.state.writerFailed || !this.state.assigned.has(slot.partition)) return false;
    const due = this.binding.pollDueAtRest(slot.record.machine, now);
    if (due === null) return false;
    if (this.out >= this.max) {
      this.deferAtCapacity(slot, rest, now, due.nextDeadline);
      return true;
    }
    const polling = new AbortController();
    rest.polling = polling;
    this.out++;
    if (due.nextDeadline !== null) {
      rest.wakeAt = due.nextDeadline;
      this.scheduleWake(slot.orderId, due.nextDeadline);
    }
    const rev = slot.record.rev;
    const current = (): boolean =>
      restOf(slot) === rest &&
      rest.polling === polling &&
      this.state.holds(slot) &&
      slot.record.rev === rev &&
      !isOut(slot) &&
      !this.state.writerFailed;
    const mayAsk = (): void => {
      if (!current()) throw new Error(`order ${slot.orderId} no longer rests here`);
    };
    const origin = originOf(slot);
    const span = tracer.startSpan(
      'order poll at rest',
      {
        root: true,
        kind: SpanKind.INTERNAL,
        attributes: orderAttributes(slot),
        ...(origin ? { links: [originLink(origin)] } : {}),
      },
      ROOT_CONTEXT,
    );
    const ctx = withOrderId(trace.setSpan(ROOT_CONTEXT, span), slot.orderId);
    void context
      .with(ctx, () => pollResting(due.request, mayAsk, polling.signal))
      .then(
        (answer) => {
          if (!current()) return;
          rest.polling = undefined;
          context.with(ctx, () => take.answered(answer));
        },
        (error: unknown) => {
          if (!current()) return;
          rest.polling = undefined;
          if (isStatusReadRefusal(error)) {
            // Refused before it left (the replica's status reads are at capacity): nothing failed at the exchange,
            // so the order is not woken to note a failure; its poll waits a step at rest, as at maxPollsAtRest.
            span.setAttribute('worker.poll.deferred', true);
            rest.wakeAt = this.state.opts.now();
            this.deferAtCapacity(slot, rest, rest.wakeAt, due.nextDeadline);
            return;
          }
          span.recordException(error as Error);
          this.state.opts.metrics?.polledAtRest?.('failed');
          context.with(ctx, () => take.failed(error));
        },
      )
      .finally(() => {
        this.out--;
        span.end();
      });
    return true;
  }

  /**
   * A resting order's routine poll, due now (its wake came), put off by one step, never past `bound`: its wake moves
   * by a whole step from where it was due, so each order keeps its phase within the step.
   */
  putOff(orderId: string, rest: Resting, now: number, bound: number, reason: PollDeferralReason): void {
    rest.wakeAt = pollPutOffTo(rest.wakeAt, now, bound);
    this.scheduleWake(orderId, rest.wakeAt);
    this.state.opts.metrics?.pollDeferred?.(reason);
  }

  /**
   * The routine poll of a resting order while maxPollsAtRest polls at rest are out: it waits a step at rest (a
   * deadline in the timer heap, nothing else held), at its own phase within the step, and never past the order's
   * next other deadline (pollDueAtRest says none is due yet). Unlike a saturated replica's deferral this one may run
   * past 60 s after the last confirmation: the calls already out are what the budget and the exchange can take, and
   * a poll made now would only queue behind them, in memory.
   */
  private deferAtCapacity(slot: OrderSlot, rest: Resting, now: number, nextDeadline: number | null): void {
    this.putOff(slot.orderId, rest, now, nextDeadline ?? Number.POSITIVE_INFINITY, 'calls_at_capacity');
    if (this.atCapacityWarning(now)) {
      this.state.logger.warn(
        { pollsAtRestOut: this.out, maxPollsAtRest: this.max },
        'routine polls of resting orders wait: the polls already out are all the request budget and the exchange take; open orders are confirmed less often than the poll interval (worker_polls_deferred_total{reason="calls_at_capacity"})',
      );
    }
  }
}
