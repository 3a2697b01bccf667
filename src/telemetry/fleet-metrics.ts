// The fleet's gauges, beside the worker's own (metrics.ts): parked orders, the oldest parked order's age and stalled
// orders, each over the orders of the partitions this replica owns, so that a sum over replicas counts each order
// once. Read from the read view on scrape. Alerts on them (docs/operations.md, "Fleet alerts") start at a console
// page or an inspector command.
import type { Meter } from '@opentelemetry/api';

export interface FleetGaugeSource {
  /** Counts over the orders this replica owns, at the time of the scrape. */
  counts(): { parked: number; oldestParkedSeconds: number; stalled: number };
}

/** The names, for the PrometheusRule and the runbook. */
export const fleetMetricNames = {
  parked: 'worker_parked_orders',
  oldestParkedAge: 'worker_oldest_parked_order_age_seconds',
  stalled: 'worker_stalled_orders',
} as const;

/** Registers the gauges on the worker's meter (WorkerMetrics.observeFleet): one metrics path. */
export function observeFleet(meter: Meter, source: FleetGaugeSource): void {
  // One computation per scrape serves the three gauges (they are observed in one batch).
  let last: { at: number; value: ReturnType<FleetGaugeSource['counts']> } | undefined;
  const read = (): ReturnType<FleetGaugeSource['counts']> => {
    const now = Date.now();
    if (!last || now - last.at > 1_000) last = { at: now, value: source.counts() };
    return last.value;
  };
  meter
    .createObservableGauge('worker.parked_orders', {
      unit: '{order}',
      description:
        'orders of the partitions this replica owns that wait for an operator (order.parked: create in doubt, or halted)',
    })
    .addCallback((result) => result.observe(read().parked));
  meter
    .createObservableGauge('worker.oldest_parked_order_age', {
      description: 'how long the oldest of those parked orders has waited (0 when none)',
      unit: 's',
    })
    .addCallback((result) => result.observe(read().oldestParkedSeconds));
  meter
    .createObservableGauge('worker.stalled_orders', {
      unit: '{order}',
      description:
        'open orders (not parked) of the partitions this replica owns whose state has not changed for STALLED_AFTER_MS',
    })
    .addCallback((result) => result.observe(read().stalled));
}
