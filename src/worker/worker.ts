// The worker's lifecycle over parts the composition root built: the HTTP face (both servers listening from the
// start), topics, the transactional writer, the state store, the best-effort producer and the command consumer
// feeding the order host, started in dependency order and stopped in reverse within a bounded time.
// Finished orders past their retention are tombstoned by a periodic sweep (state-retention.ts).
// Backpressure (backpressure.ts): consumption pauses while the exchange is slow or its budget spent; while this
// replica holds its maximum of live orders only new orders wait, each in its partition's order, and the commands
// of the orders already here go on.
import { Backpressure } from './backpressure.ts';
import { namesOrderCreate } from '../contract/commands.ts';
import type { WorkerConfig } from '../config.ts';
import type { HttpFace } from '../http/http-face.ts';
import type { CommandConsumer, InboundCommandMessage } from '../kafka/command-consumer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { WorkerHealth } from './health.ts';
import type { OrderHost } from './order-host.ts';

/** Something started once and stopped once. */
interface Connectable {
  connect(): Promise<void>;
}

export interface WorkerParts {
  http: HttpFace;
  /** Creates missing topics; an existing commands topic decides the partition count. */
  ensureTopics: () => Promise<{ partitions: number }>;
  writer: Connectable & {
    close(): Promise<void>;
    releaseOffsetHolds(topic: string, partitions: readonly number[]): Promise<void>;
  };
  store: { start(): Promise<void>; stop(): Promise<void> };
  /** The producer webhook hints and KYC events are routed with. */
  hints: Connectable & { disconnect(): Promise<void> };
  host: Pick<
    OrderHost,
    'liveOrders' | 'setAssignment' | 'onAssignment' | 'handleMessage' | 'reconcile' | 'unloadAll'
  >;
  consumer: Pick<CommandConsumer, 'start' | 'stop' | 'pause' | 'resume' | 'assigned'>;
  /** The consumer lag of the group, per partition. */
  cluster: Connectable & {
    consumerLag(topic: string, groupId: string, partitions: readonly number[]): Promise<Map<number, number>>;
    disconnect(): Promise<void>;
  };
  health: Pick<WorkerHealth, 'kafkaAnswered' | 'stopped'>;
  /** Tombstones finished orders past their retention; run every `intervalMs` while the worker runs. */
  retention: { sweep(now: number): Promise<unknown>; intervalMs: number };
  /** The CeFi listing reconciler (cefi-listing.ts): started with the consumer, stopped before the orders unload. */
  listing?: { start(): void; stop(): Promise<void> };
  /** Asked for a memory-reducing collection after large assignment changes and start-up (heap-reducer.ts). */
  heapReducer?:
    { request(reason: string): void; reduceNow(reason: string): Promise<void>; stop(): void } | undefined;
  /** Exchange calls in progress; consumption pauses while it is at MAX_INFLIGHT_EXCHANGE_CALLS. */
  inflightExchangeCalls: () => number;
  /** Closes what the parts above do not own (leases, the exchange client, Redis, telemetry). */
  close: () => Promise<void>;
}

/** Orders restored or unloaded by one assignment change from which its garbage is worth a memory-reducing GC. */
export const heapReduceAfterOrders = 1_000;

export class Worker {
  private readonly config: WorkerConfig;
  private readonly logger: Logger;
  private readonly parts: WorkerParts;
  private backpressureTimer: NodeJS.Timeout | undefined;
  private readonly backpressure: Backpressure;
  /** Whether new orders wait now (the last verdict), and the order.create commands waiting for room. */
  private holdingCreates = false;
  private readonly heldCreates = new Set<() => void>();
  private reconcileTimer: NodeJS.Timeout | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private lagTimer: NodeJS.Timeout | undefined;
  private lag = new Map<number, number>();
  private running = false;
  private stopping = false;
  private assignedOnce = false;

  constructor(config: WorkerConfig, logger: Logger, parts: WorkerParts) {
    this.config = config;
    this.logger = logger;
    this.parts = parts;
    this.backpressure = new Backpressure(config);
  }

  /** Consumer lag per assigned partition, measured every 10 s (the `worker_consumer_lag` gauge). */
  get consumerLag(): ReadonlyMap<number, number> {
    return this.lag;
  }

