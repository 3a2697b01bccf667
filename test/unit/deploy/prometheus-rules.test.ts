// The alert rules (deploy/k8s/monitoring/prometheus-rule.yaml) as Prometheus will run them: `promtool check rules`
// accepts them and `promtool test rules` passes their unit tests (prometheus-rule.test.yaml; promtool is the Debian
// package `prometheus`, which .ci/run installs: no promtool, the test fails); every metric an expression reads is one
// the worker exports (its metric definitions, rendered as /metrics shows them); every runbook_url points at a
// heading of docs/operations.md that exists; and the alerts the runbook promises are there.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { workerMetricFamilies } from '../../support/worker-metric-families.ts';
import { deployRoot } from './kustomize-renderer.ts';

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const monitoring = join(deployRoot, 'k8s', 'monitoring');
const resource = parseYaml(readFileSync(join(monitoring, 'prometheus-rule.yaml'), 'utf8')) as {
  spec: { groups: Array<{ name: string; rules: Rule[] }> };
};
const rules = resource.spec.groups.flatMap((group) => group.rules);
const alerts = rules.filter((rule) => rule.alert !== undefined);

const work = mkdtempSync(join(tmpdir(), 'eow-rules-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
writeFileSync(join(work, 'rules.yaml'), stringify(resource.spec));
copyFileSync(join(monitoring, 'prometheus-rule.test.yaml'), join(work, 'test.yaml'));

function promtool(...args: string[]): string {
  try {
    return execFileSync('promtool', args, { cwd: work, encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const failure = error as { code?: string; stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT')
      throw new Error('promtool is not installed (Debian package `prometheus`; .ci/run installs it)', {
        cause: error,
      });
    throw new Error(`promtool ${args.join(' ')} failed:\n${failure.stdout ?? ''}${failure.stderr ?? ''}`, {
      cause: error,
    });
  }
}

/** The metric names a PromQL expression reads (labels, grouping lists, strings, functions and keywords left out). */
export function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const keywords = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);
  return [...bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?/g)]
    .filter((match) => match[2] === undefined && !keywords.has((match[1] as string).toLowerCase()))
    .map((match) => match[1] as string);
}

/** GitHub's anchors of a Markdown file's headings. */
function headingAnchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((match) =>
      (match[1] as string)
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('the alert rules', () => {
  it('pass promtool check rules', () => {
    expect(promtool('check', 'rules', 'rules.yaml')).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('pass their promtool unit tests', () => {
    expect(promtool('test', 'rules', 'test.yaml')).toContain('SUCCESS');
  });

  it('have a unit test for every alert', () => {
    const tested = readFileSync(join(monitoring, 'prometheus-rule.test.yaml'), 'utf8');
    expect(alerts.filter((rule) => !tested.includes(`alertname: ${rule.alert}`))).toEqual([]);
  });

  it('read only metrics the worker exports', async () => {
    const { families } = await workerMetricFamilies();
    const exported = (name: string): boolean =>
      families.has(name) || families.has(name.replace(/_(bucket|count|sum)$/, ''));
    const read = rules.flatMap((rule) =>
      metricsOf(rule.expr).map((metric) => ({ rule: rule.alert, metric })),
    );
    expect(read.length).toBeGreaterThanOrEqual(alerts.length);
    expect(read.filter(({ metric }) => !exported(metric))).toEqual([]);
  });

  it('finds the metrics of an expression (and only them)', () => {
    expect(
      metricsOf(
        'sum by (namespace, reason) (increase(messaging_client_consumed_messages_total{result="rejected", reason=~"a|b"}[10m])) > 0 and on (namespace) up',
      ),
    ).toEqual(['messaging_client_consumed_messages_total', 'up']);
  });

  it('link each alert to a heading of the runbook that exists', () => {
    const anchors = headingAnchors(readFileSync(join(deployRoot, '..', 'docs', 'operations.md'), 'utf8'));
    const links = alerts.map((rule) => ({ alert: rule.alert, url: rule.annotations?.['runbook_url'] ?? '' }));
    expect(links.filter(({ url }) => !/\/docs\/operations\.md#[a-z0-9-]+$/.test(url))).toEqual([]);
    expect(links.filter(({ url }) => !anchors.has(url.slice(url.indexOf('#') + 1)))).toEqual([]);
    expect(alerts.filter((rule) => !rule.labels?.['severity'] || !rule.annotations?.['summary'])).toEqual([]);
  });

  it('alert on parked orders, consumer lag, 429s, lease losses, webhook signature failures and rejected commands', () => {
    const watching = (metric: string, selector = ''): boolean =>
      alerts.some((rule) => rule.expr.includes(metric) && rule.expr.includes(selector));
    expect(watching('worker_events_published_total', 'event_type="order.parked"')).toBe(true);
    expect(watching('worker_consumer_lag')).toBe(true);
    expect(watching('worker_exchange_errors_total', 'error_type="throttled"')).toBe(true);
    expect(watching('worker_lease_lost_total')).toBe(true);
    expect(watching('worker_webhooks_total', 'result="refused"')).toBe(true);
    expect(watching('messaging_client_consumed_messages_total', 'result="rejected"')).toBe(true);
  });
});
