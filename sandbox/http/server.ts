// Assembles one sandbox: builds the context, mounts three surfaces on one node:http server (v2 under its base
// path, v1 under its own, the admin API under /_sandbox), and runs one pipeline for every request:
// route match -> transport faults (latency, timeout, 5xx, 429) -> caller (v2: ApiKey authentication and the global
// throttle) -> [late_landing: drop or hold the connection, run the handler later] -> handler -> faults that act after
// the request took effect (lost_response, create_then_error) -> the surface's error dialect. What differs between surfaces is a parameter of `Surface`, not a copy of the pipeline.
// Any unexpected error becomes a 500 with `detail`; nothing is left hanging except on purpose (the timeout fault),
// and close() ends those too.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminRoutes } from './admin-routes.ts';
import { authenticate, authenticateV1 } from './auth.ts';
import type { Caller } from './caller.ts';
import { createSandboxClock, type TimeSource } from '../domain/clock.ts';
import { parseSandboxConfig, type SandboxConfig, type SandboxConfigInput } from '../config.ts';
import type { SandboxContext } from '../domain/context.ts';
import { createControl, type SandboxControl } from '../domain/control.ts';
import { FaultBoard, type EndpointFault } from '../domain/faults.ts';
import {
  bodySubject,
  HttpError,
  headerValue,
  matchRoute,
  parseBody,
  readRawBody,
  sendReply,
  v2Error,
  type Reply,
  type Route,
  type SandboxRequest,
} from './http-kit.ts';
import { LateLandings } from '../domain/late-landings.ts';
import { messages } from '../wire/messages.ts';
import { OrderStore } from '../domain/order-store.ts';
import { preScreeningV2, toPreScreeningEnvelope } from './pre-screening.ts';
import { QuoteBook } from '../domain/quote-book.ts';
import { createSeededRandom } from '../domain/seeded-random.ts';
import { Throttles } from './throttles.ts';
import { toV1ErrorReply, v1Routes } from './v1-routes.ts';
import { v2MarketRoutes } from './v2-market-routes.ts';
import { v2OrderRoutes } from './v2-order-routes.ts';
import { WebhookDispatcher } from '../domain/webhook-dispatcher.ts';
import { buildWorld } from '../domain/world.ts';

export interface SandboxOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** Parsed or raw (defaults applied) config; the built-in demo world when omitted. */
  config?: SandboxConfig | SandboxConfigInput;
  v2BasePath?: string;
  v1BasePath?: string;
  adminBasePath?: string;
  /** Base time source of the sandbox clock (default Date.now); advanceClock adds an offset on top. */
  clock?: TimeSource;
  /** Seed of the PRNG behind fault draws and /pair/random/ (default 1). */
  seed?: number;
}

export interface StartedServer {
  server: Server;
  ctx: SandboxContext;
  control: SandboxControl;
  port: number;
  host: string;
  paths: { v2: string; v1: string; admin: string };
  close(): Promise<void>;
}

function normalizeBase(path: string): string {
  const trimmed = `/${path}`.replace(/\/+/g, '/').replace(/\/$/, '');
  return trimmed === '' ? '' : trimmed;
}

/** Path below `base` (always "/.../"), or undefined when the request is not under it. */
function below(base: string, pathname: string): string | undefined {
  if (base !== '' && pathname !== base && !pathname.startsWith(`${base}/`)) return undefined;
  const rest = pathname.slice(base.length) || '/';
  return rest.endsWith('/') ? rest : `${rest}/`;
}

/**
 * One surface of the server (v2, v1, admin): its routes and what differs in the one request pipeline they share.
 * The pipeline: route match -> transport faults -> caller -> handler -> after-effect faults -> error dialect.
 */
