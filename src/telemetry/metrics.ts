// The worker's metrics: OpenTelemetry instruments read by the Prometheus exporter on scrape. Names carry their
// Prometheus unit suffix themselves (`_seconds`, `_bytes`; the exporter adds `_total` to counters but no unit
// suffix). Label values come from small closed sets (command types, rejection reasons, operations, modes, error
// codes, machine states): never an order id, a key, a token or a URL.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Meter } from '@opentelemetry/api';
import { PrometheusSerializer, type PrometheusExporter } from '@opentelemetry/exporter-prometheus';

/** Seconds: from a fast Redis round trip to a slow actionable quote. */
const latencyBucketsSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

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

export type CommandResult = 'accepted' | 'duplicate' | 'rejected' | 'consumed' | 'error';

export class WorkerMetrics {
  readonly #exporter: PrometheusExporter;
  readonly #serializer = new PrometheusSerializer('', false, undefined, false, true);
  #sources: WorkerGaugeSources | undefined;

  readonly commandDuration;
  readonly commands;
  readonly exchangeCallDuration;
  readonly exchangeErrors;
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
  readonly webhookToEvent;
  readonly heapReductions;
  readonly orderWritesFailed;
  readonly depositsUnrecorded;

  /** The exporter must be one of the meter provider's readers (see sdk.ts); `meter` comes from that provider. */
  constructor(meter: Meter, exporter: PrometheusExporter) {
    this.#exporter = exporter;
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, {
        description,
        unit: 's',
        advice: { explicitBucketBoundaries: latencyBucketsSeconds },
      });
    const counter = (name: string, description: string) => meter.createCounter(name, { description });
    this.commandDuration = seconds(
      'worker_command_duration_seconds',
      'time to handle one command, from delivery to its committed Kafka transaction (command_type, result)',
    );
    this.commands = counter(
      'worker_commands',
      'commands consumed (command_type, result, reason for rejections)',
    );
    this.exchangeCallDuration = seconds(
      'worker_exchange_call_duration_seconds',
      'one exchange call including retries and budget waits (operation, mode, outcome)',
    );
    this.exchangeErrors = counter(
      'worker_exchange_errors',
      'failed exchange attempts by classification (operation, error_type, action)',
    );
    this.budgetWait = seconds(
      'worker_exchange_budget_wait_seconds',
      'time an exchange call waited for the shared request budget (mode, priority)',
    );
    this.kafkaCommitDuration = seconds(
      'worker_kafka_transaction_duration_seconds',
      'one Kafka transaction, begin to commit or abort (outcome)',
    );
    this.kafkaTransactions = counter('worker_kafka_transactions', 'Kafka transactions committed');
    this.eventsPublished = counter(
      'worker_events_published',
      'order events committed to the events topic (event_type)',
    );
    this.orders = counter(
      'worker_orders',
      'orders by outcome: created, completed, refunded, canceled, failed',
    );
    this.ordersRestored = counter(
      'worker_orders_restored',
      'orders restored from the state topic (partition moved here, or lease reloaded)',
    );
    this.leasesLost = counter('worker_lease_lost', 'order leases this replica lost while driving the order');
    this.leasesTakenOver = counter(
      'worker_lease_taken_over',
      'order leases this replica took for orders another replica (or an earlier run) drove',
    );
    this.reconcileNudges = counter(
      'worker_reconcile_nudges',
      'overdue polls started by the reconciliation sweep',
    );
    this.orphansAdopted = counter(
      'worker_orphans_adopted',
      'unfinished orders found driven by nobody on an assigned partition and adopted by the orphan sweep',
    );
    this.ordersPassivated = counter(
      'worker_orders_passivated',
      'idle orders whose actor was stopped, keeping only their record and next deadline (PASSIVATE_IDLE_MS)',
    );
    this.ordersReactivated = counter(
      'worker_orders_reactivated',
      'passivated orders whose actor was re-created (reason: timer, hint, command, reconcile, listing, poll)',
    );
    this.pollsDeferred = counter(
      'worker_polls_deferred',
      'routine polls of resting orders put off by one step (5 s) at rest (reason: saturated, the replica was, within 60 s of their last confirmation; calls_at_capacity, the polls at rest already out were at their maximum)',
    );
    this.pollsAtRest = counter(
      'worker_polls_at_rest',
      'routine polls of resting orders made without waking them (outcome: confirmed, it rests on; news or failed, it was woken with the answer)',
    );
    this.listingPages = counter(
      'worker_listing_pages',
      'pages of GET /orders/?status=<code> fetched by the CeFi listing reconciler (mode)',
    );
    this.listingRows = counter(
      'worker_listing_orders',
      'listed orders by outcome: confirmed (same status, no GET), differed (status changed: GET), ignored, not_here',
    );
    this.listingWalksFailed = counter(
      'worker_listing_walks_failed',
      'listing walks stopped early on an error (mode); the next round walks them again',
    );
    this.webhooks = counter(
      'worker_webhooks',
      'webhook deliveries by result: routed, duplicate, unknown_order, kyc, refused, failed',
    );
    this.webhookToEvent = seconds(
      'worker_webhook_to_event_seconds',
      'from a webhook received to the committed event of the poll it triggered',
    );
    this.orderWritesFailed = counter(
      'worker_order_writes_failed',
      'writes of an order that failed (not refused), by what followed: reloaded (from its last durable record) or halted (a second failure in a row: order.parked internal_error, code write_failed)',
    );
    this.depositsUnrecorded = counter(
      'worker_deposits_unrecorded',
      'orders that ended with a deposit their client submitted and the exchange had not recorded on them (outcome: completed, refunded, canceled, failed; state: unconfirmed, retrying, rejected): the money must be traced by hand',
    );
    this.heapReductions = counter(
      'worker_heap_reductions',
      'memory-reducing collections run after restores and revokes (reason: start, restore, revoke): the replica at rest again',
    );

