// The worker's HTTP face as one part: the webhook server (HTTP_PORT) and the operations server (METRICS_PORT),
// both listening from the start. Every delivery is a server span that continues the sender's trace and is counted
// by result. Until the worker runs (`acceptWebhooks`), a delivery is verified and acknowledged unrouted rather
// than refused at connect, which the exchange would count towards disabling the endpoint; polling covers it.
import type { IncomingHttpHeaders, Server } from 'node:http';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger } from '../telemetry/logger.ts';
import { extractContext } from '../telemetry/propagation.ts';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
} from '../telemetry/semconv.ts';
import {
  createOpsServer,
  createWebhookServer,
  webhookPath,
  type OpsServerDeps,
  type WebhookOutcome,
} from './http-server.ts';
import type { WebhookCounters, WebhookReceiverDeps } from './webhook-receiver.ts';

const tracer = trace.getTracer('exchange-order-worker');

export interface HttpFaceDeps {
  logger: Logger;
  /** The webhook receiver (routes a delivery to its order's partition) with its counters. */
  receiver: {
    handle: (raw: Buffer, headers: IncomingHttpHeaders) => Promise<WebhookOutcome>;
    counters: Readonly<WebhookCounters>;
    verifiedBySecret: readonly number[];
  };
  /** The receiver's signature check, also applied while the worker is still starting. */
  verify: WebhookReceiverDeps['verify'];
  readiness: OpsServerDeps['readiness'];
  liveness: NonNullable<OpsServerDeps['liveness']>;
  /** The read API's routes (orders-api.ts), when built. */
  routes?: OpsServerDeps['routes'];
  metrics: {
    /** The OpenTelemetry metrics in Prometheus text. */
    render(): Promise<string>;
    webhooks: { add(value: number, attributes: { result: string }): void };
  };
}

/** The result label of a webhook delivery, from the receiver's answer. */
function webhookResult(outcome: WebhookOutcome): string {
  if (outcome.status === 202) return 'unknown_order';
  if (outcome.status >= 400) return 'refused';
  if (outcome.body['duplicate'] === true) return 'duplicate';
  if (outcome.body['kind'] === 'kyc') return 'kyc';
  return 'routed';
}

/**
 * The webhook receiver's own counters in Prometheus text, beside the OpenTelemetry metrics: what could not be
 * read, hints that failed, and which signing secret verified each delivery (rotation: when the old secret's
 * series stops growing, it can be removed).
 */
function webhookCounterText(receiver: HttpFaceDeps['receiver']): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(receiver.counters)) {
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
  receiver.verifiedBySecret.forEach((value, index) =>
    lines.push(`${verified}{secret="${index}"} ${value ?? 0}`),
  );
  return `${lines.join('\n')}\n`;
}

function portOf(server: Server): number | undefined {
  const address = server.address();
  return typeof address === 'object' && address ? address.port : undefined;
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve());
  });
}

function close(server: Server): Promise<void> {
  return new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
}

export class HttpFace {
  private readonly deps: HttpFaceDeps;
  private readonly webhookServer: Server;
  private readonly opsServer: Server;
  private routing = false;

  constructor(deps: HttpFaceDeps) {
    this.deps = deps;
    this.webhookServer = createWebhookServer({
      logger: deps.logger,
      handleWebhook: (raw, headers) => this.answerWebhook(raw, headers),
    });
    this.opsServer = createOpsServer({
      logger: deps.logger,
      readiness: deps.readiness,
      liveness: deps.liveness,
      ...(deps.routes ? { routes: deps.routes } : {}),
      metrics: async () => `${await deps.metrics.render()}${webhookCounterText(deps.receiver)}`,
    });
  }

  get webhookPort(): number | undefined {
    return portOf(this.webhookServer);
  }

  get metricsPort(): number | undefined {
    return portOf(this.opsServer);
  }

  /** Both servers listen (operations first): liveness answers during a long restore. */
  async listen(ports: { http: number; metrics: number }): Promise<void> {
    await listen(this.opsServer, ports.metrics);
    await listen(this.webhookServer, ports.http);
  }

  /** From now on deliveries are routed (the producer the receiver routes with is connected). */
  acceptWebhooks(): void {
    this.routing = true;
  }

  /** Stops accepting webhooks, waiting for the requests in progress. */
  closeWebhooks(): Promise<void> {
    return close(this.webhookServer);
  }

  closeOperations(): Promise<void> {
    return close(this.opsServer);
  }

  private answerWebhook(raw: Buffer, headers: IncomingHttpHeaders): Promise<WebhookOutcome> {
    // The hint a delivery routes and the GET that hint triggers continue this trace.
    return tracer.startActiveSpan(
      `POST ${webhookPath}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: 'POST',
          [ATTR_HTTP_ROUTE]: webhookPath,
          [ATTR_URL_PATH]: webhookPath,
        },
      },
      extractContext(headers),
      async (span) => {
        try {
          const outcome = await this.answerWebhookUntraced(raw, headers);
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
          span.setAttribute('webhook.result', webhookResult(outcome));
          this.deps.metrics.webhooks.add(1, { result: webhookResult(outcome) });
          return outcome;
        } catch (error) {
          span.setAttribute(ATTR_ERROR_TYPE, (error as Error).name);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          this.deps.metrics.webhooks.add(1, { result: 'failed' });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  private answerWebhookUntraced(raw: Buffer, headers: IncomingHttpHeaders): Promise<WebhookOutcome> {
    if (this.routing) return this.deps.receiver.handle(raw, headers);
    const verdict = this.deps.verify?.(raw, headers);
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
}
