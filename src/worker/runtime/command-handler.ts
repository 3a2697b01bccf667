// One command, from the message to its effect: a consumer span; parse; bring its order in (wake a resting one, wait
// for its last write, take up one nobody drives here, join its reload), each wait bounded (command-waits.ts); decide()
// (command-intake.ts, pure); then carry the decision out - skip, reject, forward, create, abandon or deliver - and
// settle its write through the pipeline.
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { opened } from '../../contract/command-answers.ts';
import type { OrderCreateCommand } from '../../contract/commands.ts';
import { commandTypes, parseCommand } from '../../contract/commands.ts';
import { WorkerError } from '../../errors.ts';
import type { InboundCommandMessage } from '../../kafka/command-consumer.ts';
import type { OrderRecord } from '../../kafka/order-state-store.ts';
import type { OffsetToCommit } from '../../kafka/transactional-writer.ts';
import { originLink } from '../../telemetry/order-sampler.ts';
import { extractContext, toTraceparent, withOrderId } from '../../telemetry/propagation.ts';
import {
  ATTR_EXCHANGE_UNIQUE_REFERENCE,
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_KAFKA_MESSAGE_KEY,
  ATTR_MESSAGING_KAFKA_OFFSET,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_ORDER_ID,
} from '../../telemetry/semconv.ts';
import { awayDecision, decide, retired } from '../command-intake.ts';
import { forwardingOf, towardsHome } from '../command-routing.ts';
import type { MachineBinding } from '../machine-binding.ts';
import { operatorEvents, screenOperator } from '../operator-authority.ts';
import type { CommandPipeline } from './command-pipeline.ts';
import type { CommandReplies } from './command-replies.ts';
import type { CommandWaits } from './command-waits.ts';
import type { HostState } from './host-state.ts';
import type { OrderLifecycle } from './lifecycle.ts';
import type { OrderSignals } from './signals.ts';
import { actorOf, isHalted, originOf, restOf } from './slot-phases.ts';
import { commandOutcomeKey, noteCommandType, noteOutcome, tracer, type CommandOutcome } from './tracing.ts';

export class CommandHandler {
  private readonly state: HostState;
  private readonly binding: MachineBinding;
  private readonly lifecycle: OrderLifecycle;
  private readonly signals: OrderSignals;
  private readonly pipeline: CommandPipeline;
  private readonly waits: CommandWaits;
  private readonly replies: CommandReplies;
  private readonly maxCommandBytes: number | undefined;
  /** When each command handler running now started (performance.now()), by its message. */
  private readonly running = new Map<InboundCommandMessage, number>();

  constructor(
    state: HostState,
    parts: {
      binding: MachineBinding;
      lifecycle: OrderLifecycle;
      signals: OrderSignals;
      pipeline: CommandPipeline;
      waits: CommandWaits;
      replies: CommandReplies;
    },
  ) {
    this.state = state;
    this.binding = parts.binding;
    this.lifecycle = parts.lifecycle;
    this.signals = parts.signals;
    this.pipeline = parts.pipeline;
    this.waits = parts.waits;
    this.replies = parts.replies;
    this.maxCommandBytes = state.opts.maxCommandBytes;
  }

  /** How long the longest-running command handler now running has been running; undefined when none runs. */
  runningForMs(): number | undefined {
    let oldest: number | undefined;
    for (const startedAt of this.running.values())
      if (oldest === undefined || startedAt < oldest) oldest = startedAt;
    return oldest === undefined ? undefined : performance.now() - oldest;
  }