interface Surface {
  base: string;
  routes: readonly Route[];
  /** The answer when no route has this path, or none this method. */
  unmatched(kind: 'not_found' | 'method_not_allowed', method: string): Reply;
  /** The name faults aim at for this route; undefined when no fault applies to this surface. */
  faultEndpoint?: (route: Route) => string;
  /** Whether lost_response and create_then_error apply (they act after the request took effect). */
  afterEffectFaults: boolean;
  /** Who is calling; throws an HttpError to refuse (401, the global 429). */
  admit(request: SandboxRequest, route: Route): Caller | undefined;
  /** An HttpError in this surface's dialect. */
  errorReply(error: HttpError, route: Route): Reply;
}

/** The exchange's own 404 and 405 bodies (v2 and v1 share them). */
function exchangeUnmatched(kind: 'not_found' | 'method_not_allowed', method: string): Reply {
  return kind === 'not_found'
    ? { status: 404, body: { detail: messages.notFound } }
    : { status: 405, body: { detail: messages.methodNotAllowed(method) } };
}

export async function startSandboxServer(
  options: SandboxOptions,
  demo: SandboxConfigInput,
): Promise<StartedServer> {
  const config = parseSandboxConfig(options.config ?? demo);
  const world = buildWorld(config);
  const clock = createSandboxClock(options.clock);
  const random = createSeededRandom(options.seed ?? 1);
  const faults = new FaultBoard(random);
  const orders = new OrderStore({ ...config.schedule });
  const webhooks = new WebhookDispatcher(world, clock, faults, config.webhooks);
  orders.onStatusChange((order, previous) => webhooks.orderStatusChanged(order, previous));

  const sleepers = new Set<() => void>();
  let closing = false;
  const sleep = (ms: number): Promise<void> =>
    ms <= 0 || closing
      ? Promise.resolve()
      : new Promise((resolve) => {
          const done = (): void => {
            clearTimeout(timer);
            sleepers.delete(done);
            resolve();
          };
          const timer = setTimeout(done, ms);
          sleepers.add(done);
        });

  const ctx: SandboxContext = {
    config,
    world,
    clock,
    random,
    quotes: new QuoteBook(),
    orders,
    throttles: new Throttles(config.limits),
    faults,
    landings: new LateLandings(),
    webhooks,
    sleep,
  };
  const paths = {
    v2: normalizeBase(options.v2BasePath ?? '/api/v2'),
    v1: normalizeBase(options.v1BasePath ?? '/api/v1'),
    admin: normalizeBase(options.adminBasePath ?? '/_sandbox'),
  };
  const host = options.host ?? '127.0.0.1';
  let port = 0;
  const control = createControl(ctx, () => ({
    v2: `http://${host}:${port}${paths.v2}`,
    v1: `http://${host}:${port}${paths.v1}`,
    admin: `http://${host}:${port}${paths.admin}`,
    now: new Date(clock.now()).toISOString(),
    schedule: orders.defaultSchedule(),
  }));

  const preScreening: Route = {
    method: 'POST',
    template: '/pre_screening/',
    handler: (request) => preScreeningV2(ctx, request),
  };
  const v2: Surface = {
    base: paths.v2,
    routes: [...v2MarketRoutes(ctx), ...v2OrderRoutes(ctx), preScreening],
    unmatched: exchangeUnmatched,
    faultEndpoint: (route) => `${route.method} ${route.template}`,
    afterEffectFaults: true,
    admit(request, route) {
      const caller = authenticate(request, world, { referralTokenAlone: route.template === '/rate/' });
      const identity = caller.apiKey ? `key:${caller.apiKey.key}` : `ip:${caller.ip}`;
      const verdict = ctx.throttles.global(identity, clock.now());
      if (!verdict.allowed) {
        throw v2Error(429, messages.throttled(verdict.retryAfterSeconds), undefined, {
          'Retry-After': String(verdict.retryAfterSeconds),
        });
      }
      return caller;
    },
    errorReply: (error, route) => (route === preScreening ? toPreScreeningEnvelope(error) : error.reply),
  };
  const v1: Surface = {
    base: paths.v1,
    routes: v1Routes(ctx, { tokens: new Map() }),
    unmatched: exchangeUnmatched,
    faultEndpoint: (route) => `v1 ${route.method} ${route.template}`,
    afterEffectFaults: false,
    admit: (request) => authenticateV1(request, world),
    errorReply: toV1ErrorReply,
  };
  // The control surface is no part of the exchange: no faults, no authentication, and 404 for any mismatch.
  const admin: Surface = {
    base: paths.admin,
    routes: adminRoutes(control),
    unmatched: (kind) => ({ status: kind === 'not_found' ? 404 : 405, body: { detail: messages.notFound } }),
    afterEffectFaults: false,
    admit: () => undefined,
    errorReply: (error) => error.reply,
  };

  /** Latency, timeout, 5xx, 429 and IP-risk faults armed for this endpoint; `hang` means hold the request that long. */
  async function transportFaults(
    endpoint: string,
    subject: Readonly<Record<string, unknown>> | undefined,
  ): Promise<Reply | { hangMs: number } | undefined> {
    const fired = faults.endpointFaults(
      endpoint,
      ['latency', 'timeout', 'http_error', 'throttle', 'ip_risk'],
      subject,
    );
    for (const fault of fired) if (fault.kind === 'latency') await sleep(fault.latencyMs ?? 1_000);
    for (const fault of fired) {
      if (fault.kind === 'timeout') return { hangMs: fault.latencyMs ?? 120_000 };
      if (fault.kind === 'http_error') {
        const status = fault.status ?? 503;
        return { status, body: { detail: status >= 500 ? 'A server error occurred.' : 'Injected error.' } };
      }
      if (fault.kind === 'ip_risk')
        return { status: 400, body: { non_field_errors: ["User's IP has risk."] } };
      if (fault.kind === 'throttle') {
        const seconds = fault.retryAfterSeconds === undefined ? 30 : fault.retryAfterSeconds;
        return seconds === null
          ? { status: 429, body: { detail: messages.throttled(30) } }
          : {
              status: 429,
              body: { detail: messages.throttled(seconds) },
              headers: { 'Retry-After': String(seconds) },
            };
      }
    }
    return undefined;
  }

  /** create_then_error's answer: DRF's server-error detail for 5xx; a 408 with a timeout detail. */
  function lateErrorReply(status: number): Reply {
    return {
      status,
      body: { detail: status === 408 ? 'Request timed out.' : 'A server error occurred.' },
    };
  }

  async function hang(response: ServerResponse, ms: number): Promise<void> {
    await sleep(ms);
    response.destroy();
  }

  /**
   * late_landing: the client hears nothing (the connection drops after `holdMs`, at once when 0, or when the
   * request lands if it is held that long), and the request takes effect `landAfterMs` after it arrived: the
   * handler runs then, on the sandbox's state and clock of that moment, and its answer goes to nobody. A sandbox
   * that closes first discards what has not landed.
   */
  function landLate(
    route: Route,
    endpoint: string,
    request: SandboxRequest,
    response: ServerResponse,
    fault: EndpointFault,
  ): void {
    const landAfterMs = fault.landAfterMs ?? 10_000;
    const holdMs = fault.holdMs ?? landAfterMs;
    const landing = ctx.landings.start(endpoint, Date.now(), landAfterMs);
    const drop = (): void => {
      landing.droppedAt ??= Date.now();
      response.destroy();
    };
    response.once('close', () => (landing.droppedAt ??= Date.now()));
    if (holdMs < landAfterMs) void sleep(holdMs).then(drop);
    void sleep(landAfterMs)
      .then(async () => {
        if (closing) {
          landing.state = 'discarded';
          return;
        }
        try {
          const reply = await route.handler(request);
          const body = reply.body as { unique_reference?: unknown } | undefined;
          landing.state = 'landed';
          landing.status = reply.status;
          landing.uniqueReference = typeof body?.unique_reference === 'string' ? body.unique_reference : null;
        } catch (error) {
          landing.state = 'refused';
          landing.status = error instanceof HttpError ? error.reply.status : 500;
          if (!(error instanceof HttpError))
            process.emitWarning(`sandbox: a late landing failed: ${(error as Error).stack ?? String(error)}`);
        }
      })
      .finally(drop);
  }

  async function run(surface: Surface, request: SandboxRequest, response: ServerResponse): Promise<void> {
    const match = matchRoute(surface.routes, request.method, request.path);
    if (match.kind !== 'found') return sendReply(response, surface.unmatched(match.kind, request.method));
    request.params = match.params;
    const endpoint = surface.faultEndpoint?.(match.route);
    const subject = endpoint === undefined ? undefined : bodySubject(request);
    let reply: Reply;
    try {
      const fault = endpoint === undefined ? undefined : await transportFaults(endpoint, subject);
      if (fault && 'hangMs' in fault) return hang(response, fault.hangMs);
      if (fault) {
        reply = fault;
      } else {
        request.caller = surface.admit(request, match.route);
        // Admitted (authenticated, counted by the throttle) on arrival; it takes effect later.
        const late =
          endpoint !== undefined && surface.afterEffectFaults
            ? faults.take(endpoint, 'late_landing', subject)
            : undefined;
        if (late && endpoint !== undefined) return landLate(match.route, endpoint, request, response, late);
        reply = await match.route.handler(request);
        if (endpoint !== undefined && surface.afterEffectFaults) {
          const after = faults.endpointFaults(endpoint, ['lost_response', 'create_then_error'], subject);
          // The request took effect, but the client never hears of it: its outcome is unknown to the caller.
          if (after.some((f) => f.kind === 'lost_response')) {
            response.destroy();
            return;
          }
          // The request took effect, but the client hears an error (a gateway or server failing after the work).
          const late = after.find((f) => f.kind === 'create_then_error');
          if (late) reply = lateErrorReply(late.status ?? 503);
        }
      }
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      reply = surface.errorReply(error, match.route);
    }
    sendReply(response, reply);
  }

  /** The URL as the client addressed it; a malformed Host header falls back to the listen address. */
  function requestUrl(target: string, hostHeader: string | undefined): URL {
    try {
      return new URL(target, `http://${hostHeader ?? `${host}:${port}`}`);
    } catch {
      return new URL(target.startsWith('/') ? target : '/', `http://${host}:${port}`);
    }
  }

  // Longest base path first, so nested prefixes (e.g. /api and /api/v2) resolve to the most specific surface.
  const surfaces = [admin, v2, v1].sort((a, b) => b.base.length - a.base.length);

  async function onRequest(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readRawBody(incoming);
    const url = requestUrl(incoming.url ?? '/', incoming.headers.host);
    let parsed: { value: unknown } | undefined;
    const request: SandboxRequest = {
      method: (incoming.method ?? 'GET').toUpperCase(),
      path: '/',
      params: {},
      query: url.searchParams,
      headers: incoming.headers,
      ip: incoming.socket.remoteAddress ?? 'unknown',
      rawBody: raw.text,
      url,
      caller: undefined,
      body() {
        parsed ??= { value: parseBody(raw.text, headerValue(incoming.headers, 'content-type')) };
        return parsed.value;
      },
    };
    if (raw.tooLarge)
      return sendReply(response, { status: 400, body: { detail: 'Request body is too large.' } });
    for (const surface of surfaces) {
      const path = below(surface.base, url.pathname);
      if (path !== undefined) {
        request.path = path;
        return run(surface, request, response);
      }
    }
    sendReply(response, { status: 404, body: { detail: messages.notFound } });
  }

  const server = createServer((incoming, response) => {
    onRequest(incoming, response).catch((error: unknown) => {
      process.emitWarning(`sandbox: unexpected error: ${(error as Error).stack ?? String(error)}`);
      sendReply(response, { status: 500, body: { detail: 'A server error occurred.' } });
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  const ticker = setInterval(() => {
    orders.sweep(clock.now());
    ctx.quotes.prune(clock.now());
  }, 100);
  ticker.unref();

  return {
    server,
    ctx,
    control,
    port,
    host,
    paths,
    async close() {
      if (closing) return;
      closing = true;
      clearInterval(ticker);
      for (const wake of [...sleepers]) wake();
      webhooks.close();
      await webhooks.idle();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
