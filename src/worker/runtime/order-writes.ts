// An order's writes: its pending events and current state record appended to its journal in one transaction (only
// while its lease holds), what is kept unwritten (a change that only confirms the record), and the barrier a call
// waits at (durable). It reports what became of a write to whoever asked for it (the lifecycle): it does not decide
// what follows.
import { answerOf } from '../../contract/command-answers.ts';
import type { OffsetToCommit } from '../../kafka/transactional-writer.ts';
import { unrecordedDepositAlerts } from '../deposit-alerts.ts';
import type { EmittedDomainEvent, MachineBinding } from '../machine-binding.ts';
import type { EventPayload } from '../order-journal.ts';
import type { HostState } from './host-state.ts';
import { actorOf, isHalted, isStopped, trailOf, type OrderSlot } from './slot-phases.ts';

/** What a write carries besides the order's pending events and state. */
export interface WriteExtra {
  offset?: OffsetToCommit;
  command?: [string, string];
  events?: EventPayload[];
  /** The host itself ends the order (an abandoned halted order). */
  terminal?: boolean;
}

/**
 * What the caller of a write hears of it: it committed, its record is durable (and still the slot's), or it failed
 * (heard before anyone waiting for the write hears of it).
 */
export interface WriteReport {
  committed(slot: OrderSlot): void;
  durable(slot: OrderSlot): void;
  failed(slot: OrderSlot, error: unknown): void;
}

export class OrderWrites {
  private readonly state: HostState;
  private readonly binding: MachineBinding;

  constructor(state: HostState, binding: MachineBinding) {
    this.state = state;
    this.binding = binding;
  }

