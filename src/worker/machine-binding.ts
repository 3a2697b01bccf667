// The seam between the order host and the order machine: how to start, restore, drive and persist one order's
// actor. The host knows nothing of XState; this interface is all it needs.
import type { UnrecordedDeposit } from '../../machines/order-events.ts';
import type { FetchOrderInput, FetchOrderOutput, OrderEvent } from '../../machines/order-types.ts';
import type { OrderCreateCommand } from '../contract/commands.ts';
import type { EventPayload } from './order-journal.ts';

/**
 * An event of an order's history as the machine emits it (its `emitted` type, OrderDomainEvent) or the host adds
 * it: the contract's payload without the envelope fields.
 */
export type EmittedDomainEvent = EventPayload;

/** The events the order machine takes, as the machine declares them (machines/order-types.ts). */
export type OrderActorEvent = OrderEvent;

/** The answer to a routine poll the host made for a resting order (GET /orders/{unique_reference}/, at its clock). */
export type PollAnswer = FetchOrderOutput;

/**
 * The code of a status read the runtime refused before sending it (its status reads out at once are at capacity):
 * not a failure of the exchange. The machine takes it as a poll's failure; the host puts a poll at rest off instead.
 */
export const statusReadsAtCapacity = 'status_reads_at_capacity';

/** True for a status read refused by the runtime at capacity (statusReadsAtCapacity). */
export function isStatusReadRefusal(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code === statusReadsAtCapacity
  );
}

/** A resting order's routine poll that is due: the GET the host makes for it, and the order's next other deadline. */
export interface RestingPoll {
  request: FetchOrderInput;
  nextDeadline: number | null;
}

export interface OrderActorStatus {
  /** The machine's state value, flattened (for logs and metrics). */
  state: string;
  terminal: boolean;
  uniqueReference: string | null;
  /**
   * When the order's routine poll was last reset (its next poll minus the poll interval, epoch ms), if ever: the
   * reconciliation sweep nudges an order whose reset is overdue.
   */
  lastConfirmedAt: number | null;
  /** The exchange status last confirmed by a GET, null before the exchange order exists. */
  lastStatus: string | null;
  /** When that status was last confirmed, by a GET or by a bulk listing showing the same status (epoch ms). */
  confirmedAt: number | null;
  /** The deposit transaction hash already accepted for this order (pending or recorded), if any. */
  depositTxHash: string | null;
  /** When the GET confirming hints that wait for the ones after them is due (epoch ms); null or absent: none waits. */
  hintDueAt?: number | null;
}

export interface OrderActorHandle {
  can(event: OrderActorEvent): boolean;
  send(event: OrderActorEvent): void;
  /** The current snapshot's status (the same object until the order's next transition: not to be changed). */
  status(): Readonly<OrderActorStatus>;
  /** The JSON-serialisable persisted form of the current snapshot. */
  persisted(): unknown;
  stop(): void;
}

export interface StartOrderOptions {
  orderId: string;
  now: number;
  /** Called after every transition with the domain events it emitted (possibly none). */
  onChange: (emitted: EmittedDomainEvent[]) => void;
  /** Called when the actor fails in a way the machine did not model (a bug): the host fails the order safely. */
  onError: (error: unknown) => void;
  /** The timers of the order's `after` delays (default: the global ones); the host runs each in a trace. */
  clock?: {
    setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
    clearTimeout(id: unknown): void;
  };
}

/** What the order host answers before an order's exchange call: the host is the only one that knows. */
export interface OrderBarrier {
  /** Resolves when the order's state, with its intent, is durable; rejects when the order is no longer ours. */
  durable: (orderId: string) => Promise<void>;
  /** True while this replica still holds the order's lease: checked immediately before a request leaves. */
  mayAct: (orderId: string) => boolean;
  /**
   * The order whose durable record already names this unique_reference, if any (the state topic's view); null when
   * an order of a partition this replica does not own names it (only where it lives is held here, not its id).
   */
  ownerOfReference: (uniqueReference: string) => string | null | undefined;
}

export interface MachineBinding {
  create(command: OrderCreateCommand, opts: StartOrderOptions): OrderActorHandle;
  restore(persisted: unknown, opts: StartOrderOptions): OrderActorHandle;
  /**
   * Whether an order stored in this persisted form is only waiting (no call in flight, nothing to do before a
   * timer), and until when; null while it must keep its actor. The host may then stop the actor (or, restoring
   * it, not start one) and restore it from the same persisted form at that time or on the next event.
   */
  resting(persisted: unknown): RestingOrder | null;
  /**
   * For an order resting in this persisted form: how it would rest once the machine took this bulk listing row as a
   * confirmation (its next poll moved out), without an actor; null when the row is anything else for it (it must be
   * woken and handed the row). The runtime hands the row to the machine when the order wakes.
   */
  restingAfterListing?(persisted: unknown, listing: { status: string; at: number }): RestingOrder | null;
  /**
   * True when the change from the `written` persisted form to `next` need not be written: there is none (the form
   * written already, as when a command's own write took the transition its actor's change also asked a write for),
   * or it only starts a status poll (a GET), whose answer is written unless it only confirms (confirmsOnly), or it
   * only starts a quote request (a GET) whose quote is written with the create intent; a restart re-enters the
   * written state and polls (or asks for a quote slot) again.
   */
  unwritten?(written: unknown, next: unknown): boolean;
  /**
   * True when the change from the `written` persisted form to `next` only confirms what is written (a GET or a listing
   * found the order as written): not written either, but kept in memory as the order's record (it rests with it
   * until its next poll); a restart re-reads the written form and polls again.
   */
  confirmsOnly?(written: unknown, next: unknown): boolean;
  /**
   * For an order resting in this persisted form: the routine poll it is due for at `now` when that poll is all it has
   * to do, for the host to make without waking it (its answer goes to confirmedByPoll, or to the woken machine as
   * POLLED / POLL_FAILED); null when it must be woken for its deadline.
   */
  pollDueAtRest?(persisted: unknown, now: number): RestingPoll | null;
  /**
   * The persisted form once the machine took this answer to that poll, and how the order rests then, when the answer
   * only confirms the order (not written, like confirmsOnly); null when it has news for the machine (POLLED).
   */
  confirmedByPoll?(
    persisted: unknown,
    answer: PollAnswer,
  ): { machine: unknown; resting: RestingOrder } | null;
  /**
   * For an order stored in this persisted form: the deposit its client submitted that the exchange has not recorded,
   * as an end event reports it (machines/order-deposits.ts); null when there is none. The host asks when it ends an
   * order itself (an abandoned halted order).
   */
  unrecordedDeposit?(persisted: unknown): UnrecordedDeposit | null;
}

/** An order stored only waiting: what a passivated slot keeps instead of its actor. */
export interface RestingOrder {
  /** When its machine next has anything to do on its own (epoch ms). */
  wakeAt: number;
  /** Its machine state value (as OrderActorStatus.state parses). */
  stateValue: unknown;
  /** As OrderActorStatus.confirmedAt. */
  confirmedAt: number | null;
  /**
   * When wakeAt is only the order's routine poll: the latest that wake may be put off to while the replica is
   * saturated (60 s after the last confirmation at most, never past another deadline). Absent or null otherwise.
   */
  pollDeferrableUntil?: number | null;
}
