// The worker's metrics: OpenTelemetry instruments read by the Prometheus exporter on scrape, the one metrics path of
// the process (the webhook receiver's counters included). Instruments are named by the OpenTelemetry semantic
// conventions where one exists (`messaging.process.duration`, `messaging.client.consumed.messages`,
// `http.server.request.duration`, `process.memory.usage`), else `worker.*`, with the unit in `unit`, never in the
// name; prometheus-names.ts turns them into Prometheus names (`_seconds`, `_bytes`, `_total`). No name is the
// namespace of another. Label values come from small closed sets (command types, rejection reasons, operations,
// modes, error codes, machine states, HTTP methods and status codes): never an order id, a key, a token or a URL.
// Renames and the reasons: docs/operations.md, "Metric names".
import { observeFleet, type FleetGaugeSource } from './fleet-metrics.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Meter } from '@opentelemetry/api';
import { PrometheusSerializer, type PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { withPrometheusNames } from './prometheus-names.ts';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_SYSTEM,
  ATTR_URL_SCHEME,
} from './semconv.ts';

/** Seconds: from a fast Redis round trip to a slow actionable quote. */
const latencyBucketsSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** The buckets the HTTP semantic conventions advise for http.server.request.duration. */
const httpBucketsSeconds = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** The events that say how an order went (`worker_orders_total{outcome}`). */
const orderOutcomes = new Set([
  'order.created',
  'order.completed',
  'order.refunded',
  'order.canceled',
  'order.failed',
]);

/** What the worker's runtime reports on scrape (observable gauges). */
export interface WorkerGaugeSources {
  activeOrders(): number;
  knownOrders(): number;
  /** Open (loaded, unfinished) orders per machine state, passivated ones included. */
  openOrdersByState(): ReadonlyMap<string, number>;
  /** Open orders whose actor is stopped while they wait (their record and a deadline kept). */
  passivatedOrders(): number;
  partitionsOwned(): number;
  consumerPaused(): boolean;
  inflightExchangeCalls(): number;
  /** Committed offset lag per assigned command partition (last measured). */
  consumerLag(): ReadonlyMap<number, number>;
  /** Open exchange orders driven here, and those whose status was last confirmed more than 60 s ago. */
  confirmationFreshness(): { open: number; overdue: number };
}

/** The webhook receiver's cumulative counts that are not one per delivery (read on scrape). */
export interface WebhookReceiverCounts {
  readonly counters: { readonly hintFailed: number };
  /** Verified deliveries per position in the list of signing secrets. */
  readonly verifiedBySecret: readonly number[];
}

export type CommandResult = 'accepted' | 'duplicate' | 'rejected' | 'consumed' | 'error';

/** Where the commands are consumed: the messaging attributes of the command metrics. */
export interface CommandSource {
  readonly topic: string;
  readonly consumerGroup: string;
}

export class WorkerMetrics {
  readonly #exporter: PrometheusExporter;
  readonly #serializer = new PrometheusSerializer('', false, undefined, false, true);
  #sources: WorkerGaugeSources | undefined;
  #webhookCounts: WebhookReceiverCounts | undefined;

  readonly commandDuration;
  readonly commands;
  readonly exchangeCallDuration;
  readonly exchangeErrors;
  readonly retryAfterCapped;
  readonly budgetWait;
  readonly kafkaCommitDuration;
  readonly kafkaTransactions;
  readonly eventsPublished;
  readonly orders;
  readonly ordersRestored;
  readonly leasesLost;
  readonly leasesTakenOver;
  readonly reconcileNudges;
  readonly orphansAdopted;
  readonly ordersPassivated;
  readonly ordersReactivated;
  readonly pollsDeferred;
  readonly pollsAtRest;
  readonly listingPages;
  readonly listingRows;
  readonly listingWalksFailed;
  readonly webhooks;
  readonly webhooksShed;
  readonly webhookRequestDuration;
  readonly webhookToEvent;
  readonly heapReductions;
  readonly createDoubts;
  readonly orderWritesFailed;
  readonly depositsUnrecorded;