  async start(): Promise<void> {
    const { config, logger, parts } = this;
    const { host, consumer } = parts;
    // Both servers listen before anything else: liveness answers during a long restore, and a delivery reaching a
    // replica that is still starting (the webhook Service also routes to pods that are not ready) is verified and
    // acknowledged rather than refused at connect, which the exchange would count towards disabling the endpoint.
    await parts.http.listen({ http: config.httpPort, metrics: config.metricsPort });
    const { partitions } = await parts.ensureTopics();
    parts.health.kafkaAnswered();
    await parts.writer.connect();
    await parts.store.start();
    await parts.hints.connect();
    parts.http.acceptWebhooks();

    await consumer.start(
      {
        onAssignmentChanged: (assigned) => host.setAssignment(assigned),
        onAssignment: async (_assigned, revoked, added) => {
          // A partition assigned anew is read from the group's committed offset: a hold left by a refused
          // pipelined command of an earlier assignment no longer applies.
          await parts.writer.releaseOffsetHolds(config.topics.commands, added);
          const moved = await host.onAssignment(revoked, added);
          const first = !this.assignedOnce;
          this.assignedOnce = true;
          // The restore's garbage, the records of partitions given away and V8's pooled pages go back to the system
          // once the restores are over (not for a handful of orders: each reduction pauses the replica). A small
          // first assignment is followed by one at once, before the replica reports ready: start-up's garbage goes
          // too, and a replica at rest shows the memory it keeps from its first minute.
          if (moved >= heapReduceAfterOrders)
            parts.heapReducer?.request(added.length > 0 ? 'restore' : 'revoke');
          else if (first) await parts.heapReducer?.reduceNow('start');
        },
        admit: (message) => this.admit(message),
        onMessage: async (message) => {
          await host.handleMessage(message);
          this.applyBackpressure();
        },
      },
      partitions,
    );
    this.running = true;
    this.backpressureTimer = setInterval(() => this.applyBackpressure(), 100);
    this.backpressureTimer.unref();
    this.reconcileTimer = setInterval(() => host.reconcile(Date.now(), config.reconcileMaxAgeMs), 5_000);
    this.reconcileTimer.unref();
    parts.listing?.start();
    const { retention } = parts;
    this.retentionTimer = setInterval(() => void retention.sweep(Date.now()), retention.intervalMs);
    this.retentionTimer.unref();
    await parts.cluster.connect();
    const measureLag = (): void => void this.measureLag().catch(() => {});
    measureLag();
    this.lagTimer = setInterval(measureLag, 10_000);
    this.lagTimer.unref();
    logger.info(
      {
        port: parts.http.webhookPort,
        metricsPort: parts.http.metricsPort,
        partitions,
        topics: config.topics,
        workerId: config.workerId,
      },
      'worker started',
    );
  }

  /**
   * Pauses consumption while the exchange is slow or the budget is spent (too many calls in progress), and holds
   * new orders back while this replica holds its maximum of live orders (orders at rest do not count); each ends
   * with some hysteresis. Calls in progress finish on their own, so a pause always ends; live orders end, or rest
   * once they only wait, so a hold ends too.
   */
  private applyBackpressure(): void {
    if (!this.running || this.stopping) return;
    const verdict = this.backpressure.verdict(this.parts.host.liveOrders, this.parts.inflightExchangeCalls());
    if (verdict.pauseConsumption) this.parts.consumer.pause();
    else this.parts.consumer.resume();
    this.holdingCreates = verdict.holdCreates;
    if (!verdict.holdCreates) this.releaseHeldCreates();
  }

  /**
   * Holds an order.create back while new orders wait (the consumer heartbeats meanwhile, and its partition's later
   * messages wait behind it, so none is skipped or reordered); everything else goes on at once. The verdict is
   * taken again every 100 ms (applyBackpressure); a stop lets held creates through to the host, as before a stop.
   */
  private admit(message: InboundCommandMessage): Promise<void> | undefined {
    if (!this.holdingCreates || this.stopping || !namesOrderCreate(message.value)) return undefined;
    return new Promise<void>((resolve) => this.heldCreates.add(resolve));
  }

  private releaseHeldCreates(): void {
    for (const release of this.heldCreates) release();
    this.heldCreates.clear();
  }

  /** What a replacement replica would have to redo: high watermark minus the group's committed offset. */
  private async measureLag(): Promise<void> {
    if (this.stopping) return;
    const { topics, consumerGroup } = this.config;
    this.lag = await this.parts.cluster.consumerLag(
      topics.commands,
      consumerGroup,
      this.parts.consumer.assigned,
    );
  }

  /**
   * Graceful stop: no more commands, orders persisted, leases released, then webhooks (accepted and routed until
   * the HTTP server closes), producers flushed.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.parts.health.stopped();
    clearInterval(this.backpressureTimer);
    this.releaseHeldCreates();
    clearInterval(this.reconcileTimer);
    clearInterval(this.retentionTimer);
    clearInterval(this.lagTimer);
    const { parts } = this;
    parts.heapReducer?.stop();
    const step = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
      try {
        await fn();
      } catch (error) {
        this.logger.warn({ step: what, err: { message: (error as Error).message } }, 'shutdown step failed');
      }
    };
    await step('listing', async () => parts.listing?.stop());
    await step('consumer', () => parts.consumer.stop());
    await step('orders', () => parts.host.unloadAll());
    await step('writer', () => parts.writer.close());
    // Webhooks are accepted and routed until here: the webhook server closes (waiting for requests in progress)
    // before the hint producer and the state store it routes with. A webhook answered 5xx would count towards
    // the exchange disabling the endpoint; Kubernetes stops sending new ones during the pod's preStop pause.
    await step('http', () => parts.http.closeWebhooks());
    await step('hint producer', () => parts.hints.disconnect());
    await step('lag admin', () => parts.cluster.disconnect());
    await step('state store', () => parts.store.stop());
    await step('metrics http', () => parts.http.closeOperations());
    await step('adapters', () => parts.close());
  }
}
