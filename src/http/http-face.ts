// The worker's HTTP face as one part: the webhook server (HTTP_PORT) and the operations server (METRICS_PORT),
// both listening from the start. Every delivery is a server span that continues the sender's trace and is counted
// by result (worker_webhooks_total{result}); every request to the webhook server is timed
// (http_server_request_duration_seconds) and a delivery turned away unread is counted (worker_webhooks_shed_total). Until the worker runs (`acceptWebhooks`), a delivery is verified and acknowledged unrouted rather
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
  type WebhookServerDeps,
  type WebhookServerLimits,
} from './http-server.ts';
import type { WebhookReceiverDeps } from './webhook-receiver.ts';

const tracer = trace.getTracer('exchange-order-worker');

export interface HttpFaceDeps {
  logger: Logger;
  /** The webhook receiver (routes a delivery to its order's partition). */
  receiver: { handle: (raw: Buffer, headers: IncomingHttpHeaders) => Promise<WebhookOutcome> };
  /** The webhook server's bounds (connections, unverified bytes, body size, timeouts); defaults otherwise. */
  limits?: WebhookServerLimits;
  /** The receiver's signature check, also applied while the worker is still starting. */
  verify: WebhookReceiverDeps['verify'];
  readiness: OpsServerDeps['readiness'];
  liveness: NonNullable<OpsServerDeps['liveness']>;
  startup: NonNullable<OpsServerDeps['startup']>;
  acceptsWebhooks: NonNullable<OpsServerDeps['acceptsWebhooks']>;
  /** The read API's routes (orders-api.ts), when built. */
  routes?: OpsServerDeps['routes'];
  metrics: {
    /** The OpenTelemetry metrics in Prometheus text: the whole /metrics body. */
    render(): Promise<string>;
    /** One per delivery, by its result; one per delivery turned away unread; one per request answered. */
    webhooks: {
      delivered(result: WebhookOutcome['result']): void;
      shed: NonNullable<WebhookServerDeps['onShed']>;
      requestDone: NonNullable<WebhookServerDeps['onRequestDone']>;
    };
  };
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
      ...deps.limits,
      logger: deps.logger,
      handleWebhook: (raw, headers) => this.answerWebhook(raw, headers),
      onShed: deps.metrics.webhooks.shed,
      onRequestDone: deps.metrics.webhooks.requestDone,
    });
    this.opsServer = createOpsServer({
      logger: deps.logger,
      readiness: deps.readiness,
      liveness: deps.liveness,
      startup: deps.startup,
      acceptsWebhooks: deps.acceptsWebhooks,
      ...(deps.routes ? { routes: deps.routes } : {}),
      metrics: () => deps.metrics.render(),
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
          span.setAttribute('webhook.result', outcome.result);
          this.deps.metrics.webhooks.delivered(outcome.result);
          return outcome;
        } catch (error) {
          span.setAttribute(ATTR_ERROR_TYPE, (error as Error).name);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          this.deps.metrics.webhooks.delivered('failed');
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
        result: 'refused',
        body: { detail: `invalid webhook signature: ${verdict.reason}` },
      });
    return Promise.resolve({
      status: 202,
      result: 'starting',
      body: { accepted: false, detail: 'worker starting; the order is polled anyway' },
    });
  }
}