    const gauge = (name: string, description: string, read: (s: WorkerGaugeSources) => number, unit = '') =>
      meter.createObservableGauge(name, { description, unit }).addCallback((result) => {
        if (this.#sources) result.observe(read(this.#sources));
      });
    gauge('worker_active_orders', 'orders driven by this replica', (s) => s.activeOrders());
    gauge(
      'worker_passivated_orders',
      'orders driven by this replica whose actor is stopped while they wait (part of worker_active_orders)',
      (s) => s.passivatedOrders(),
    );
    gauge(
      'worker_known_orders',
      'orders in the state store, every partition (open, and finished within their retention)',
      (s) => s.knownOrders(),
    );
    gauge('worker_partitions_owned', 'command partitions assigned to this replica', (s) =>
      s.partitionsOwned(),
    );
    gauge('worker_consumer_paused', '1 while command consumption is paused by backpressure', (s) =>
      s.consumerPaused() ? 1 : 0,
    );
    gauge(
      'worker_exchange_orders_open',
      'unfinished orders driven by this replica that exist at the exchange',
      (s) => s.confirmationFreshness().open,
    );
    gauge(
      'worker_exchange_orders_unconfirmed_60s',
      'of those, orders whose status was last confirmed (GET, or a listing of the same status) more than 60 s ago',
      (s) => s.confirmationFreshness().overdue,
    );
    gauge('worker_exchange_calls_inflight', 'exchange calls in progress (budget wait included)', (s) =>
      s.inflightExchangeCalls(),
    );
    gauge(
      'process_resident_memory_bytes',
      'resident set size of the worker process',
      () => process.memoryUsage().rss,
      'By',
    );
    meter
      .createObservableGauge('worker_open_orders', {
        description: 'unfinished orders driven by this replica, by machine state',
      })
      .addCallback((result) => {
        for (const [state, count] of this.#sources?.openOrdersByState() ?? [])
          result.observe(count, { state });
      });
    meter
      .createObservableGauge('worker_consumer_lag', {
        description: 'messages of the commands topic not yet committed by the group, per assigned partition',
      })
      .addCallback((result) => {
        for (const [partition, lag] of this.#sources?.consumerLag() ?? [])
          result.observe(lag, { partition: String(partition) });
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
    };
  }

  /** The order host's observer port (src/worker/order-host.ts OrderHostMetrics). */
  hostObserver() {
    return {
      commandHandled: (command: {
        commandType: string;
        result: string;
        reason?: string;
        seconds: number;
      }): void => {
        const labels = { command_type: command.commandType, result: command.result };
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
      orphanAdopted: (): void => this.orphansAdopted.add(1),
      orderPassivated: (): void => this.ordersPassivated.add(1),
      orderReactivated: (reason: string): void => this.ordersReactivated.add(1, { reason }),
      pollDeferred: (reason: string): void => this.pollsDeferred.add(1, { reason }),
      polledAtRest: (outcome: string): void => this.pollsAtRest.add(1, { outcome }),
      writeFailed: (outcome: string): void => this.orderWritesFailed.add(1, { outcome }),
      depositUnrecorded: (outcome: string, state: string): void =>
        this.depositsUnrecorded.add(1, { outcome, state }),
    };
  }

  /** A memory-reducing collection done (src/worker/heap-reducer.ts HeapReducerOptions.onReduced). */
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

  /** The Prometheus text exposition of every instrument (the body of `GET /metrics`). */
  async render(): Promise<string> {
    const { resourceMetrics, errors } = await this.#exporter.collect();
    const text = this.#serializer.serialize(resourceMetrics);
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
