// The worker's HTTP face: POST /webhooks/exchange (signed exchange notifications), /healthz, /readyz, /metrics.
// Webhooks are verified on the raw bytes before any JSON parsing and answered within milliseconds: the work they
// trigger (an immediate GET of the order) is routed through Kafka to the replica that owns the order.
import http from 'node:http';
import type { Logger } from '../telemetry/logger.ts';

export type WebhookOutcome =
  | { status: 200 | 202; body: Record<string, unknown> }
  | { status: 400 | 401 | 413 | 503; body: Record<string, unknown> };

export interface HttpServerDeps {
  logger: Logger;
  handleWebhook: (rawBody: Buffer, headers: http.IncomingHttpHeaders) => Promise<WebhookOutcome>;
  readiness: () => Promise<{ ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> }>;
  /** The Prometheus text of `GET /metrics` (src/telemetry/metrics.ts WorkerMetrics.render). */
  metrics: () => Promise<string>;
  maxBodyBytes?: number;
}

function send(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  contentType = 'application/json',
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function createHttpServer(deps: HttpServerDeps): http.Server {
  const maxBody = deps.maxBodyBytes ?? 1_048_576;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://worker');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, { status: 'alive' });
    if (req.method === 'GET' && path === '/readyz') {
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
    if (req.method === 'GET' && path === '/metrics') {
      deps.metrics().then(
        (text) => send(res, 200, text, 'text/plain; version=0.0.4'),
        (error: unknown) =>
          send(res, 500, `# metrics collection failed: ${(error as Error).message}\n`, 'text/plain'),
      );
      return;
    }
    if (path === '/webhooks/exchange') {
      if (req.method !== 'POST') return send(res, 405, { detail: 'method not allowed' });
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = false;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBody) {
          tooLarge = true;
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => {
        if (tooLarge) return send(res, 413, { detail: `body larger than ${maxBody} bytes` });
        deps
          .handleWebhook(Buffer.concat(chunks), req.headers)
          .then((outcome) => send(res, outcome.status, outcome.body))
          .catch((error: unknown) => {
            deps.logger.error({ err: { message: (error as Error).message } }, 'webhook handling failed');
            send(res, 503, { detail: 'temporarily unable to accept the webhook' });
          });
      });
      req.on('error', () => send(res, 400, { detail: 'could not read the body' }));
      return;
    }
    send(res, 404, { detail: 'not found' });
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;
  return server;
}
