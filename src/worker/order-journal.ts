// An order's history as written to Kafka: each append gives its events the next seq numbers and their envelope
// (event_id `<order>:<seq>`, occurred_at), builds the order's next state record (rev + 1, seq, the remembered
// commands) and writes both, with the offset of the command that caused them, in one transaction - only while the
// guard (the order's lease) holds. A committed record becomes the state store's latest. A record is written only on
// top of one that was: once an order's record was refused or failed, the appends queued on top of it are refused
// too (their seq would follow events never published), until a record of the order built on a durable one commits.
import { rememberedCommandIds } from '../contract/contract-rules.ts';
import type { EventEnvelopeFields, PublishedEvent } from '../contract/events.ts';
import type { OrderRecord } from '../kafka/order-state-store.ts';
import type { OffsetToCommit, OutboundRecord } from '../kafka/transactional-writer.ts';

/** One published event without its envelope (the journal adds it), per event type (distributes over the union). */
type WithoutEnvelope<Event> = Event extends unknown ? Omit<Event, EventEnvelopeFields> : never;

/**
 * An event as the machine or the host states it: its payload, without the envelope. Typed from the contract
 * (src/contract/events.ts), so an event the contract does not describe does not compile.
 */
export type EventPayload = WithoutEnvelope<PublishedEvent>;

export interface JournalEntry {
  /** The order's latest record, which this entry extends. */
  record: OrderRecord;
  /** The fencing token of the lease this write is made under. */
  fence: number;
  events: readonly EventPayload[];
  /** The command to remember ([command_id, content hash]): the same one again is recognised. */
  command?: [string, string] | undefined;
  /** What else changes in the state record (the machine's persisted form, terminal...). */
  changes?: Partial<Pick<OrderRecord, 'unique_reference' | 'terminal' | 'halted' | 'machine' | 'answering'>>;
  /** The offset of the command that caused the entry, committed with it. */
  offset?: OffsetToCommit | undefined;
  /** Checked at commit time: false drops the whole entry (offset included). */
  guard: () => boolean;
}

/** The order journal as the host uses it. */
export interface Journal {
  /**
   * The next state record at once; `written` resolves true once committed, false when the guard refused it (or the
   * record it extends was never written); rejects when the write failed.
   */
  append(entry: JournalEntry): { record: OrderRecord; written: Promise<boolean> };
  /**
   * An event outside any order's history (seq 0, an event_id of its own), with the offset of its command: a
   * rejection of a command that names no order this replica may extend.
   */
  publishUnsequenced(
    orderId: string | null,
    event: EventPayload,
    eventId: string,
    offset: OffsetToCommit,
  ): Promise<boolean>;
  /** Commits a command's offset and nothing else (a duplicate, a consumed hint). */
  commitOffset(offset: OffsetToCommit): Promise<boolean>;
  /**
   * Writes a command's copy to its order's partition of the commands topic and commits the offset where it arrived,
   * in one transaction: the command is handled once, at its home (command-routing.ts).
   */
  forwardCommand(copy: OutboundRecord, offset: OffsetToCommit): Promise<boolean>;
}

export interface OrderJournalOptions {
  writer: {
    write(records: OutboundRecord[], offsets?: OffsetToCommit[], guard?: () => boolean): Promise<boolean>;
  };
  /** Told of every record committed. */
  store: { apply(record: OrderRecord): void };
  topics: { events: string; state: string };
  now: () => number;
  /** Commands remembered per order for deduplication (default rememberedCommandIds, 200: the contract says so). */
  maxRememberedCommands?: number;
}

export class OrderJournal implements Journal {
  private readonly opts: OrderJournalOptions;
  private readonly maxCommands: number;
  /** Per order, the lowest rev of its records known never to be written (refused or failed); the rest are written. */
  private readonly unwrittenFrom = new Map<string, number>();

  constructor(opts: OrderJournalOptions) {
    this.opts = opts;
    this.maxCommands = opts.maxRememberedCommands ?? rememberedCommandIds;
  }

