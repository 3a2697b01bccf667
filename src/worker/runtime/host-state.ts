// What the host's parts share: the slots of the orders driven here (by id and by exchange order), the partitions
// assigned, the loads and wakes under way, and whether the Kafka writer failed for good. The parts get this object,
// not each other: each reads and keeps it as its own rules say, and only slot-phases.ts changes a slot's phase.
import type { Logger } from '../../telemetry/logger.ts';
import type { OrderHostOptions } from './ports.ts';
import { isStopped, type OrderSlot } from './slot-phases.ts';

export class HostState {
  slots = new Map<string, OrderSlot>();
  /** The slots by their exchange order's reference (ownerOfReference runs for every create: no scan of every slot). */
  slotsByReference = new Map<string, OrderSlot>();
  /** Command partitions assigned to this replica (an order is driven only while its partition is here). */
  readonly assigned = new Set<number>();
  /** Orders being (re)loaded after a lost lease: their commands wait instead of being refused. */
  readonly reloading = new Map<string, Promise<void>>();
  /** Resting orders whose suspended lease is being taken up again (from Redis) to wake them. */
  readonly resuming = new Map<string, Promise<void>>();
  /** The Kafka writer failed for good (halt): nothing more is written or done. */
  writerFailed = false;
  readonly opts: OrderHostOptions;
  readonly logger: Logger;

  constructor(opts: OrderHostOptions) {
    this.opts = opts;
    this.logger = opts.logger.child({ component: 'order-host' });
  }

  /** True while this replica may act for the order: checked as each exchange request leaves the process. */
  mayAct(orderId: string): boolean {
    const slot = this.slots.get(orderId);
    return Boolean(slot && !isStopped(slot) && !this.writerFailed && this.opts.leases.isValid(orderId));
  }

  /**
   * The order whose durable record names this exchange order, if any: null when it is an order of a partition this
   * replica does not own (its id is not held here).
   */
  ownerOfReference(uniqueReference: string): string | null | undefined {
    const slot = this.slotsByReference.get(uniqueReference);
    if (slot && this.slots.get(slot.orderId) === slot && slot.record.unique_reference === uniqueReference)
      return slot.orderId;
    return this.opts.state.orderIdByReference(uniqueReference);
  }

  /** Keeps slotsByReference in step with a slot's record (called wherever a slot's record is set). */
  indexReference(slot: OrderSlot): void {
    const reference = slot.record.unique_reference;
    if (reference && this.slotsByReference.get(reference) !== slot)
      this.slotsByReference.set(reference, slot);
  }

  /** A slot leaves the host: it no longer answers for its order or its reference. */
  dropSlot(slot: OrderSlot): void {
    if (this.slots.get(slot.orderId) === slot) this.slots.delete(slot.orderId);
    const reference = slot.record.unique_reference;
    if (reference && this.slotsByReference.get(reference) === slot) this.slotsByReference.delete(reference);
  }

  /** True while the slot is the one driving its order here. */
  holds(slot: OrderSlot): boolean {
    return this.slots.get(slot.orderId) === slot;
  }
}
