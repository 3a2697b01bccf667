// The worker's lifecycle: the two HTTP servers (webhooks on HTTP_PORT; health, readiness and metrics on
// METRICS_PORT, both listening from the start), topics, the transactional writer, the state store, the order host
// and the command consumer, started in dependency order and stopped in reverse within a bounded time.
// Backpressure: when too many orders are active on this replica, command consumption pauses until they drain.
import type { IncomingHttpHeaders, Server } from 'node:http';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BestEffortProducer } from '../kafka/best-effort-producer.ts';
import { ClusterAdmin } from '../kafka/cluster-admin.ts';
import type { KafkaClient } from '../kafka/kafka-client.ts';
import type { WorkerConfig } from '../config.ts';
import { CommandConsumer } from '../kafka/command-consumer.ts';
import { OrderStateStore } from '../kafka/order-state-store.ts';
import { ensureTopics } from '../kafka/topics.ts';
import { TransactionalWriter } from '../kafka/transactional-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { WorkerMetrics } from '../telemetry/metrics.ts';
import { extractContext } from '../telemetry/propagation.ts';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
} from '../telemetry/semconv.ts';
import { createOpsServer, createWebhookServer, type WebhookOutcome } from '../http/http-server.ts';
import {
  createWebhookReceiver,
  type WebhookCounters,
  type WebhookReceiverDeps,
} from '../http/webhook-receiver.ts';
import type { MachineBinding } from './machine-binding.ts';
import { OrderHost, type OrderLeases } from './order-host.ts';

export interface WorkerAdapters {
  kafka: KafkaClient;
  leases: OrderLeases & { onLost(handler: (orderId: string) => void): void; stop(): Promise<void> };
  /** Builds the machine binding; it may use the host (durability barrier, lease validity) lazily. */
  binding: (host: () => OrderHost) => MachineBinding;
  webhooks: Pick<WebhookReceiverDeps, 'verify' | 'normalize' | 'firstSeen' | 'forget'>;
  checks: { redis: () => Promise<boolean>; exchange: () => Promise<boolean> };
  /** Exchange calls in progress; consumption pauses while it is at MAX_INFLIGHT_EXCHANGE_CALLS. */
  inflightExchangeCalls: () => number;
  /** Resolves once no exchange call of the order is in progress, or after timeoutMs. */
  callsSettled?: (orderId: string, timeoutMs: number) => Promise<void>;
  /** The metrics of the process (the Prometheus text of `/metrics`, and the instruments the parts record to). */
  metrics: WorkerMetrics;
  close: () => Promise<void>;
}

const tracer = trace.getTracer('exchange-order-worker');

/** The result label of a webhook delivery, from the receiver's answer. */
function webhookResult(outcome: WebhookOutcome): string {
  if (outcome.status === 202) return 'unknown_order';
  if (outcome.status >= 400) return 'refused';
  if (outcome.body['duplicate'] === true) return 'duplicate';
  if (outcome.body['kind'] === 'kyc') return 'kyc';
  return 'routed';
}

export class Worker {
  private readonly config: WorkerConfig;
  private readonly logger: Logger;
  private readonly adapters: WorkerAdapters;
  private writer: TransactionalWriter | undefined;
  private store: OrderStateStore | undefined;
  private host: OrderHost | undefined;
  private consumer: CommandConsumer | undefined;
  private hintProducer: BestEffortProducer | undefined;
  private server: Server | undefined;
  private opsServer: Server | undefined;
  private receiver: ReturnType<typeof createWebhookReceiver> | undefined;
  private backpressureTimer: NodeJS.Timeout | undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private lagTimer: NodeJS.Timeout | undefined;
  private admin: ClusterAdmin | undefined;
  private consumerLag = new Map<number, number>();
  private stopping = false;
  private kafkaHealthy = { ok: false, at: 0 };
  readonly now = (): number => Date.now();

  constructor(config: WorkerConfig, logger: Logger, adapters: WorkerAdapters) {
    this.config = config;
    this.logger = logger;
    this.adapters = adapters;
  }

  get listeningPort(): number | undefined {
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.port : undefined;
  }

  get metricsPort(): number | undefined {
    const address = this.opsServer?.address();
    return typeof address === 'object' && address ? address.port : undefined;
  }

