// The worker's HTTP face: its two servers. The webhook server (HTTP_PORT, the only one a public Service exposes) serves
// POST /webhooks/exchange and nothing else: bodies are read as raw bytes (verified before any JSON parsing), at
// most 1 MiB, with bounded header and body time and a cap on concurrent connections, so slow or numerous
// clients cannot hold it. The operations server (METRICS_PORT, cluster-internal) serves /healthz, /readyz and
// /metrics; the /metrics body comes from the one `metrics` function it is given.
import http from 'node:http';
import type { Logger } from '../telemetry/logger.ts';

export type WebhookOutcome =
  { status: 200 | 202; body: Record<string, unknown> } | { status: 401; body: Record<string, unknown> };

export interface WebhookServerLimits {
  /** Largest accepted body (default 1 MiB). */
  maxBodyBytes?: number;
  /**
   * Concurrent connections; more are refused at accept (default DEFAULT_WEBHOOK_MAX_CONNECTIONS). A refused delivery
   * is an error to the exchange, which disables an endpoint whose error rate reaches 50 % (re-enabled only by hand),
   * so the cap must sit far above any burst the exchange may send.
   */
  maxConnections?: number;
  /** Time to receive the request headers (default 3000 ms). */
  headersTimeoutMs?: number;
  /** Time to receive the whole request, body included (default 4000 ms; the exchange gives up after 5 s). */
  requestTimeoutMs?: number;
}

export interface WebhookServerDeps extends WebhookServerLimits {
  logger: Logger;
  handleWebhook: (rawBody: Buffer, headers: http.IncomingHttpHeaders) => Promise<WebhookOutcome>;
}

export interface OpsServerDeps {
  logger: Logger;
  readiness: () => Promise<{ ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> }>;
  /** The whole /metrics body (Prometheus text exposition format). */
  metrics: () => string | Promise<string>;
  /** /healthz answers 503 when this says not alive (the orchestrator restarts the process). */
  liveness?: () => { alive: boolean; detail?: string };
  /** Further routes (the read API): answers the request and returns true, or leaves it to the routes above. */
  routes?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
}

export const webhookPath = '/webhooks/exchange';

function send(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  contentType = 'application/json',
): void {
  if (res.headersSent || res.destroyed) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function pathOf(req: http.IncomingMessage): string {
  const url = new URL(req.url ?? '/', 'http://worker');
  return url.pathname.replace(/\/+$/, '') || '/';
}

/**
 * The default cap of concurrent webhook connections. How many deliveries the exchange sends at once is not shown
 * (one attempt per status change, 5 s timeout); assumed: one connection per delivery in flight, every status change
 * of a burst at once. 256 refused most of a burst of 600 orders moving to COMPLETED together in the throughput
 * benchmark (580 of 3,000 deliveries failed at accept), enough for the exchange to disable the endpoint. A
 * connection waiting for its answer costs a few KiB; the bound stays for what it is for: a flood, not a burst.
 */
export const DEFAULT_WEBHOOK_MAX_CONNECTIONS = 4_096;

export function createWebhookServer(deps: WebhookServerDeps): http.Server {
  const maxBody = deps.maxBodyBytes ?? 1_048_576;
  const requestTimeout = deps.requestTimeoutMs ?? 4_000;
  const server = http.createServer(
    {
      headersTimeout: Math.min(deps.headersTimeoutMs ?? 3_000, requestTimeout),
      requestTimeout,
      // Node checks those two timeouts on this interval (30 s by default, far too coarse for them).
      connectionsCheckingInterval: 250,
      keepAliveTimeout: 5_000,
      maxHeaderSize: 16_384,
    },
    (req, res) => {
      if (pathOf(req) !== webhookPath) return send(res, 404, { detail: 'not found' });
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        return send(res, 405, { detail: 'method not allowed' });
      }
      const tooLarge = (): void => {
        if (res.headersSent) return;
        res.setHeader('connection', 'close');
        res.once('finish', () => req.destroy());
        send(res, 413, { detail: `body larger than ${maxBody} bytes` });
      };
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBody) return tooLarge();
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBody) return tooLarge();
        chunks.push(chunk);
      });
      req.on('end', () => {
        if (size > maxBody) return;
        deps
          .handleWebhook(Buffer.concat(chunks), req.headers)
          .then((outcome) => send(res, outcome.status, outcome.body))
          .catch((error: unknown) => {
            // The receiver answers every signed delivery itself; this is a last resort for a bug of ours.
            deps.logger.error({ err: { message: (error as Error).message } }, 'webhook handling failed');
            send(res, 202, { accepted: false, detail: 'not processed' });
          });
      });
      req.on('error', () => send(res, 400, { detail: 'could not read the body' }));
    },
  );
  server.maxConnections = deps.maxConnections ?? DEFAULT_WEBHOOK_MAX_CONNECTIONS;
  return server;
}

export function createOpsServer(deps: OpsServerDeps): http.Server {
  const server = http.createServer({ headersTimeout: 5_000, requestTimeout: 10_000 }, (req, res) => {
    const path = pathOf(req);
    if (deps.routes?.(req, res)) return;
    if (req.method !== 'GET') return send(res, 405, { detail: 'method not allowed' });
    if (path === '/healthz') {
      // Dead when the command consumer crashed for good: the orchestrator restarts the process.
      const live = deps.liveness?.() ?? { alive: true };
      return send(
        res,
        live.alive ? 200 : 503,
        live.alive
          ? { status: 'alive' }
          : { status: 'dead', ...(live.detail ? { detail: live.detail } : {}) },
      );
    }
    if (path === '/readyz') {
      deps
        .readiness()
        .then((result) =>
          send(res, result.ready ? 200 : 503, {
            status: result.ready ? 'ready' : 'not_ready',
            checks: result.checks,
          }),
        )
        .catch((error: unknown) => send(res, 503, { status: 'not_ready', error: (error as Error).message }));
      return;
    }
    if (path === '/metrics') {
      Promise.resolve()
        .then(() => deps.metrics())
        .then((text) => send(res, 200, text, 'text/plain; version=0.0.4; charset=utf-8'))
        .catch((error: unknown) => {
          deps.logger.error({ err: { message: (error as Error).message } }, 'metrics rendering failed');
          send(res, 500, 'metrics unavailable\n', 'text/plain');
        });
      return;
    }
    send(res, 404, { detail: 'not found' });
  });
  server.keepAliveTimeout = 5_000;
  return server;
}
