// OpenTelemetry metric names in Prometheus, as the OpenTelemetry specification's Prometheus compatibility rules
// translate them: characters Prometheus does not allow become `_`, the unit becomes a suffix (`s` -> `_seconds`,
// `By` -> `_bytes`, `1` on a gauge -> `_ratio`; `{annotations}` add none) unless the name already ends with it, and the
// exporter adds `_total` to monotonic sums. `@opentelemetry/exporter-prometheus` (0.223) does all of it except the
// unit suffix; `WorkerMetrics.render()` applies this before serialising, so an instrument is named once, by the
// OpenTelemetry conventions (`http.server.request.duration`, unit `s`), and scraped as
// `http_server_request_duration_seconds`, as the Collector's Prometheus exporter would show it.
import { DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

const unitWords: Record<string, string> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  '%': 'percent',
};

/** The Prometheus suffix of a unit ('' when it has none: an annotation like `{order}`, or no unit). */
export function unitSuffix(unit: string, isGauge: boolean): string {
  const plain = unit.replace(/\{[^}]*\}/g, '').trim();
  if (plain === '') return '';
  if (plain === '1') return isGauge ? 'ratio' : '';
  const [per, by] = plain.split('/', 2) as [string, string | undefined];
  const word = (part: string): string => unitWords[part] ?? part.replace(/[^a-zA-Z0-9]/g, '_');
  return by === undefined ? word(per) : `${word(per)}_per_${word(by)}`;
}

/** The Prometheus name of an instrument, before the exporter's `_total`. */
export function prometheusName(name: string, unit: string, isGauge: boolean): string {
  const base = name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/_+/g, '_');
  const suffix = unitSuffix(unit, isGauge);
  if (suffix === '') return base;
  const bare = base.endsWith('_total') ? base.slice(0, -'_total'.length) : base;
  return bare.endsWith(`_${suffix}`) ? base : `${bare}_${suffix}${bare === base ? '' : '_total'}`;
}

function translated(metric: MetricData): MetricData {
  const isGauge = metric.dataPointType === DataPointType.GAUGE;
  const name = prometheusName(metric.descriptor.name, metric.descriptor.unit, isGauge);
  return name === metric.descriptor.name ? metric : { ...metric, descriptor: { ...metric.descriptor, name } };
}

/** A copy of collected metrics with every name translated (the collected objects are left as they are). */
export function withPrometheusNames(resourceMetrics: ResourceMetrics): ResourceMetrics {
  return {
    ...resourceMetrics,
    scopeMetrics: resourceMetrics.scopeMetrics.map((scope) => ({
      ...scope,
      metrics: scope.metrics.map(translated),
    })),
  };
}
