// Reads the commands topic with a consumer group. Offsets are never auto-committed: they are committed inside
// the Kafka transaction that writes the command's effects (see transactional-writer.ts). Partition assignment
// changes are reported before any message of a new partition is handled, and a message waits (heartbeating, so the
// group keeps this member) until its partition is restored. Consumption pauses when the worker has too much in flight (backpressure).
// A failed restore is retried with backoff for as long as the partition stays assigned; it never escapes as an
// unhandled rejection, and a message of a partition that was not restored is not handled here.
import { setTimeout as sleep } from 'node:timers/promises';
// Headers are handed on as text: they carry the caller's trace context (traceparent/tracestate).
import type { Consumer } from 'kafkajs';
import { KafkaClient } from './kafka-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import { headersAsText } from '../telemetry/propagation.ts';

export interface InboundCommandMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  /** The message's headers as text (lower-case names). */
  headers?: Record<string, string>;
  /** The consumer group that consumed it. */
  consumerGroup?: string;
}

export interface CommandConsumerHandlers {
  /** Told at once of every new assignment, before the restores queued behind earlier ones run. */
  onAssignmentChanged?: (assigned: readonly number[]) => void;
  /**
   * Called with the new full assignment; resolves when added partitions are restored. Must be safe to call again
   * for the same partitions: a rejection is retried (with only the added partitions still assigned).
   */
  onAssignment: (assigned: number[], revoked: number[], added: number[]) => Promise<void>;
  onMessage: (message: InboundCommandMessage) => Promise<void>;
  /**
   * Asked before a message is handed on: a promise holds it back until it settles (and with it its partition, whose
   * messages stay in order), heartbeating meanwhile so that the group keeps this member; undefined lets it through.
   * A rebalance during the hold ends it with a throw: the message is not handed on, and is read again by whoever
   * owns its partition next (its offset is not committed).
   */
  admit?: (message: InboundCommandMessage) => Promise<void> | undefined;
}

/**
 * Whether commands are waiting for this replica: the last command it handed on had waited `behindMs` or more since
 * it was appended to the topic, and that was no longer than `freshMs` ago (a replica that caught up and then saw
 * nothing for a while is not behind). The wait is measured against the message's timestamp (the producer's clock,
 * or the broker's on a topic with LogAppendTime): a producer whose clock runs `behindMs` ahead hides a backlog, one
 * that runs behind makes this read "waiting" while commands flow; either way only how soon a resting order's routine
 * poll comes is affected, within its 60 s bound.
 */
export class CommandWait {
  readonly #behindMs: number;
  readonly #freshMs: number;
  #handedOnAt = -Infinity;
  #waitedMs = 0;

  constructor(opts: { behindMs?: number; freshMs?: number } = {}) {
    this.#behindMs = opts.behindMs ?? 2_000;
    this.#freshMs = opts.freshMs ?? 1_000;
  }

  /** A command appended at `appendedAt` (epoch ms) is handed on at `now`. */
  handedOn(appendedAt: number, now: number): void {
    if (!Number.isFinite(appendedAt)) return;
    this.#handedOnAt = now;
    this.#waitedMs = now - appendedAt;
  }

  waiting(now: number): boolean {
    return now - this.#handedOnAt <= this.#freshMs && this.#waitedMs >= this.#behindMs;
  }
}

function decodeAssignment(memberAssignment: Record<string, number[]> | undefined, topic: string): number[] {
  return [...(memberAssignment?.[topic] ?? [])].sort((a, b) => a - b);
}

export class CommandConsumer {
  private readonly consumer: Consumer;
  private assignment: number[] = [];
  /** The member id of the last group join: a different one on the next join means this consumer was evicted. */
  private memberId: string | undefined;
  /** Per added partition: resolves true once restored, false when it was revoked (or we stopped) first. */
  private readonly ready = new Map<number, Promise<boolean>>();
  private stopping = false;
  private readonly stopped = new AbortController();
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly heartbeatIntervalMs: number;
  private paused = false;
  private readonly topic: string;
  private readonly groupId: string;
  private readonly logger: Logger;
  private handlers: CommandConsumerHandlers | undefined;
  private assignmentChain: Promise<void> = Promise.resolve();
  /** Per partition, the offset it was rewound to and has not delivered again yet (the earliest asked for). */
  private readonly rewinds = new Map<number, bigint>();
  restoredPartitions = new Set<number>();
  private readonly wait = new CommandWait();
  /** Joined the consumer group at least once (a member may legitimately hold no partition). */
  joined = false;
  /** Set when the consumer crashed and kafkajs will not restart it: the reason. */
  crashedForGood: string | undefined;