  append(entry: JournalEntry): { record: OrderRecord; written: Promise<boolean> } {
    const { record: previous } = entry;
    const orderId = previous.order_id;
    let seq = previous.seq;
    const records = entry.events.map((event) => {
      seq++;
      const { type, ...payload } = event;
      return this.eventRecord(orderId, {
        type,
        ...payload,
        ...this.envelope(orderId, seq, `${orderId}:${seq}`),
      });
    });
    const record: OrderRecord = {
      ...previous,
      fence: entry.fence,
      rev: previous.rev + 1,
      seq,
      updated_at: new Date(this.opts.now()).toISOString(),
      commands: entry.command
        ? [...previous.commands, entry.command].slice(-this.maxCommands)
        : previous.commands,
      ...entry.changes,
    };
    // No command waits for its answer: the record leaves the field out rather than carry an empty list.
    if (record.answering?.length === 0) delete record.answering;
    records.push({
      topic: this.opts.topics.state,
      key: orderId,
      partition: previous.partition,
      value: JSON.stringify(record),
      // Read for the order's latest record only: a later one of this order in the same transaction replaces it.
      latestOnly: true,
    });
    // Checked at commit time, as the guard is: the record this one extends may have failed after this was queued.
    const guard = (): boolean => !this.extendsUnwritten(orderId, previous.rev) && entry.guard();
    const written = this.opts.writer.write(records, entry.offset ? [entry.offset] : [], guard).then(
      (done) => {
        // A record refused by the guard was never written: the store keeps the last durable one.
        if (done) {
          this.opts.store.apply(record);
          this.unwrittenFrom.delete(orderId);
        } else this.noteUnwritten(orderId, record.rev);
        return done;
      },
      (error: unknown) => {
        this.noteUnwritten(orderId, record.rev);
        throw error;
      },
    );
    return { record, written };
  }

  /** True when the record of rev `previousRev` of the order, or one it extends, was never written. */
  private extendsUnwritten(orderId: string, previousRev: number): boolean {
    const from = this.unwrittenFrom.get(orderId);
    return from !== undefined && previousRev >= from;
  }

  private noteUnwritten(orderId: string, rev: number): void {
    const from = this.unwrittenFrom.get(orderId);
    if (from === undefined || rev < from) this.unwrittenFrom.set(orderId, rev);
  }

  publishUnsequenced(
    orderId: string | null,
    event: EventPayload,
    eventId: string,
    offset: OffsetToCommit,
  ): Promise<boolean> {
    return this.opts.writer.write(
      [this.eventRecord(orderId, { ...event, ...this.envelope(orderId, 0, eventId) })],
      [offset],
    );
  }

  commitOffset(offset: OffsetToCommit): Promise<boolean> {
    return this.opts.writer.write([], [offset]);
  }

  forwardCommand(copy: OutboundRecord, offset: OffsetToCommit): Promise<boolean> {
    return this.opts.writer.write([copy], [offset]);
  }

  private envelope(
    orderId: string | null,
    seq: number,
    eventId: string,
  ): { event_id: string; order_id: string | null; seq: number; occurred_at: string } {
    return {
      event_id: eventId,
      order_id: orderId,
      seq,
      occurred_at: new Date(this.opts.now()).toISOString(),
    };
  }

  /**
   * An event for TOPIC_EVENTS, keyed by order_id. Its partition is left to the key's hash (not tied to the command
   * partition): the events topic may have been created with another partition count, and one key always lands on
   * one partition, which is what keeps an order's events in order.
   */
  private eventRecord(
    orderId: string | null,
    event: Readonly<Pick<PublishedEvent, 'type' | 'event_id'>>,
  ): OutboundRecord {
    return {
      topic: this.opts.topics.events,
      key: orderId ?? String(event.event_id),
      value: JSON.stringify(event),
      headers: { 'event-type': String(event.type) },
    };
  }
}
