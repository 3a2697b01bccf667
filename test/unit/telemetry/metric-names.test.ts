// Metric names by the OpenTelemetry conventions: the instruments use the semantic conventions' names and units where
// one exists, and /metrics shows them as the specification's Prometheus compatibility rules translate them (unit
// suffix, then `_total`). Every instrument the worker creates is exported; the webhook receiver's counters are
// among them (one metrics path: nothing hand-written beside the SDK's exposition).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prometheusName, unitSuffix } from '../../../src/telemetry/prometheus-names.ts';
import { workerMetricFamilies } from '../../support/worker-metric-families.ts';

describe('Prometheus names of OpenTelemetry instruments', () => {
  it('add the unit as a suffix, once, before _total', () => {
    expect(prometheusName('http.server.request.duration', 's', false)).toBe(
      'http_server_request_duration_seconds',
    );
    expect(prometheusName('process.memory.usage', 'By', true)).toBe('process_memory_usage_bytes');
    expect(prometheusName('nodejs.eventloop.utilization', '1', true)).toBe(
      'nodejs_eventloop_utilization_ratio',
    );
    expect(prometheusName('nodejs.eventloop.time', 's', false)).toBe('nodejs_eventloop_time_seconds');
    expect(prometheusName('worker_command_duration_seconds', 's', false)).toBe(
      'worker_command_duration_seconds',
    );
    expect(prometheusName('legacy_wait_total', 's', false)).toBe('legacy_wait_seconds_total');
    expect(prometheusName('messaging.client.consumed.messages', '{message}', false)).toBe(
      'messaging_client_consumed_messages',
    );
    expect(unitSuffix('By/s', true)).toBe('bytes_per_seconds');
    expect(unitSuffix('', true)).toBe('');
  });
});

describe('the worker metrics', async () => {
  const { text, families, instruments } = await workerMetricFamilies();

  it('exports every instrument it creates', () => {
    const exported = [...families.keys()].map((name) => name.replace(/_total$/, ''));
    const missing = instruments.filter(
      (name) => !exported.some((family) => family.startsWith(name.replace(/\./g, '_'))),
    );
    expect(missing).toEqual([]);
    expect(instruments.length).toBeGreaterThan(30);
  });

  it('uses the semantic conventions where one exists, with their units', () => {
    expect(instruments).toEqual(
      expect.arrayContaining([
        'messaging.process.duration',
        'messaging.client.consumed.messages',
        'http.server.request.duration',
        'process.memory.usage',
      ]),
    );
    expect(families.get('messaging_process_duration_seconds')).toBe('histogram');
    expect(families.get('messaging_client_consumed_messages_total')).toBe('counter');
    expect(families.get('http_server_request_duration_seconds')).toBe('histogram');
    expect(families.get('process_memory_usage_bytes')).toBe('gauge');
    expect(text).toMatch(
      /^messaging_process_duration_seconds_count\{[^}]*messaging_system="kafka"[^}]*messaging_destination_name="commands"[^}]*messaging_consumer_group_name="group"/m,
    );
    expect(text).toMatch(
      /^http_server_request_duration_seconds_count\{[^}]*http_route="\/webhooks\/exchange"/m,
    );
  });

  it('names no instrument by a namespace of another, and puts no unit in a name', () => {
    const nested = instruments.filter((name) => instruments.some((other) => other.startsWith(`${name}.`)));
    expect(nested).toEqual([]);
    expect(instruments.filter((name) => /(_seconds|_bytes|_total)$/.test(name))).toEqual([]);
  });

  it("exports the webhook receiver's counters through the SDK, labelled, not as hand-written text", () => {
    expect(families.get('worker_webhooks_total')).toBe('counter');
    expect(families.get('worker_webhook_hints_failed_total')).toBe('counter');
    expect(families.get('worker_webhooks_verified_total')).toBe('counter');
    expect(families.get('worker_webhooks_shed_total')).toBe('counter');
    expect(text).toMatch(/^worker_webhooks_total\{result="refused"\} 1$/m);
    expect(text).toMatch(/^worker_webhooks_verified_total\{secret="0"\} 2$/m);
    expect(
      [...families.keys()].filter((name) => /^worker_webhooks_[a-z_]+_total$/.test(name)).sort(),
    ).toEqual(['worker_webhooks_shed_total', 'worker_webhooks_verified_total']);
  });

  it('is what the README and the runbook name (the renames table aside)', () => {
    const root = join(import.meta.dirname, '..', '..', '..');
    const runbook = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
    const renames = runbook.slice(
      runbook.indexOf('## Metric names'),
      runbook.indexOf('\n## ', runbook.indexOf('## Metric names') + 5),
    );
    const docs = readFileSync(join(root, 'README.md'), 'utf8') + runbook.replace(renames, '');
    const named = new Set(
      [...docs.matchAll(/\b((?:worker|messaging|http_server|process_memory)_[a-z0-9_]+)/g)].map((m) =>
        (m[1] as string).replace(/_(bucket|count|sum)$/, ''),
      ),
    );
    // Label names and a log field that look like metric names.
    const notMetrics = new Set([
      'worker_id',
      'messaging_system',
      'messaging_operation_name',
      'messaging_destination_name',
      'messaging_consumer_group_name',
    ]);
    const exported = new Set([...families.keys(), ...notMetrics]);
    expect([...named].filter((name) => !exported.has(name))).toEqual([]);
  });
});
