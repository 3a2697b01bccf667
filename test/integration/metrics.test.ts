// The metrics an SRE alerts on, scraped from a real worker process: histograms and labelled counters exist and
// move when an order flows (a command, an exchange call that failed once, a webhook, the poll it triggers and
// the event that follows), and the gauges report the process and the consumer.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  // No CeFi listing: a walk wakes a resting order for a moment (reason listing) and may be what finds its new
  // status, so the passivation test could not tell which woke it (worker-cefi-listing.test.ts covers the listing).
  cluster = await startCluster({ workers: 1, partitions: 2, env: { LIST_RECONCILE_INTERVAL_MS: '0' } });
});
afterAll(async () => {
  await cluster?.stop();
});

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${cluster.workers[0]!.metricsPort}/metrics`);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

/** The value of the first series whose name and labels match (labels given as `name="value"` fragments). */
function value(text: string, name: string, ...labels: string[]): number {
  const line = text
    .split('\n')
    .find(
      (l) =>
        (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) &&
        labels.every((label) => l.slice(0, l.lastIndexOf(' ')).includes(label)),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics', () => {
  it('exposes histograms and labelled counters that move when an order flows', async () => {
    const before = await scrape();
    const orderId = uniqueName('metered');
    // The poll the webhook triggers fails once with a 503 (an exchange error) and succeeds on its retry.
    cluster.sandbox.injectFault({
      target: 'endpoint',
      endpoint: 'GET /orders/{unique_reference}/',
      kind: 'http_error',
      status: 503,
      times: 1,
    });
    await cluster.send(orderCreateCommand('cefi', '1.95', orderId));
    await cluster.send({ ...orderCreateCommand('cefi', '1.96', `${orderId}-bad`), surprise: true });
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created');
    cluster.sandbox.advanceOrder(String(created['unique_reference']), 'deposit_seen');
    await cluster.collector.waitForOrderEvent(orderId, 'order.status_changed', 60_000);

    const expectations: Array<[string, string, string[]]> = [
      [
        'command handled',
        'messaging_process_duration_seconds_count',
        [
          'messaging_system="kafka"',
          'messaging_operation_name="process"',
          `messaging_destination_name="${cluster.topics.commands}"`,
          'command_type="order.create"',
          'result="accepted"',
        ],
      ],
      [
        'command counted',
        'messaging_client_consumed_messages_total',
        ['command_type="order.create"', 'result="accepted"'],
      ],
      [
        'rejection by reason',
        'messaging_client_consumed_messages_total',
        ['result="rejected"', 'reason="malformed"'],
      ],
      [
        'exchange call',
        'worker_exchange_call_duration_seconds_count',
        ['operation="createOrder"', 'mode="cefi"', 'outcome="ok"'],
      ],
      [
        'exchange error',
        'worker_exchange_errors_total',
        ['operation="getOrder"', 'error_type="http_503"', 'action="backoff"'],
      ],
      ['budget wait', 'worker_exchange_budget_wait_seconds_count', ['mode="cefi"']],
      ['kafka transaction', 'worker_kafka_transaction_duration_seconds_count', ['outcome="committed"']],
      ['webhook to event', 'worker_webhook_to_event_seconds_count', []],
      ['order outcome', 'worker_orders_total', ['outcome="created"']],
      ['events', 'worker_events_published_total', ['event_type="order.status_changed"']],
      ['webhooks', 'worker_webhooks_total', ['result="routed"']],
    ];
    // The webhook-to-event histogram is recorded when the poll's event commits: give it a moment.
    let after = await scrape();
    for (let i = 0; i < 50 && value(after, 'worker_webhook_to_event_seconds_count') === 0; i++) {
      await sleep(200);
      after = await scrape();
    }
    for (const [what, name, labels] of expectations) {
      expect(value(after, name, ...labels), `${what}: ${name}{${labels.join(',')}}`).toBeGreaterThan(
        value(before, name, ...labels),
      );
    }
    expect(after).toMatch(/^messaging_process_duration_seconds_bucket\{[^}]*le="0\.005"\} \d+$/m);
    expect(after).toMatch(/^# TYPE worker_exchange_call_duration_seconds histogram$/m);
    expect(after).toMatch(/^# TYPE messaging_client_consumed_messages_total counter$/m);
  });

  it('passivates an order that waits for its deposit, still counts it open, and wakes it for its webhook', async () => {
    const orderId = uniqueName('resting');
    const passivatedBefore = value(await scrape(), 'worker_orders_passivated_total');
    await cluster.send(orderCreateCommand('cefi', '1.97', orderId));
    const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created');
    // The test environment passivates after 250 ms (PASSIVATE_IDLE_MS); the order now waits for its deposit, and
    // its next poll is 30 s away (no listing here): a second or so later it is passivated and stays so; the gauges
    // are read until they show it at rest, for up to 10 s.
    const resting = (t: string): boolean =>
      value(t, 'worker_passivated_orders') > 0 &&
      value(t, 'worker_orders_passivated_total') > passivatedBefore;
    let text = await scrape();
    for (let i = 0; i < 50 && value(text, 'worker_orders_passivated_total') === passivatedBefore; i++) {
      await sleep(100);
      text = await scrape();
    }
    await sleep(1_000);
    text = await scrape();
    for (let i = 0; i < 100 && !resting(text); i++) {
      await sleep(100);
      text = await scrape();
    }
    expect(value(text, 'worker_passivated_orders')).toBeGreaterThan(0);
    expect(value(text, 'worker_orders_passivated_total')).toBeGreaterThan(passivatedBefore);
    expect(
      value(text, 'worker_open_orders', 'state="open.deposit.awaiting+exchange.monitoring"'),
    ).toBeGreaterThan(0);
    const woken = value(text, 'worker_orders_reactivated_total', 'reason="hint"');
    cluster.sandbox.advanceOrder(String(created['unique_reference']), 'deposit_seen');
    await cluster.collector.waitForOrderEvent(orderId, 'order.status_changed', 60_000);
    expect(value(await scrape(), 'worker_orders_reactivated_total', 'reason="hint"')).toBeGreaterThan(woken);
  });

  it('reports open orders by state, partitions, consumer lag per partition, event-loop delay and heap', async () => {
    let text = await scrape();
    // Lag is measured every 10 s; the runtime metrics need a few event-loop samples.
    for (let i = 0; i < 60 && !/^worker_consumer_lag\{partition="\d+"\} \d+$/m.test(text); i++) {
      await sleep(500);
      text = await scrape();
    }
    expect(text).toMatch(/^worker_open_orders\{state="[^"]+"\} [1-9]\d*$/m);
    expect(value(text, 'worker_partitions_owned')).toBe(2);
    expect(text).toMatch(/^worker_consumer_lag\{partition="0"\} \d+$/m);
    expect(text).toMatch(/^worker_consumer_lag\{partition="1"\} \d+$/m);
    expect(text).toMatch(/^nodejs_eventloop_delay_p99_seconds [\d.e-]+$/m);
    expect(text).toMatch(/^v8js_memory_heap_used_bytes\{v8js_heap_space_name="old_space"\} \d+$/m);
    expect(value(text, 'process_memory_usage_bytes')).toBeGreaterThan(0);
    expect(text).toMatch(/^target_info\{[^}]*service_version="\d+\.\d+\.\d+"/m);
  });
});