  constructor(opts: {
    kafka: KafkaClient;
    topic: string;
    groupId: string;
    logger: Logger;
    /** Group session timeout (default 15 s); heartbeats go at a fifth of it, at most every 3 s. */
    sessionTimeoutMs?: number;
    /** The consumer crashed for good (kafkajs will not restart it); the process should stop. */
    onFatal?: (error: Error) => void;
    /** Backoff between restore attempts (default 1 s doubling up to 30 s). */
    restoreRetryDelayMs?: (attempt: number) => number;
  }) {
    this.topic = opts.topic;
    this.retryDelayMs = opts.restoreRetryDelayMs ?? ((attempt) => Math.min(30_000, 1_000 * 2 ** attempt));
    this.heartbeatIntervalMs = Math.min(3_000, Math.floor((opts.sessionTimeoutMs ?? 15_000) / 5));
    this.groupId = opts.groupId;
    this.logger = opts.logger.child({ component: 'command-consumer' });
    this.consumer = KafkaClient.kafkajs(opts.kafka).consumer({
      groupId: opts.groupId,
      sessionTimeout: opts.sessionTimeoutMs ?? 15_000,
      heartbeatInterval: this.heartbeatIntervalMs,
      rebalanceTimeout: 30_000,
      maxWaitTimeInMs: 200,
      readUncommitted: false,
      retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 5_000 },
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (event) => {
      this.joined = true;
      const next = decodeAssignment(event.payload.memberAssignment, this.topic);
      // A new member id means the group had evicted this consumer (a pause, a stuck handler) without it knowing:
      // its partitions may have had another owner meanwhile, who created or moved orders there. Every partition of
      // the new assignment is restored as if newly added, even the ones it believes it never lost.
      const memberId = event.payload.memberId;
      const rejoined = this.memberId !== undefined && memberId !== undefined && memberId !== this.memberId;
      if (memberId !== undefined) this.memberId = memberId;
      if (rejoined)
        this.logger.warn({ assigned: next }, 'rejoined the group as a new member; restoring every partition');
      this.changeAssignment(next, rejoined);
    });
    this.consumer.on(this.consumer.events.CRASH, (event) => {
      this.logger.error(
        { err: { message: event.payload.error?.message }, restart: event.payload.restart },
        'command consumer crashed',
      );
      // kafkajs gives up on a crash it does not restart from: nothing consumes any more (liveness fails).
      if (!event.payload.restart) this.crashedForGood = event.payload.error.message;
      // Without a restart this replica consumes nothing more while still driving its orders and holding their
      // leases, so the partitions' new owners would wait for them forever: stop (gracefully) instead.
      if (!event.payload.restart && !this.stopping) {
        this.logger.fatal('command consumer crashed for good; stopping so another replica takes over');
        opts.onFatal?.(
          event.payload.error instanceof Error ? event.payload.error : new Error('command consumer crashed'),
        );
      }
    });
  }

  private changeAssignment(next: number[], rejoined = false): void {
    const previous = new Set(this.assignment);
    const nextSet = new Set(next);
    const added = rejoined ? [...next] : next.filter((p) => !previous.has(p));
    const revoked = this.assignment.filter((p) => !nextSet.has(p));
    this.assignment = next;
    for (const p of [...revoked, ...added]) {
      this.rewinds.delete(p);
      this.ready.delete(p);
      this.restoredPartitions.delete(p);
    }
    const handlers = this.handlers;
    if (!handlers) return;
    handlers.onAssignmentChanged?.(next);
    // Assignment changes are handled one after another; messages of an added partition wait for its restore.
    const done = (this.assignmentChain = this.assignmentChain.then(() =>
      this.restoreWithRetry(handlers, next, revoked, added),
    ));
    for (const p of added) {
      const restored: Promise<boolean> = done.then(() => {
        // Revoked (and perhaps assigned again, with a restore of its own) meanwhile: this restore does not count.
        if (this.stopping || this.ready.get(p) !== restored) return false;
        this.restoredPartitions.add(p);
        return true;
      });
      this.ready.set(p, restored);
    }
    this.logger.info({ assigned: next, added, revoked }, 'partition assignment changed');
  }

