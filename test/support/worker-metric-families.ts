// Every metric the worker exports, as a scrape of /metrics shows it: WorkerMetrics on a real meter provider and
// Prometheus exporter (as src/telemetry/sdk.ts builds them), each of its observer ports called once and its gauges
// bound, then rendered. Instruments the worker creates are recorded as they are created, so a new instrument that
// this exercise does not reach fails `everyInstrumentRendered` rather than going unchecked (alert rules, docs).
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { Meter } from '@opentelemetry/api';
import { WorkerMetrics } from '../../src/telemetry/metrics.ts';

export interface MetricFamilies {
  /** The /metrics body. */
  text: string;
  /** Prometheus family name -> type (counter, gauge, histogram). */
  families: Map<string, string>;
  /** OpenTelemetry names of the instruments WorkerMetrics created. */
  instruments: string[];
}

/** Records the names of the instruments created through it. */
function recordingMeter(meter: Meter, names: string[]): Meter {
  return new Proxy(meter, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || !String(property).startsWith('create')) return value;
      return (name: string, ...rest: unknown[]) => {
        names.push(name);
        return (value as (...args: unknown[]) => unknown).call(target, name, ...rest);
      };
    },
  });
}

export async function workerMetricFamilies(): Promise<MetricFamilies> {
  const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const instruments: string[] = [];
  const metrics = new WorkerMetrics(recordingMeter(provider.getMeter('test'), instruments), exporter);
  try {
    const exchange = metrics.exchangeObserver();
    exchange.callFinished({ operation: 'getOrder', mode: 'cefi', outcome: 'ok', seconds: 0.1 });
    exchange.attemptFailed({ operation: 'getOrder', errorType: 'throttled', action: 'throttled' });
    exchange.budgetWaited({ mode: 'cefi', priority: 'low', seconds: 0.01 });
    exchange.retryAfterCapped({ operation: 'getOrder' });
    const host = metrics.hostObserver({ topic: 'commands', consumerGroup: 'group' });
    host.commandHandled({
      commandType: 'order.create',
      result: 'rejected',
      reason: 'malformed',
      seconds: 0.01,
    });
    host.eventsCommitted(['order.created', 'order.parked']);
    host.webhookToEvent(1);
    host.leaseLost();
    host.leaseTakenOver();
    host.orderRestored();
    host.reconcileNudged(1);
    host.orphanTakenUp();
    host.orderPassivated();
    host.orderReactivated('hint');
    host.pollDeferred('saturated');
    host.polledAtRest('confirmed');
    host.writeFailed('reloaded');
    host.depositUnrecorded('canceled', 'unconfirmed');
    const listing = metrics.listingObserver();
    listing.pageFetched('cefi');
    listing.rowsListed('confirmed', 1);
    listing.walkFailed('cefi');
    const webhooks = metrics.webhookObserver();
    webhooks.delivered('refused');
    webhooks.shed('body_budget');
    webhooks.requestDone({ method: 'POST', route: '/webhooks/exchange', status: 401, seconds: 0.002 });
    metrics.heapReduced('restore');
    metrics.createDoubts.add(1, { kind: 'near_match' });
    metrics.observeFleet({ counts: () => ({ parked: 1, oldestParkedSeconds: 2, stalled: 0 }) });
    metrics.kafkaTransactions.add(1);
    metrics.kafkaCommitDuration.record(0.02, { outcome: 'committed' });
    metrics.observe({
      activeOrders: () => 1,
      knownOrders: () => 1,
      openOrdersByState: () => new Map([['creating.parked', 1]]),
      passivatedOrders: () => 0,
      partitionsOwned: () => 1,
      consumerPaused: () => false,
      inflightExchangeCalls: () => 0,
      consumerLag: () => new Map([[0, 3]]),
      confirmationFreshness: () => ({ open: 1, overdue: 0 }),
    });
    metrics.observeWebhookReceiver({ counters: { hintFailed: 1 }, verifiedBySecret: [2] });
    const text = await metrics.render();
    const families = new Map(
      [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1] as string, match[2] as string]),
    );
    return { text, families, instruments };
  } finally {
    await provider.shutdown();
  }
}