  /**
   * Handles one command message in a consumer span, `process <topic>`, that continues the caller's trace (the
   * message's traceparent); everything the command causes (exchange calls, the Kafka transaction, the events and
   * their traceparent) happens under it, and log lines written meanwhile name the trace and the order.
   */
  handleMessage(message: InboundCommandMessage): Promise<void> {
    const startedAt = performance.now();
    const parent = extractContext(message.headers ?? {});
    const outcome: CommandOutcome = { commandType: 'unknown', result: 'accepted' };
    // A command for an order driven here (a deposit, a routed webhook hint) links to the order's first trace.
    const here = message.key ? this.state.slots.get(message.key) : undefined;
    const origin = here && originOf(here);
    const span = tracer.startSpan(
      `process ${message.topic}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          [ATTR_MESSAGING_SYSTEM]: 'kafka',
          [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
          [ATTR_MESSAGING_OPERATION_NAME]: 'process',
          [ATTR_MESSAGING_DESTINATION_NAME]: message.topic,
          [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(message.partition),
          [ATTR_MESSAGING_KAFKA_OFFSET]: Number(message.offset),
          ...(message.consumerGroup ? { [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: message.consumerGroup } : {}),
          ...(message.key
            ? { [ATTR_MESSAGING_KAFKA_MESSAGE_KEY]: message.key, [ATTR_ORDER_ID]: message.key }
            : {}),
        },
        ...(origin ? { links: [originLink(origin)] } : {}),
      },
      parent,
    );
    const active = withOrderId(trace.setSpan(parent, span), message.key).setValue(commandOutcomeKey, outcome);
    return context.with(active, async () => {
      this.running.set(message, startedAt);
      try {
        await this.processMessage(message, span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        span.setAttribute('error.type', (error as { code?: string }).code ?? (error as Error).name);
        this.state.opts.metrics?.commandHandled({
          commandType: outcome.commandType,
          result: 'error',
          seconds: (performance.now() - startedAt) / 1000,
        });
        throw error;
      } finally {
        const keyed = message.key ? this.state.slots.get(message.key) : undefined;
        const reference =
          (keyed && actorOf(keyed))?.status().uniqueReference ?? keyed?.record.unique_reference;
        if (reference) span.setAttribute(ATTR_EXCHANGE_UNIQUE_REFERENCE, reference);
        span.setAttribute('command.result', outcome.result);
        this.state.logger.debug(
          {
            partition: message.partition,
            offset: message.offset,
            commandType: outcome.commandType,
            result: outcome.result,
          },
          'command handled',
        );
        span.end();
        this.running.delete(message);
      }
      this.state.opts.metrics?.commandHandled({
        commandType: outcome.commandType,
        result: outcome.result,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        seconds: (performance.now() - startedAt) / 1000,
      });
    });
  }

  private async processMessage(message: InboundCommandMessage, span: Span): Promise<void> {
    const offset: OffsetToCommit = {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    };
    const parsed = parseCommand(
      message.value,
      message.key,
      this.maxCommandBytes === undefined ? {} : { maxBytes: this.maxCommandBytes },
    );
    const commandType = parsed.ok ? parsed.command.type : (parsed.commandType ?? 'unknown');
    // The metric label only takes a known type: a producer's typo must not create a new time series.
    noteCommandType((commandTypes as readonly string[]).includes(commandType) ? commandType : 'unknown');
    span.setAttribute('command.type', commandType);
    if (parsed.ok) span.setAttribute('command.id', parsed.command.command_id);
    const forwarding = forwardingOf(message.headers);
    if (forwarding) {
      const { from } = forwarding;
      span.setAttribute('command.forwarded_from', `${from.topic}:${from.partition}:${from.offset}`);
    }
    const named = parsed.ok ? parsed.command.order_id : parsed.orderId;
    // A passivated order comes back to life before its command is decided (a wake that fails on a lost lease hands
    // the order to its reload, which the take-up below joins).
    const passive = named === null ? undefined : this.state.slots.get(named);
    if (
      passive &&
      restOf(passive) &&
      this.replies.routedHere(passive.orderId, message) &&
      !this.lifecycle.rests.wake(passive, 'command')
    )
      await this.waits.bounded(
        this.lifecycle.rests.awake(passive.orderId),
        `the wake of order ${passive.orderId}`,
      );
    // A command is decided on its order's durable state: one that follows a pipelined command of the same order
    // waits for that command's write (a refused one reloads the order, awaited below).
    const writing = named === null ? undefined : this.state.slots.get(named);
    if (writing)
      await this.waits.bounded(
        writing.lastWrite.catch(() => {}),
        `the last write of order ${named}`,
      );
    // An unfinished order of this partition that nobody drives here (created by a previous owner after this
    // replica's restore, or whose reload failed): load it before answering its command.
    if (named !== null && this.replies.routedHere(named, message)) {
      const record = this.state.opts.state.get(named);
      if (record && !record.terminal && !this.state.slots.has(named))
        await this.waits.bounded(
          this.lifecycle.takeUp(named, message.partition),
          `the load of order ${named}`,
        );
    }
    if (parsed.ok)
      await this.waits.bounded(
        this.state.reloading.get(parsed.command.order_id),
        `the reload of order ${parsed.command.order_id}`,
      );
    const orderId = parsed.ok ? parsed.command.order_id : null;
    const slot = orderId === null ? undefined : this.state.slots.get(orderId);
    const record = orderId === null ? undefined : (slot?.record ?? this.state.opts.state.get(orderId));
    if (!this.pipeline.mayDecide(message)) {
      this.state.logger.debug(
        { partition: message.partition, offset: message.offset },
        'command left for its partition to deliver again (a command before it was refused)',
      );
      return;
    }
    const arrival = {
      partition: message.partition,
      now: this.state.opts.now(),
      hops: forwarding?.hops ?? 0,
      canonical: orderId === null ? undefined : this.state.opts.canonicalPartition?.(orderId),
    };
    const here = slot && { halted: isHalted(slot), actor: actorOf(slot) };
    const routed = decide(parsed, arrival, record, here);
    // An operator command (order.settle) without a valid operator signature is refused like a malformed one, where
    // its order lives: a copy forwarded there keeps the operator headers, and the signature covers only the key and
    // value, which a forward does not change. So the refusal is part of the order's history like any other.
    const screened =
      routed.kind === 'forward'
        ? { parsed, operator: null }
        : screenOperator(this.state.opts.operatorAuthority, parsed, message, arrival.now);
    if (!screened.parsed.ok) span.setAttribute('command.rejected', screened.parsed.reason);
    const decision = screened.parsed === parsed ? routed : decide(screened.parsed, arrival, record, here);
    switch (decision.kind) {
      case 'skip':
        noteOutcome(decision.outcome);
        await this.pipeline.settleCommand(offset, this.state.opts.journal.commitOffset(offset), null);
        return;
      case 'reject':
        await this.replies.reject(decision.orderId, message, decision.rejection);
        return;
      case 'forward':
        await this.replies.forward(decision.orderId, message, decision.partition);
        return;
      case 'create': {
        // The order's home, shared by the replicas: this replica reads only its own partitions' records, so a
        // create of an order that already lives on another partition is recognised here, not by decide().
        const { command, hash } = decision;
        const home = await this.waits.bounded(
          this.state.opts.homes?.claim(command.order_id, message.partition),
          `the home of order ${command.order_id}`,
        );
        // Finished, and gone from the state topic after its retention: a create replayed from the commands topic
        // (which may keep it longer) would otherwise start the order again, a second exchange order.
        if (home?.retired) {
          await this.replies.reject(command.order_id, message, retired(command, hash));
          return;
        }
        // Its home is another partition (an order created before homes followed the key, or by such a replica during
        // an upgrade): the create goes there, where the order's record is (or is being) written.
        const away =
          home === undefined
            ? undefined
            : awayDecision(
                command,
                hash,
                message.partition,
                towardsHome({ partition: message.partition, hops: forwarding?.hops ?? 0 }, home.partition),
              );
        if (away?.kind === 'forward') return this.replies.forward(command.order_id, message, away.partition);
        if (away?.kind === 'reject') return this.replies.reject(command.order_id, message, away.rejection);
        await this.createOrder(command, message.partition, offset, hash);
        return;
      }
      case 'abandon': {
        // decide() abandons only a halted order driven here; the offset is committed all the same
        if (!slot)
          return this.pipeline.settleCommand(offset, this.state.opts.journal.commitOffset(offset), null);
        const { command } = decision;
        slot.answering = opened(slot.answering, command.type, command.command_id);
        // Its last good state may hold a deposit the exchange never recorded: the end says so, as the machine's do.
        const unrecorded = this.binding.unrecordedDeposit?.(slot.record.machine) ?? null;
        await this.pipeline.requireWritten(
          await this.lifecycle.persist(slot, {
            offset,
            command: [command.command_id, decision.hash],
            terminal: true,
            events: [
              ...operatorEvents(command, screened.operator),
              {
                type: 'order.failed',
                reason: 'abandoned_by_operator',
                code: 'operator_abandoned',
                message: 'an operator settled the halted order as abandoned (order.settle)',
                ...(unrecorded === null ? {} : { unrecorded_deposit: unrecorded }),
              },
            ],
          }),
          command.order_id,
          slot,
        );
        if (this.state.slots.get(slot.orderId) === slot) await this.lifecycle.unload(slot);
        return;
      }
      case 'deliver': {
        const { command, event } = decision;
        // decide() delivers only to an actor driven here; the offset is committed all the same
        const actor = slot && actorOf(slot);
        if (!slot || !actor)
          return this.pipeline.settleCommand(offset, this.state.opts.journal.commitOffset(offset), null);
        if (command.type === 'order.webhook_hint') {
          // A hint routed here by the replica the webhook reached is taken as one handed over in-process; only its
          // offset is committed, in the next group commit. Not remembered for deduplication either: every webhook
          // gets a fresh command_id, and a hint delivered twice costs at most a GET. Writing the order's state record
          // for each routed hint (and its command_id into the order's deduplication window) cost a record and a
          // place in a transaction ahead of the GET's answer per webhook, on every replica but the one it reached.
          this.signals.takeHint(slot, event, command.received_at);
          await this.pipeline.settleCommand(offset, this.state.opts.journal.commitOffset(offset), null);
          return;
        }
        slot.answering = opened(slot.answering, command.type, command.command_id);
        // Who sent an operator command comes first in what it writes (before order.failed, for an abandon).
        slot.pendingEvents.push(...operatorEvents(command, screened.operator));
        actor.send(event);
        await this.pipeline.settleCommand(
          offset,
          this.lifecycle.persist(slot, { offset, command: [command.command_id, decision.hash] }),
          slot,
        );
        this.lifecycle.finishIfTerminal(slot);
        return;
      }
    }
  }

  private async createOrder(
    command: OrderCreateCommand,
    partition: number,
    offset: OffsetToCommit,
    hash: string,
  ): Promise<void> {
    let waited = false;
    const fence = await this.lifecycle.acquireLease(command.order_id, 0, partition, {
      onWait: () => (waited = true),
      ...this.waits.forLease(),
    });
    if (fence === null) {
      throw new WorkerError(
        'partition_revoked',
        `partition ${partition} was revoked while order ${command.order_id} was being created`,
        { retryable: true },
      );
    }
    // Another replica may have been handed the same order.create (a rebalance while one consumer was stuck, or
    // evicted without knowing) and created the order. Read the partition up to now before creating whenever that
    // is possible: the lease was not free at once (another holder, or Redis unreachable), or it was free but had
    // been held before (its fence counter is past 1: a holder that finished and let go moments ago, whose records
    // this replica may not have read yet). A second life of one order_id would mean a second exchange order. If it
    // exists, let go and have the command delivered again, which loads that order. A brand-new order (fence 1,
    // granted at once) skips the round trip.
    if (waited || fence > 1) {
      await this.state.opts.state.catchUp([partition]);
      if (this.state.opts.state.get(command.order_id)) {
        await this.state.opts.leases.release(command.order_id).catch(() => {});
        throw new WorkerError(
          'order_created_meanwhile',
          `order ${command.order_id} was created by another replica while this one waited for its lease; the command will be delivered again`,
          { retryable: true },
        );
      }
    }
    this.state.logger.debug({ orderId: command.order_id, partition, fence, waited }, 'creating the order');
    const record: OrderRecord = {
      v: 1,
      order_id: command.order_id,
      partition,
      fence,
      rev: 0,
      seq: 0,
      updated_at: new Date(this.state.opts.now()).toISOString(),
      mode: command.mode,
      create_hash: hash,
      commands: [[command.command_id, hash]],
      unique_reference: null,
      terminal: false,
      machine: null,
    };
    const origin = toTraceparent(trace.getSpanContext(context.active()));
    if (origin) record.trace_origin = origin;
    // Its first record is written once its local first steps have run (OrderLifecycle.create), with this offset.
    const { slot, written } = await this.lifecycle.create(
      command,
      record,
      fence,
      opened([], command.type, command.command_id),
      { offset },
    );
    await this.pipeline.settleCommand(offset, written, slot);
    this.lifecycle.finishIfTerminal(slot);
  }
}
