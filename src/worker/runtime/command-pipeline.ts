// How a command's write is settled before the partition's next command: waited for (depth 1), or left to commit
// while the next is handled (COMMAND_PIPELINE_DEPTH), its partition delivered again from it if it is refused. A
// refused write of an order reloads it (as after a lost lease) before the command comes again.
import { WorkerError } from '../../errors.ts';
import type { InboundCommandMessage } from '../../kafka/command-consumer.ts';
import type { OffsetToCommit } from '../../kafka/transactional-writer.ts';
import type { CommandWaits } from './command-waits.ts';
import type { HostState } from './host-state.ts';
import type { OrderLifecycle } from './lifecycle.ts';
import { isStopped, type OrderSlot } from './slot-phases.ts';

export class CommandPipeline {
  private readonly state: HostState;
  private readonly lifecycle: OrderLifecycle;
  private readonly waits: CommandWaits;
  private readonly depth: number;
  /** Per partition, the pipelined commands whose writes are in flight, oldest first (settled, never rejected). */
  private readonly pipelines = new Map<number, Promise<void>[]>();
  /**
   * Per partition, the offset of a refused pipelined command it is being delivered again from: a command past it
   * that reaches its decision meanwhile is left undecided (it comes again after the refused one).
   */
  private readonly redelivering = new Map<number, bigint>();

  constructor(state: HostState, lifecycle: OrderLifecycle, waits: CommandWaits) {
    this.state = state;
    this.lifecycle = lifecycle;
    this.waits = waits;
    this.depth = state.opts.rewind ? Math.max(1, state.opts.commandPipelineDepth ?? 1) : 1;
  }

  /** A new assignment starts each partition from the group's committed offset: no redelivery is awaited. */
  clearRedeliveries(): void {
    this.redelivering.clear();
  }

  /**
   * A command's effects were refused at commit time because the order's lease was lost meanwhile: nothing of it
   * (offset included) was written. Throwing makes the consumer deliver the message again once the order is
   * reloaded, so the command is neither lost nor applied twice.
   */
  async requireWritten(written: boolean, orderId: string, slot?: OrderSlot): Promise<void> {
    if (written) return;
    if (slot) this.dropRefused(slot);
    await this.waits.bounded(this.state.reloading.get(orderId), `the reload of order ${orderId}`);
    throw new WorkerError(
      'command_not_committed',
      `order ${orderId} lost its lease while a command was applied; it will be redelivered`,
      { retryable: true },
    );
  }

  /**
   * A command's write is queued: with a pipeline depth of 1, waits for it (a refused write throws, so the consumer
   * delivers the command again). Deeper, lets the partition's next command go ahead while it commits, waiting only
   * when that many writes of the partition are in flight; a refused (or failed) write has the partition delivered
   * again from this command once the order is reloaded. The writer commits no later offset of the partition
   * meanwhile, so nothing after it is skipped; what was handled after it comes again and is recognised.
   */
  async settleCommand(
    offset: OffsetToCommit,
    written: Promise<boolean>,
    slot: OrderSlot | null,
  ): Promise<void> {
    const orderId = slot?.orderId ?? null;
    if (this.depth <= 1) {
      const done = await written.catch(async (error: unknown) => {
        // Failed: the order is being reloaded from its last durable record (writeFailed); the command comes again.
        if (orderId !== null)
          await this.waits.bounded(this.state.reloading.get(orderId), `the reload of order ${orderId}`);
        throw error;
      });
      if (slot) await this.requireWritten(done, slot.orderId, slot);
      return;
    }
    let queue = this.pipelines.get(offset.partition);
    if (!queue) this.pipelines.set(offset.partition, (queue = []));
    const inFlight = queue;
    const settled: Promise<void> = written
      .then(
        (done) => {
          if (done) return undefined;
          if (slot) this.dropRefused(slot);
          this.awaitRedelivery(offset);
          return this.redeliver(orderId, offset, 'its order lost its lease');
        },
        (error: unknown) => {
          this.awaitRedelivery(offset);
          return this.redeliver(orderId, offset, (error as Error)?.message ?? String(error));
        },
      )
      .catch(() => {})
      .finally(() => {
        const index = inFlight.indexOf(settled);
        if (index >= 0) void inFlight.splice(index, 1);
      });
    inFlight.push(settled);
    while (inFlight.length > this.depth)
      await this.waits.bounded(inFlight[0], `the writes before it on partition ${offset.partition}`);
  }

  /**
   * A command's write of this slot was refused (its lease no longer held, found at commit time, perhaps before the
   * lease keeper said so): the slot's record holds what never became durable, the command among its remembered
   * ones. The slot goes at once and the order is reloaded from its last durable record, as after a lost lease;
   * else the command, delivered again, would be taken for a duplicate of itself and its offset committed unapplied.
   */
  private dropRefused(slot: OrderSlot): void {
    if (this.state.holds(slot) && !isStopped(slot)) void this.lifecycle.onLeaseLost(slot.orderId);
  }

  /** From now until the command at `offset` comes again, its partition decides nothing past it. */
  private awaitRedelivery(offset: OffsetToCommit): void {
    const at = BigInt(offset.offset);
    const pending = this.redelivering.get(offset.partition);
    if (pending === undefined || at < pending) this.redelivering.set(offset.partition, at);
  }

  /**
   * False for a command past a refused one its partition is being delivered again from: it is left undecided,
   * nothing written and no offset committed (it comes again after the refused one; deciding it now could, for
   * instance, refuse a command for an order whose creation is about to be applied again). The refused command
   * itself, or one before it, ends the wait.
   */
  mayDecide(message: InboundCommandMessage): boolean {
    const pending = this.redelivering.get(message.partition);
    if (pending === undefined) return true;
    if (BigInt(message.offset) > pending) return false;
    this.redelivering.delete(message.partition);
    return true;
  }

  /** A pipelined command was not committed: its partition is delivered again from it, once its order is reloaded. */
  private async redeliver(orderId: string | null, offset: OffsetToCommit, why: string): Promise<void> {
    if (orderId !== null) await this.state.reloading.get(orderId);
    if (this.state.writerFailed || !this.state.assigned.has(offset.partition)) return;
    this.state.logger.warn(
      { orderId, partition: offset.partition, offset: offset.offset, reason: why },
      'a pipelined command was not committed; its partition is delivered again from it',
    );
    this.state.opts.rewind?.(offset.partition, offset.offset);
  }
}
