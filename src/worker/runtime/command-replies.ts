// The answers a command gets besides its order's own change: command.rejected (in the order's history when it
// arrived where the order lives, else unsequenced) and a forward to the order's home partition. Both commit the
// command's offset with what they write.
import { rejectedCommandFingerprint } from '../../contract/events.ts';
import { WorkerError } from '../../errors.ts';
import type { InboundCommandMessage } from '../../kafka/command-consumer.ts';
import type { OffsetToCommit } from '../../kafka/transactional-writer.ts';
import type { Rejection } from '../command-intake.ts';
import { forwardedHeaders, forwardingOf } from '../command-routing.ts';
import type { EventPayload } from '../order-journal.ts';
import type { CommandPipeline } from './command-pipeline.ts';
import type { CommandWaits } from './command-waits.ts';
import type { HostState } from './host-state.ts';
import type { OrderLifecycle } from './lifecycle.ts';
import { noteOutcome } from './tracing.ts';

export class CommandReplies {
  private readonly state: HostState;
  private readonly lifecycle: OrderLifecycle;
  private readonly pipeline: CommandPipeline;
  private readonly waits: CommandWaits;

  constructor(state: HostState, lifecycle: OrderLifecycle, pipeline: CommandPipeline, waits: CommandWaits) {
    this.state = state;
    this.lifecycle = lifecycle;
    this.pipeline = pipeline;
    this.waits = waits;
  }

  /**
   * Forwards a command to its order's home partition (command-routing.ts): a copy of the message (key, value and
   * headers, plus where it first arrived) written with the offset where it arrived, in one transaction.
   */
  async forward(orderId: string, message: InboundCommandMessage, partition: number): Promise<void> {
    noteOutcome('forwarded');
    const offset: OffsetToCommit = {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    };
    this.state.logger.debug(
      { orderId, from: { partition: message.partition, offset: message.offset }, to: partition },
      "command forwarded to its order's partition",
    );
    const copy = {
      topic: message.topic,
      partition,
      key: orderId,
      value: message.value?.toString('utf8') ?? '',
      headers: forwardedHeaders(message.headers, offset),
    };
    await this.pipeline.settleCommand(offset, this.state.opts.journal.forwardCommand(copy, offset), null);
  }

  /** The command arrived where its order lives: keyed by the order and on the order's partition (when it exists). */
  routedHere(orderId: string, message: InboundCommandMessage): boolean {
    if (message.key !== orderId) return false;
    const record = this.state.slots.get(orderId)?.record ?? this.state.opts.state.get(orderId);
    return !record || record.partition === message.partition;
  }

  /**
   * Publishes command.rejected: a bounded excerpt and a hash of the command as received, never the command itself.
   * For an existing order, when the command arrived where the order lives (its key and partition), it is part of
   * the order's history (next seq, recorded in the state record so a redelivery is not answered twice). Otherwise
   * - no such order, or a null-keyed or mis-keyed or unroutable command naming an order of another partition, which
   * this replica must not touch - it carries seq 0 and an event_id from its source offset.
   */
  async reject(orderId: string | null, message: InboundCommandMessage, body: Rejection): Promise<void> {
    noteOutcome('rejected', body.reason);
    this.state.logger.warn(
      {
        orderId,
        commandId: body.command_id,
        reason: body.reason,
        detail: body.message,
        source: { partition: message.partition, offset: message.offset },
      },
      'command rejected',
    );
    const offset: OffsetToCommit = {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    };
    const { remember, ...fields } = body;
    const forwarded = forwardingOf(message.headers);
    const rejected: EventPayload = {
      type: 'command.rejected',
      ...fields,
      ...rejectedCommandFingerprint(message.value),
      source: { topic: message.topic, partition: message.partition, offset: message.offset },
      ...(forwarded ? { forwarded_from: forwarded.from } : {}),
    };
    const inHistory = orderId !== null && this.routedHere(orderId, message);
    const slot = inHistory ? this.state.slots.get(orderId) : undefined;
    if (slot && orderId) {
      const written = await this.lifecycle.persist(slot, {
        offset,
        events: [rejected],
        ...(remember ? { command: remember } : {}),
      });
      await this.pipeline.requireWritten(written, orderId, slot);
      return;
    }
    const record = inHistory ? this.state.opts.state.get(orderId) : undefined;
    if (record && orderId) {
      // A finished order (no actor): extend its history under a fresh lease.
      const fence = await this.lifecycle.acquireLease(
        orderId,
        record.fence,
        record.partition,
        this.waits.forLease(),
      );
      if (fence === null) {
        throw new WorkerError(
          'partition_revoked',
          `partition ${record.partition} was revoked while a command for ${orderId} was refused`,
          { retryable: true },
        );
      }
      const { written } = this.state.opts.journal.append({
        record,
        fence,
        events: [rejected],
        command: remember,
        offset,
        guard: () => this.state.opts.leases.isValid(orderId),
      });
      // Let go of whatever the write did: a lease kept after a failed write would hold the order for ever.
      const done = await written.finally(() => this.state.opts.leases.release(orderId).catch(() => {}));
      await this.pipeline.requireWritten(done, orderId);
      return;
    }
    const eventId = `rejected:${message.topic}:${message.partition}:${message.offset}`;
    await this.state.opts.journal.publishUnsequenced(orderId, rejected, eventId, offset);
  }
}