  async start(onFatal: (error: Error) => void): Promise<void> {
    const { config, logger, adapters } = this;
    // Both servers listen before anything else: liveness answers during a long restore, and a delivery reaching a
    // replica that is still starting (the webhook Service also routes to pods that are not ready) is verified and
    // acknowledged rather than refused at connect, which the exchange would count towards disabling the endpoint.
    this.server = createWebhookServer({
      logger,
      handleWebhook: (raw, headers) => this.answerWebhook(raw, headers),
    });
    this.opsServer = createOpsServer({
      logger,
      readiness: () => this.readiness(),
      liveness: () => this.liveness(),
      metrics: async () => `${await adapters.metrics.render()}${this.webhookCounterText(this.receiver)}`,
    });
    const listen = (server: Server, port: number): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, () => resolve());
      });
    await listen(this.opsServer, config.metricsPort);
    await listen(this.server, config.httpPort);

    const { partitions } = await ensureTopics(adapters.kafka, config.topics, logger);
    this.kafkaHealthy = { ok: true, at: this.now() };

    const writer = new TransactionalWriter({
      kafka: adapters.kafka,
      transactionalId: `${config.consumerGroup}.${config.workerId}`,
      consumerGroupId: config.consumerGroup,
      transactionTimeoutMs: config.kafkaTransactionTimeoutMs,
      logger,
      // Stop every order actor first (synchronously), then let the process shut down.
      onFatal: (error) => {
        this.host?.halt(error);
        onFatal(error);
      },
      onTransaction: ({ outcome, seconds }) => {
        adapters.metrics.kafkaCommitDuration.record(seconds, { outcome });
        if (outcome === 'committed') adapters.metrics.kafkaTransactions.add(1);
      },
    });
    await writer.connect();
    this.writer = writer;

    const store = new OrderStateStore({
      kafka: adapters.kafka,
      topic: config.topics.state,
      workerId: config.workerId,
      writer,
      logger,
      transactionTimeoutMs: config.kafkaTransactionTimeoutMs,
    });
    await store.start();
    this.store = store;

    const binding = adapters.binding(() => {
      if (!this.host) throw new Error('order host not started');
      return this.host;
    });
    const hostRef = new OrderHost({
      store,
      writer,
      leases: adapters.leases,
      binding,
      topics: config.topics,
      logger,
      now: this.now,
      ...(adapters.callsSettled ? { callsSettled: adapters.callsSettled } : {}),
      maxCommandBytes: config.maxCommandBytes,
      metrics: adapters.metrics.hostObserver(),
    });
    this.host = hostRef;
    adapters.leases.onLost((orderId) => void hostRef.onLeaseLost(orderId));

    // Hints and KYC events are best effort: a duplicate hint is one more poll; a lost one is covered by polling.
    const hintProducer = new BestEffortProducer(adapters.kafka);
    await hintProducer.connect();
    this.hintProducer = hintProducer;

    this.receiver = createWebhookReceiver({
      ...adapters.webhooks,
      logger,
      now: this.now,
      locate: (uniqueReference) => {
        const orderId = store.orderIdByReference(uniqueReference);
        const record = orderId ? store.get(orderId) : undefined;
        return record ? { orderId: record.order_id, partition: record.partition } : undefined;
      },
      routeHint: async (hint) => {
        await hintProducer.send({
          topic: config.topics.commands,
          key: hint.orderId,
          partition: hint.partition,
          value: JSON.stringify({
            type: 'order.webhook_hint',
            command_id: hint.commandId,
            order_id: hint.orderId,
            unique_reference: hint.uniqueReference,
            status: hint.status,
            received_at: hint.receivedAt,
          }),
        });
      },
      publishKyc: async (event) => {
        await hintProducer.send({
          topic: config.topics.events,
          key: event.orderId ?? event.uniqueReference ?? event.eventId,
          value: JSON.stringify({
            type: 'exchange.kyc_status_changed',
            event_id: event.eventId,
            order_id: event.orderId,
            seq: 0,
            occurred_at: new Date(this.now()).toISOString(),
            unique_reference: event.uniqueReference,
            payload: event.payload,
          }),
          headers: { 'event-type': 'exchange.kyc_status_changed' },
        });
      },
    });

    const consumer = new CommandConsumer({
      kafka: adapters.kafka,
      topic: config.topics.commands,
      groupId: config.consumerGroup,
      partitions,
      logger,
      onFatal,
    });
    this.consumer = consumer;
    adapters.metrics.observe({
      activeOrders: () => hostRef.activeOrders,
      knownOrders: () => store.size(),
      openOrdersByState: () => hostRef.openOrdersByState(),
      partitionsOwned: () => consumer.assigned.length,
      consumerPaused: () => consumer.isPaused,
      inflightExchangeCalls: () => adapters.inflightExchangeCalls(),
      consumerLag: () => this.consumerLag,
    });

    await consumer.start(
      {
        onAssignmentChanged: (assigned) => hostRef.setAssignment(assigned),
        onAssignment: async (_assigned, revoked, added) => {
          await hostRef.onAssignment(revoked, added);
        },
        onMessage: async (message) => {
          await hostRef.handleMessage(message);
          this.applyBackpressure();
        },
      },
      partitions,
    );
    this.backpressureTimer = setInterval(() => this.applyBackpressure(), 100);
    this.backpressureTimer.unref();
    this.reconcileTimer = setInterval(() => hostRef.reconcile(this.now(), config.reconcileMaxAgeMs), 5_000);
    this.reconcileTimer.unref();
    const admin = new ClusterAdmin(adapters.kafka);
    await admin.connect();
    this.admin = admin;
    const measureLag = (): void => void this.measureLag(consumer.assigned).catch(() => {});
    measureLag();
    this.lagTimer = setInterval(measureLag, 10_000);
    this.lagTimer.unref();
    logger.info(
      {
        port: this.listeningPort,
        metricsPort: this.metricsPort,
        partitions,
        topics: config.topics,
        workerId: config.workerId,
      },
      'worker started',
    );
  }

  /** A webhook before the receiver exists (still starting): checked like any other, then acknowledged unrouted. */
  private answerWebhook(raw: Buffer, headers: IncomingHttpHeaders): Promise<WebhookOutcome> {
    // Each delivery is a server span that continues the sender's trace, if it sent one; the hint it routes and
    // the GET that hint triggers continue this trace.
    return tracer.startActiveSpan(
      'POST /webhooks/exchange',
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: 'POST',
          [ATTR_HTTP_ROUTE]: '/webhooks/exchange',
          [ATTR_URL_PATH]: '/webhooks/exchange',
        },
      },
      extractContext(headers),
      async (span) => {
        try {
          const outcome = await this.answerWebhookUntraced(raw, headers);
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
          span.setAttribute('webhook.result', webhookResult(outcome));
          this.adapters.metrics.webhooks.add(1, { result: webhookResult(outcome) });
          return outcome;
        } catch (error) {
          span.setAttribute(ATTR_ERROR_TYPE, (error as Error).name);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          this.adapters.metrics.webhooks.add(1, { result: 'failed' });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  private answerWebhookUntraced(raw: Buffer, headers: IncomingHttpHeaders): Promise<WebhookOutcome> {
    if (this.receiver) return this.receiver.handle(raw, headers);
    const verdict = this.adapters.webhooks.verify?.(raw, headers);
    if (verdict?.ok === false)
      return Promise.resolve({
        status: 401,
        body: { detail: `invalid webhook signature: ${verdict.reason}` },
      });
    return Promise.resolve({
      status: 202,
      body: { accepted: false, detail: 'worker starting; the order is polled anyway' },
    });
  }

  /**
   * Pauses consumption while the exchange is slow or the budget is spent (too many calls in progress), or while
   * this replica holds its maximum of active orders; resumes with some hysteresis. Calls in progress finish on
   * their own, so a pause always ends.
   */
  private applyBackpressure(): void {
    if (!this.consumer || !this.host || this.stopping) return;
    const active = this.host.activeOrders;
    const inflight = this.adapters.inflightExchangeCalls();
    const { maxActiveOrders, maxInflightExchangeCalls } = this.config;
    if (active >= maxActiveOrders || inflight >= maxInflightExchangeCalls) this.consumer.pause();
    else if (
      active < maxActiveOrders * 0.9 &&
      inflight < Math.max(1, Math.floor(maxInflightExchangeCalls * 0.8))
    )
      this.consumer.resume();
  }

  /** Not alive once the command consumer crashed for good: a restart is the only way back. */
  liveness(): { alive: boolean; detail?: string } {
    const crashed = this.consumer?.crashedForGood;
    return crashed === undefined
      ? { alive: true }
      : { alive: false, detail: `command consumer crashed: ${crashed}` };
  }

  async readiness(): Promise<{ ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> }> {
    const checks: Record<string, { ok: boolean; detail?: string }> = {};
    const timed = async (fn: () => Promise<boolean>): Promise<boolean> =>
      Promise.race([
        fn().catch(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2_000)),
      ]);
    const [redis, exchange] = await Promise.all([
      timed(this.adapters.checks.redis),
      timed(this.adapters.checks.exchange),
    ]);
    checks['redis'] = { ok: redis };
    checks['exchange'] = { ok: exchange };
    if (this.now() - this.kafkaHealthy.at > 10_000) {
      const probe = this.admin ?? new ClusterAdmin(this.adapters.kafka);
      const ok = await timed(() => probe.reachable());
      this.kafkaHealthy = { ok, at: this.now() };
    }
    checks['kafka'] = { ok: this.kafkaHealthy.ok };
    // Ready once in the group with every assigned partition restored; a replica beyond the partition count holds
    // none and is still ready (it takes over when another leaves).
    const restored = Boolean(this.consumer?.joined && this.consumer.allRestored());
    checks['partitions'] = {
      ok: restored,
      detail: `${this.consumer?.restoredPartitions.size ?? 0}/${this.consumer?.assigned.length ?? 0} restored`,
    };
    checks['stopping'] = { ok: !this.stopping };
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  }

  /**
   * The webhook receiver's own counters in Prometheus text, beside the OpenTelemetry metrics: what could not be
   * read, hints that failed, and which signing secret verified each delivery (rotation: when the old secret's
   * series stops growing, it can be removed).
   */
  private webhookCounterText(
    webhooks: { counters: Readonly<WebhookCounters>; verifiedBySecret: readonly number[] } | undefined,
  ): string {
    const lines: string[] = [];
    for (const [name, value] of Object.entries(webhooks?.counters ?? {})) {
      const snake = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      const metric = `worker_webhooks_${snake}_total`;
      lines.push(
        `# HELP ${metric} webhooks ${snake.replace(/_/g, ' ')}`,
        `# TYPE ${metric} counter`,
        `${metric} ${value}`,
      );
    }
    const verified = 'worker_webhooks_verified_total';
    lines.push(
      `# HELP ${verified} webhooks verified, by position of the signing secret`,
      `# TYPE ${verified} counter`,
    );
    (webhooks?.verifiedBySecret ?? []).forEach((value, index) =>
      lines.push(`${verified}{secret="${index}"} ${value ?? 0}`),
    );
    return `${lines.join('\n')}\n`;
  }

  /**
   * Graceful stop: no more commands, orders persisted, leases released, then webhooks (accepted and routed until
   * the HTTP server closes), producers flushed.
   */
  /**
   * Consumer lag per assigned partition: the topic's high watermark minus the group's committed offset (what a
   * replacement replica would have to redo). Measured every 10 s; read by the `worker_consumer_lag` gauge.
   */
  private async measureLag(assigned: readonly number[]): Promise<void> {
    if (!this.admin || this.stopping) return;
    this.consumerLag = await this.admin.consumerLag(
      this.config.topics.commands,
      this.config.consumerGroup,
      assigned,
    );
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.backpressureTimer);
    clearInterval(this.reconcileTimer);
    clearInterval(this.lagTimer);
    const step = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
      try {
        await fn();
      } catch (error) {
        this.logger.warn({ step: what, err: { message: (error as Error).message } }, 'shutdown step failed');
      }
    };
    await step('consumer', async () => this.consumer?.stop());
    await step('orders', async () => this.host?.unloadAll());
    await step('writer', async () => this.writer?.close());
    // Webhooks are accepted and routed until here: the webhook server closes (waiting for requests in progress)
    // before the hint producer and the state store it routes with. A webhook answered 5xx would count towards
    // the exchange disabling the endpoint; Kubernetes stops sending new ones during the pod's preStop pause.
    const close = (server: Server | undefined): Promise<void> =>
      new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await step('http', () => close(this.server));
    await step('hint producer', async () => this.hintProducer?.disconnect());
    await step('lag admin', async () => this.admin?.disconnect());
    await step('state store', async () => this.store?.stop());
    await step('metrics http', () => close(this.opsServer));
    await step('adapters', async () => this.adapters.close());
  }
}