  /** The exporter must be one of the meter provider's readers (see sdk.ts); `meter` comes from that provider. */
  readonly #meter: Meter;

  constructor(meter: Meter, exporter: PrometheusExporter) {
    this.#exporter = exporter;
    this.#meter = meter;
    const seconds = (name: string, description: string, buckets = latencyBucketsSeconds) =>
      meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: buckets } });
    const counter = (name: string, unit: string, description: string) =>
      meter.createCounter(name, { description, unit });
    this.commandDuration = seconds(
      'messaging.process.duration',
      'time to handle one command, from delivery to its committed Kafka transaction (command_type, result)',
    );
    this.commands = counter(
      'messaging.client.consumed.messages',
      '{message}',
      'commands consumed and handled (command_type, result, reason for rejections)',
    );
    this.exchangeCallDuration = seconds(
      'worker.exchange.call.duration',
      'one exchange call including retries and budget waits (operation, mode, outcome)',
    );
    this.exchangeErrors = counter(
      'worker.exchange.errors',
      '{attempt}',
      'failed exchange attempts by classification (operation, error_type, action)',
    );
    this.retryAfterCapped = counter(
      'worker.exchange.retry_after_capped',
      '{response}',
      'throttled answers whose Retry-After exceeded EXCHANGE_RETRY_AFTER_MAX_MS and was cut to it (operation)',
    );
    this.budgetWait = seconds(
      'worker.exchange.budget_wait',
      'time an exchange call waited for the shared request budget (mode, priority)',
    );
    this.kafkaCommitDuration = seconds(
      'worker.kafka.transaction.duration',
      'one Kafka transaction, begin to commit or abort (outcome)',
    );
    this.kafkaTransactions = counter(
      'worker.kafka.transactions',
      '{transaction}',
      'Kafka transactions committed',
    );
    this.eventsPublished = counter(
      'worker.events_published',
      '{event}',
      'order events committed to the events topic (event_type)',
    );
    this.orders = counter(
      'worker.orders',
      '{order}',
      'orders by outcome: created, completed, refunded, canceled, failed',
    );
    this.ordersRestored = counter(
      'worker.orders_restored',
      '{order}',
      'orders restored from the state topic (partition moved here, or lease reloaded)',
    );
    this.leasesLost = counter(
      'worker.lease.lost',
      '{lease}',
      'order leases this replica lost while driving the order',
    );
    this.leasesTakenOver = counter(
      'worker.lease.taken_over',
      '{lease}',
      'order leases this replica took for orders another replica (or an earlier run) drove',
    );
    this.reconcileNudges = counter(
      'worker.reconcile.nudges',
      '{poll}',
      'overdue polls started by the reconciliation sweep',
    );
    this.orphansAdopted = counter(
      'worker.orphans.adopted',
      '{order}',
      'unfinished orders found driven by nobody on an assigned partition and taken up by the orphan sweep',
    );
    this.ordersPassivated = counter(
      'worker.orders_passivated',
      '{order}',
      'idle orders whose actor was stopped, keeping only their record and next deadline (PASSIVATE_IDLE_MS)',
    );
    this.ordersReactivated = counter(
      'worker.orders_reactivated',
      '{order}',
      'passivated orders whose actor was re-created (reason: timer, hint, command, reconcile, listing, poll)',
    );
    this.pollsDeferred = counter(
      'worker.polls.deferred',
      '{step}',
      'routine polls of resting orders put off by one step (5 s) at rest (reason: saturated, the replica was, within 60 s of their last confirmation; calls_at_capacity, the polls at rest already out were at their maximum)',
    );
    this.pollsAtRest = counter(
      'worker.polls.at_rest',
      '{poll}',
      'routine polls of resting orders made without waking them (outcome: confirmed, it rests on; news or failed, it was woken with the answer)',
    );
    this.listingPages = counter(
      'worker.listing.pages',
      '{page}',
      'pages of GET /orders/?status=<code> fetched by the CeFi listing reconciler (mode)',
    );
    this.listingRows = counter(
      'worker.listing.orders',
      '{order}',
      'listed orders by outcome: confirmed (same status, no GET), differed (status changed: GET), ignored, not_here',
    );
    this.listingWalksFailed = counter(
      'worker.listing.walks_failed',
      '{walk}',
      'listing walks stopped early on an error (mode); the next round walks them again',
    );
    this.webhooks = counter(
      'worker.webhooks',
      '{delivery}',
      'webhook deliveries by result: routed, duplicate, unknown_order, kyc, refused (signature), unreadable, not_routed, starting, failed',
    );
    this.webhooksShed = counter(
      'worker.webhooks_shed',
      '{delivery}',
      'webhook deliveries turned away unread (reason: body_budget, WEBHOOK_MAX_UNVERIFIED_BYTES in flight; connections, WEBHOOK_MAX_CONNECTIONS open)',
    );
    this.webhookRequestDuration = seconds(
      'http.server.request.duration',
      'requests to the webhook server (HTTP_PORT), from the first byte read to the answer sent',
      httpBucketsSeconds,
    );
    this.webhookToEvent = seconds(
      'worker.webhook_to_event',
      'from a webhook received to the committed event of the poll it triggered',
    );
    this.createDoubts = counter(
      'worker.create_doubts',
      '{create}',
      'creates that did not end as their POST answer suggested (kind: claimed_elsewhere, reused_foreign, claim_unconfirmed, near_match, lookup_unreachable; route_claimed_elsewhere: a published order whose reference another order claims); see docs/operations.md',
    );
    this.orderWritesFailed = counter(
      'worker.order_writes_failed',
      '{write}',
      'writes of an order that failed (not refused), by what followed: reloaded (from its last durable record) or halted (a second failure in a row: order.parked internal_error, code write_failed)',
    );
    this.depositsUnrecorded = counter(
      'worker.deposits_unrecorded',
      '{order}',
      'orders that ended with a deposit their client submitted and the exchange had not recorded on them (outcome: completed, refunded, canceled, failed; state: unconfirmed, retrying, rejected): the money must be traced by hand',
    );
    this.heapReductions = counter(
      'worker.heap_reductions',
      '{collection}',
      'memory-reducing collections run after restores and revokes (reason: start, restore, revoke): the replica at rest again',
    );

    const gauge = (
      name: string,
      unit: string,
      description: string,
      read: (s: WorkerGaugeSources) => number,
    ) =>
      meter.createObservableGauge(name, { description, unit }).addCallback((result) => {
        if (this.#sources) result.observe(read(this.#sources));
      });
    gauge('worker.active_orders', '{order}', 'orders driven by this replica', (s) => s.activeOrders());
    gauge(
      'worker.passivated_orders',
      '{order}',
      'orders driven by this replica whose actor is stopped while they wait (part of worker_active_orders)',
      (s) => s.passivatedOrders(),
    );
    gauge(
      'worker.known_orders',
      '{order}',
      'orders in the state store, every partition (open, and finished within their retention)',
      (s) => s.knownOrders(),
    );
    gauge('worker.partitions_owned', '{partition}', 'command partitions assigned to this replica', (s) =>
      s.partitionsOwned(),
    );
    gauge('worker.consumer.paused', '', '1 while command consumption is paused by backpressure', (s) =>
      s.consumerPaused() ? 1 : 0,
    );
    gauge(
      'worker.exchange_orders.open',
      '{order}',
      'unfinished orders driven by this replica that exist at the exchange',
      (s) => s.confirmationFreshness().open,
    );
    gauge(
      'worker.exchange_orders.unconfirmed_60s',
      '{order}',
      'of those, orders whose status was last confirmed (GET, or a listing of the same status) more than 60 s ago',
      (s) => s.confirmationFreshness().overdue,
    );
    gauge(
      'worker.exchange.calls_inflight',
      '{call}',
      'exchange calls in progress (budget wait included)',
      (s) => s.inflightExchangeCalls(),
    );
    meter
      .createObservableGauge('process.memory.usage', {
        description: 'resident set size of the worker process',
        unit: 'By',
      })
      .addCallback((result) => result.observe(process.memoryUsage().rss));
    meter
      .createObservableGauge('worker.open_orders', {
        description: 'unfinished orders driven by this replica, by machine state',
        unit: '{order}',
      })
      .addCallback((result) => {
        for (const [state, count] of this.#sources?.openOrdersByState() ?? [])
          result.observe(count, { state });
      });
    meter
      .createObservableGauge('worker.consumer.lag', {
        description: 'messages of the commands topic not yet committed by the group, per assigned partition',
        unit: '{message}',
      })
      .addCallback((result) => {
        for (const [partition, lag] of this.#sources?.consumerLag() ?? [])
          result.observe(lag, { partition: String(partition) });
      });
    meter
      .createObservableCounter('worker.webhook_hints.failed', {
        description:
          'webhook hints or KYC events that could not be written to Kafka (answered 2xx anyway; the poll covers them)',
        unit: '{hint}',
      })
      .addCallback((result) => {
        if (this.#webhookCounts) result.observe(this.#webhookCounts.counters.hintFailed);
      });
    meter
      .createObservableCounter('worker.webhooks_verified', {
        description: 'webhook deliveries verified, by position of the signing secret (secret)',
        unit: '{delivery}',
      })
      .addCallback((result) => {
        this.#webhookCounts?.verifiedBySecret.forEach((count, index) =>
          result.observe(count ?? 0, { secret: String(index) }),
        );
      });
  }

  /** The exchange client's observer port (src/exchange/transport.ts ExchangeCallObserver). */
  exchangeObserver() {
    return {
      callFinished: (call: { operation: string; mode: string; outcome: string; seconds: number }): void =>
        this.exchangeCallDuration.record(call.seconds, {
          operation: call.operation,
          mode: call.mode,
          outcome: call.outcome,
        }),
      attemptFailed: (attempt: { operation: string; errorType: string; action: string }): void =>
        this.exchangeErrors.add(1, {
          operation: attempt.operation,
          error_type: attempt.errorType,
          action: attempt.action,
        }),
      budgetWaited: (wait: { mode: string; priority: string; seconds: number }): void =>
        this.budgetWait.record(wait.seconds, { mode: wait.mode, priority: wait.priority }),
      retryAfterCapped: (capped: { operation: string }): void =>
        this.retryAfterCapped.add(1, { operation: capped.operation }),
    };
  }

  /** The order host's observer port (src/worker/order-host.ts OrderHostMetrics). */
  hostObserver(source: CommandSource) {
    // The messaging semantic conventions' attributes of a consumer's processing.
    const messaging = {
      [ATTR_MESSAGING_SYSTEM]: 'kafka',
      [ATTR_MESSAGING_OPERATION_NAME]: 'process',
      [ATTR_MESSAGING_DESTINATION_NAME]: source.topic,
      [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: source.consumerGroup,
    };
    return {
      commandHandled: (command: {
        commandType: string;
        result: string;
        reason?: string;
        seconds: number;
      }): void => {
        const labels = { ...messaging, command_type: command.commandType, result: command.result };
        this.commandDuration.record(command.seconds, labels);
        this.commands.add(1, command.reason ? { ...labels, reason: command.reason } : labels);
      },
      eventsCommitted: (eventTypes: string[]): void => {
        for (const type of eventTypes) {
          this.eventsPublished.add(1, { event_type: type });
          if (orderOutcomes.has(type)) this.orders.add(1, { outcome: type.slice('order.'.length) });
        }
      },
      webhookToEvent: (seconds: number): void => this.webhookToEvent.record(seconds),
      leaseLost: (): void => this.leasesLost.add(1),
      leaseTakenOver: (): void => this.leasesTakenOver.add(1),
      orderRestored: (): void => this.ordersRestored.add(1),
      reconcileNudged: (count: number): void => this.reconcileNudges.add(count),
      orphanTakenUp: (): void => this.orphansAdopted.add(1),
      orderPassivated: (): void => this.ordersPassivated.add(1),
      orderReactivated: (reason: string): void => this.ordersReactivated.add(1, { reason }),
      pollDeferred: (reason: string): void => this.pollsDeferred.add(1, { reason }),
      polledAtRest: (outcome: string): void => this.pollsAtRest.add(1, { outcome }),
      writeFailed: (outcome: string): void => this.orderWritesFailed.add(1, { outcome }),
      depositUnrecorded: (outcome: string, state: string): void =>
        this.depositsUnrecorded.add(1, { outcome, state }),
    };
  }

  /** The HTTP face's port (src/http/http-face.ts): deliveries by result, deliveries shed, and every request. */
  webhookObserver() {
    return {
      delivered: (result: string): void => this.webhooks.add(1, { result }),
      shed: (reason: string): void => this.webhooksShed.add(1, { reason }),
      requestDone: (request: {
        method: string;
        route: string | undefined;
        status: number;
        seconds: number;
      }): void =>
        this.webhookRequestDuration.record(request.seconds, {
          [ATTR_HTTP_REQUEST_METHOD]: request.method,
          [ATTR_HTTP_RESPONSE_STATUS_CODE]: request.status,
          [ATTR_URL_SCHEME]: 'http',
          ...(request.route === undefined ? {} : { [ATTR_HTTP_ROUTE]: request.route }),
        }),
    };
  }

  /** A memory-reducing collection done (src/process/heap-reducer.ts HeapReducerOptions.onReduced). */
  heapReduced = (reason: string): void => this.heapReductions.add(1, { reason });

  /** The CeFi listing reconciler's observer port (src/worker/cefi-listing.ts ListingMetrics). */
  listingObserver() {
    return {
      pageFetched: (mode: string): void => this.listingPages.add(1, { mode }),
      rowsListed: (outcome: string, count: number): void => this.listingRows.add(count, { outcome }),
      walkFailed: (mode: string): void => this.listingWalksFailed.add(1, { mode }),
    };
  }

  /** Binds the observable gauges to the running worker (before that they report nothing). */
  observe(sources: WorkerGaugeSources): void {
    this.#sources = sources;
  }

  /** Binds the webhook receiver's hint failures and verifying secrets (read on scrape). */
  observeWebhookReceiver(receiver: WebhookReceiverCounts): void {
    this.#webhookCounts = receiver;
  }

  /** The fleet's gauges (parked, oldest parked age, stalled), read from the read view on scrape (fleet-metrics.ts). */
  observeFleet(source: FleetGaugeSource): void {
    observeFleet(this.#meter, source);
  }

  /** The Prometheus text exposition of every instrument (the body of `GET /metrics`). */
  async render(): Promise<string> {
    const { resourceMetrics, errors } = await this.#exporter.collect();
    const text = this.#serializer.serialize(withPrometheusNames(resourceMetrics));
    return errors.length ? `${text}# collection errors: ${errors.length}\n` : text;
  }

  /** A ready-made `GET /metrics` handler for a plain node:http server. */
  handle = (_req: IncomingMessage, res: ServerResponse): void => {
    this.render().then(
      (text) => {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
        res.end(text);
      },
      (error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`# metrics collection failed: ${(error as Error).message}\n`);
      },
    );
  };
}

/** Seconds since `startedAt` (a performance.now() reading). */
export function secondsSince(startedAt: number): number {
  return (performance.now() - startedAt) / 1000;
}