  /** Never rejects: retries a failed restore with backoff while any added partition is still assigned here. */
  private async restoreWithRetry(
    handlers: CommandConsumerHandlers,
    next: number[],
    revoked: number[],
    added: number[],
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const still = attempt === 0 ? added : added.filter((p) => this.assignment.includes(p));
      if (attempt > 0 && (still.length === 0 || this.stopping)) return;
      try {
        await handlers.onAssignment(next, attempt === 0 ? revoked : [], still);
        return;
      } catch (error) {
        const delay = this.retryDelayMs(attempt);
        this.logger.error(
          { partitions: still, attempt, retryInMs: delay, err: { message: (error as Error)?.message } },
          'partition restore failed; retrying',
        );
        await sleep(delay, undefined, { signal: this.stopped.signal }).catch(() => {});
      }
    }
  }

  get assigned(): readonly number[] {
    return this.assignment;
  }

  allRestored(): boolean {
    return this.assignment.every((p) => this.restoredPartitions.has(p));
  }

  async start(handlers: CommandConsumerHandlers, partitionsConsumedConcurrently: number): Promise<void> {
    this.handlers = handlers;
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently,
      eachMessage: async (payload) => {
        const { topic, partition, message } = payload;
        const rewound = this.rewinds.get(partition);
        if (rewound !== undefined && BigInt(message.offset) <= rewound) this.rewinds.delete(partition);
        const ready = this.ready.get(partition);
        if (ready && !(await this.heartbeatingUntil(ready, () => payload.heartbeat()))) {
          // Revoked before it was restored: not ours to handle; the next owner reads it (its offset is not committed).
          throw new Error(`partition ${partition} is no longer assigned to this replica`);
        }
        const inbound: InboundCommandMessage = {
          topic,
          partition,
          offset: message.offset,
          key: message.key?.toString() ?? null,
          value: message.value,
          headers: headersAsText(message.headers),
          consumerGroup: this.groupId,
        };
        const held = handlers.admit?.(inbound);
        if (held) await this.heartbeatingUntil(held, () => payload.heartbeat());
        this.wait.handedOn(Number(message.timestamp), Date.now());
        try {
          await handlers.onMessage(inbound);
        } catch (error) {
          // kafkajs retries a failed message in place, without a heartbeat, for as long as its retry policy lasts: a
          // replica evicted meanwhile (paused past its session, or a handler whose waits ran out) would go on failing
          // outside the group for minutes. A heartbeat first: one that reports a rebalance or an unknown member
          // throws, and kafkajs rejoins the group instead of retrying (the message, its offset not committed, is
          // read again by the partition's next owner).
          await payload.heartbeat();
          throw error;
        }
      },
    });
  }

  /**
   * Waits for a partition's restore while heartbeating. kafkajs heartbeats only between messages, and a restore
   * may wait longer than the session for a previous owner to let go of a lease (its exchange call settling, up to
   * 35 s): without heartbeats the group would evict this replica, give the partition back to that owner, and the
   * restore - still counting the partition as ours - would wait for its lease forever. A heartbeat that reports a
   * rebalance throws, so kafkajs rejoins and the new assignment ends the wait.
   */
  private async heartbeatingUntil<T>(restore: Promise<T>, heartbeat: () => Promise<void>): Promise<T> {
    for (;;) {
      const done = await Promise.race([
        restore.then((value) => ({ value })),
        sleep(this.heartbeatIntervalMs, undefined, { ref: false }).then(() => undefined),
      ]);
      if (done) return done.value;
      await heartbeat();
    }
  }

  /**
   * Delivers a partition's messages again from `offset` (a pipelined command whose write was refused: the commands
   * after it were handled already, and are recognised as duplicates when they come again). The earliest offset
   * asked for wins until it is delivered; a partition no longer assigned here is left to its next owner, who starts
   * from the group's committed offset.
   */
  rewind(partition: number, offset: string): void {
    if (this.stopping || !this.assignment.includes(partition)) return;
    const at = BigInt(offset);
    const pending = this.rewinds.get(partition);
    if (pending !== undefined && pending <= at) return;
    this.rewinds.set(partition, at);
    this.logger.warn({ partition, offset }, 'delivering the partition again from a refused command');
    this.consumer.seek({ topic: this.topic, partition, offset });
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.consumer.pause([{ topic: this.topic }]);
    this.logger.warn('consumption paused (backpressure)');
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.consumer.resume([{ topic: this.topic }]);
    this.logger.info('consumption resumed');
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Whether commands wait for this replica: consumption is paused (backpressure), or the commands it handed on in
   * the last second had waited 2 s or more in the topic (a backlog: creations queue behind what the replica does).
   */
  commandsWaiting(now = Date.now()): boolean {
    return this.paused || this.wait.waiting(now);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    await this.consumer.stop().catch(() => {});
    await this.consumer.disconnect();
  }
}
