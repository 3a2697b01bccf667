// The worker's HTTP face: its two servers. The webhook server (HTTP_PORT, the only one a public Service exposes) serves
// POST /webhooks/exchange and nothing else: bodies are read as raw bytes (verified before any JSON parsing), at
// most 1 MiB each and WEBHOOK_MAX_UNVERIFIED_BYTES all together (every body is unauthenticated until its signature
// is checked, which needs the whole body), with bounded header and body time and a cap on concurrent connections,
// so slow or numerous clients cannot hold it nor fill its memory. The operations server (METRICS_PORT, cluster-internal) serves /healthz, /readyz and
// /metrics; the /metrics body comes from the one `metrics` function it is given.
import http from 'node:http';
import type { Logger } from '../telemetry/logger.ts';

/**
 * What became of a delivery, one per delivery (worker_webhooks_total{result}): routed (to its order, here or
 * through Kafka), duplicate, unknown_order, kyc, refused (signature), unreadable (signed, not a payload we read),
 * not_routed (the hint could not be written; the poll covers it), starting (acknowledged unrouted during start-up),
 * failed (a bug of ours; acknowledged).
 */
export type WebhookResult =
  | 'routed'
  | 'duplicate'
  | 'unknown_order'
  | 'kyc'
  | 'refused'
  | 'unreadable'
  | 'not_routed'
  | 'starting'
  | 'failed';

export type WebhookOutcome =
  | { status: 200 | 202; result: Exclude<WebhookResult, 'refused'>; body: Record<string, unknown> }
  | { status: 401; result: 'refused'; body: Record<string, unknown> };

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
  /**
   * Bytes of all the bodies read or being handled at once (default DEFAULT_WEBHOOK_MAX_UNVERIFIED_BYTES): a body
   * is unauthenticated until its signature is checked, once it is whole, so without this bound 1 MiB bodies on
   * every allowed connection could hold gigabytes. A delivery past it is answered 503 with `Retry-After: 1` at once.
   */
  maxUnverifiedBytes?: number;
}

/** Why a delivery was turned away before it was read: the shared body budget, or the connection cap at accept. */
export type WebhookShedReason = 'body_budget' | 'connections';

export interface WebhookServerDeps extends WebhookServerLimits {
  logger: Logger;
  handleWebhook: (rawBody: Buffer, headers: http.IncomingHttpHeaders) => Promise<WebhookOutcome>;
  /** A delivery turned away before it was read (metrics). */
  onShed?: (reason: WebhookShedReason) => void;
  /** Every answered request (http.server.request.duration); `route` is the webhook route, or undefined for a 404. */
  onRequestDone?: (request: {
    method: string;
    route: string | undefined;
    status: number;
    seconds: number;
  }) => void;
}

export interface OpsServerDeps {
  logger: Logger;
  readiness: () => Promise<{ ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> }>;
  /** The whole /metrics body (Prometheus text exposition format). */
  metrics: () => string | Promise<string>;
  /** /healthz answers 503 when this says not alive (the orchestrator restarts the process). */
  liveness?: () => { alive: boolean; detail?: string };
  /** /startupz answers 503 until this says started (every assigned partition restored once). */
  startup?: () => { started: boolean; detail?: string };
  /** /readyz/webhooks answers 503 once this says false (stopping): the webhook Service's readiness. */
  acceptsWebhooks?: () => boolean;
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

/**
 * The default budget of unverified body bytes: 4,096 deliveries (the connection cap) of 4 KiB, twice the size of the
 * order representation the exchange sends, in flight at once; a flood of large unsigned bodies gets 503s past it.
 */
export const DEFAULT_WEBHOOK_MAX_UNVERIFIED_BYTES = 16 * 1_048_576;

export function createWebhookServer(deps: WebhookServerDeps): http.Server {
  const maxBody = deps.maxBodyBytes ?? 1_048_576;
  const maxUnverified = deps.maxUnverifiedBytes ?? DEFAULT_WEBHOOK_MAX_UNVERIFIED_BYTES;
  let unverifiedBytes = 0;
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
      const startedAt = performance.now();
      const route = pathOf(req) === webhookPath ? webhookPath : undefined;
      res.once('finish', () =>
        deps.onRequestDone?.({
          method: req.method ?? 'GET',
          route,
          status: res.statusCode,
          seconds: (performance.now() - startedAt) / 1000,
        }),
      );
      if (route === undefined) return send(res, 404, { detail: 'not found' });
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        return send(res, 405, { detail: 'method not allowed' });
      }
      // This request's share of the unverified budget, returned when its answer is sent or its connection dies.
      let reserved = 0;
      const reserve = (bytes: number): boolean => {
        if (bytes <= reserved) return true;
        if (unverifiedBytes + bytes - reserved > maxUnverified) return false;
        unverifiedBytes += bytes - reserved;
        reserved = bytes;
        return true;
      };
      res.once('close', () => {
        unverifiedBytes -= reserved;
        reserved = 0;
      });
      let refused = false;
      const refuse = (status: 413 | 503, detail: string): void => {
        refused = true;
        chunks.length = 0;
        if (res.headersSent) return;
        res.setHeader('connection', 'close');
        if (status === 503) res.setHeader('retry-after', '1');
        res.once('finish', () => req.destroy());
        send(res, status, { detail });
      };
      const tooLarge = (): void => refuse(413, `body larger than ${maxBody} bytes`);
      const busy = (): void => {
        if (!refused) deps.onShed?.('body_budget');
        refuse(503, 'too many webhook bodies in flight; retry');
      };
      const chunks: Buffer[] = [];
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBody) return tooLarge();
      if (Number.isFinite(declared) && !reserve(declared)) return busy();
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        if (refused) return;
        size += chunk.length;
        if (size > maxBody) return tooLarge();
        if (!reserve(size)) return busy();
        chunks.push(chunk);
      });
      req.on('end', () => {
        if (refused) return;
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
  // Emitted for each connection closed at accept because maxConnections are open.
  server.on('drop', () => deps.onShed?.('connections'));
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
    if (path === '/startupz') {
      const startup = deps.startup?.() ?? { started: true };
      return send(res, startup.started ? 200 : 503, {
        status: startup.started ? 'started' : 'starting',
        ...(startup.detail ? { detail: startup.detail } : {}),
      });
    }
    if (path === '/readyz/webhooks') {
      const accepting = deps.acceptsWebhooks?.() ?? true;
      return send(res, accepting ? 200 : 503, { status: accepting ? 'accepting' : 'stopping' });
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