  /**
   * Waits until everything this order's actor has recorded so far is durable in Kafka. Rejects unless the latest
   * write committed (refused by the lease guard, or the writer failed): no call may go out on an unwritten intent.
   */
  async durable(orderId: string): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    const slot = this.state.slots.get(orderId);
    if (!slot) throw new Error(`order ${orderId} is not driven by this replica`);
    await slot.lastWrite;
    if (isStopped(slot) || this.state.writerFailed || !this.state.opts.leases.isValid(orderId))
      throw new Error(`order ${orderId} is no longer driven by this replica`);
  }

  /**
   * A change of the order's machine that only confirms what is written: not written, but kept in memory as the
   * order's record, in the slot and in the state store's record of the same rev (the order is held once).
   */
  holdUnwritten(slot: OrderSlot, machine: unknown): void {
    slot.record.machine = machine;
    this.state.opts.state.amend?.(slot.orderId, slot.record.rev, machine);
  }

  /**
   * Appends the order's pending events and its current state record to its journal (one transaction), optionally
   * with the offset of the command that caused them and with that command remembered for deduplication. `report`
   * hears when the record is durable, and of a failure before anyone waiting for the write does.
   */
  append(slot: OrderSlot, extra: WriteExtra, report: WriteReport): Promise<boolean> {
    if (isStopped(slot)) return Promise.resolve(false);
    const { opts } = this.state;
    const actor = actorOf(slot);
    // A change that only starts a status poll is not written (the GET moves nothing; its answer is written unless
    // it only confirms the record), nor one that only confirms what is written (its time and the next poll): the
    // slot keeps that one in memory, with the record of the same rev.
    let machine: unknown;
    if (actor && !slot.record.halted) {
      machine = actor.persisted();
      const bare =
        slot.pendingEvents.length === 0 &&
        !extra.events?.length &&
        extra.offset === undefined &&
        extra.command === undefined &&
        extra.terminal !== true;
      if (bare && this.binding.confirmsOnly?.(slot.record.machine, machine)) {
        this.holdUnwritten(slot, machine);
        if (slot.durableRev === slot.record.rev) report.durable(slot);
        return Promise.resolve(true);
      }
      if (bare && this.binding.unwritten?.(slot.record.machine, machine)) return Promise.resolve(true);
    }
    const events = [
      ...slot.pendingEvents.splice(0, slot.pendingEvents.length),
      ...answered(slot, extra.events ?? []),
    ];
    const eventTypes = events.map((event) => event.type);
    // Webhook-to-event latency: from the hint to the first event a later write publishes (the poll's answer). A
    // hint whose poll found nothing new is forgotten after a minute rather than measured against a later change.
    let webhookAt: number | undefined;
    const trail = trailOf(slot);
    if (trail?.webhookAt !== undefined && extra.offset === undefined) {
      if (eventTypes.length) webhookAt = trail.webhookAt;
      if (eventTypes.length || opts.now() - trail.webhookAt > 60_000) trail.webhookAt = undefined;
    }
    const status = actor?.status();
    const terminal = extra.terminal === true || (status?.terminal ?? slot.record.terminal);
    // A finished order answers nothing more.
    if (terminal) slot.answering = [];
    const { record, written } = opts.journal.append({
      record: slot.record,
      fence: slot.fence,
      events,
      command: extra.command,
      offset: extra.offset,
      changes: {
        unique_reference: status?.uniqueReference ?? slot.record.unique_reference,
        terminal,
        answering: slot.answering,
        // A live actor that writes again has recovered from an earlier halt.
        halted: actor ? null : (slot.record.halted ?? null),
        machine: actor ? (machine ?? actor.persisted()) : slot.record.machine,
      },
      guard: () => !isStopped(slot) && opts.leases.isValid(slot.orderId),
    });
    slot.record = record;
    this.state.indexReference(slot);
    const write = written.then((done) => {
      if (done) {
        report.committed(slot);
        if (slot.record === record) {
          slot.durableRev = record.rev;
          report.durable(slot);
        }
        if (eventTypes.length) opts.metrics?.eventsCommitted(eventTypes);
        if (eventTypes.length) this.alertUnrecordedDeposits(slot, events);
        if (webhookAt !== undefined) opts.metrics?.webhookToEvent((opts.now() - webhookAt) / 1000);
      }
      return done;
    });
    // Before anyone waiting for this write (a command's settleCommand, durable()) hears of its failure.
    write.catch((error: unknown) => report.failed(slot, error));
    const lastWrite = write.then((done) => {
      if (!done) throw new Error(`order ${slot.orderId}: a write was refused (lease lost)`);
    });
    lastWrite.catch(() => {}); // observed through durable(); never an unhandled rejection
    slot.lastWrite = lastWrite;
    return write;
  }

  /** An end just committed left a deposit unrecorded at the exchange: the operator hears of it (log and metric). */
  private alertUnrecordedDeposits(slot: OrderSlot, events: readonly EventPayload[]): void {
    for (const alert of unrecordedDepositAlerts(events)) {
      this.state.logger.warn(
        {
          orderId: slot.orderId,
          outcome: alert.outcome,
          reason: alert.reason,
          state: alert.state,
          txHash: alert.txHash,
        },
        'the order ended with a deposit transaction the exchange has not recorded on it: trace it and refund or credit the user (docs/operations.md, "Deposits not recorded")',
      );
      this.state.opts.metrics?.depositUnrecorded?.(alert.outcome, alert.state);
    }
  }
}

/** The events as published: each that answers an open command carries its command_id (which it may close). */
export function answered<E extends EmittedDomainEvent>(slot: OrderSlot, events: readonly E[]): E[] {
  if (slot.answering.length === 0) return [...events];
  return events.map((event) => {
    const { commandId, open } = answerOf(slot.answering, event.type);
    slot.answering = open;
    return commandId === undefined ? event : { ...event, command_id: commandId };
  });
}

/** Stopped or halted, or the writer failed: nothing is to be done for the order here. */
export function outOfReach(state: HostState, slot: OrderSlot): boolean {
  return isStopped(slot) || isHalted(slot) || state.writerFailed;
}
