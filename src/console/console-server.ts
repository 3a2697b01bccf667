// The console's HTTP server: the parked queue, stalled orders, search, an order's page (facts, parked evidence, the
// exchange orders it could be, its timeline) and settling with a confirmation step. Signed in with the same bearer
// token as the read API (a form sets an HttpOnly, SameSite=Strict session cookie; a bearer header works too); every
// form carries the session's token. A settle is refused when the order moved (its seq) since the page was shown.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { FleetView } from '../fleet/fleet-view.ts';
import type { OrderSummary } from '../fleet/order-summary.ts';
import type { BearerCheck } from '../http/bearer-auth.ts';
import type { ReplicaView } from '../http/orders-api.ts';
import type { CandidateReport } from '../inspect/exchange-candidates.ts';
import {
  prepare,
  refusalOf,
  type PreparedCommand,
  type Resolution,
  type Signer,
} from '../inspect/operator-commands.ts';
import type { OrderReport } from '../inspect/order-report.ts';
import { confirmPage, escapeHtml, loginPage, orderPage, orderTable, page } from './pages.ts';

export interface ConsoleDeps {
  auth: BearerCheck;
  view: FleetView;
  timelineOf(orderId: string): {
    timeline: OrderReport['timeline'];
    parkedEvent: { tried: string[]; message: string } | null;
  };
  replicaOf(orderId: string): Promise<ReplicaView | null | 'unknown'>;
  candidatesOf(order: OrderSummary): Promise<CandidateReport | { unavailable: string }>;
  send(command: PreparedCommand): Promise<void>;
  signer: Signer | undefined;
  traceUiUrl: string | undefined;
  stalledAfterMs: number;
  now: () => number;
}

const sessionCookie = 'console_session';
const sessionTtlMs = 12 * 3_600_000;

function reply(
  res: http.ServerResponse,
  status: number,
  html: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    ...headers,
  });
  res.end(html);
}

function redirect(res: http.ServerResponse, location: string, headers: Record<string, string> = {}): void {
  res.writeHead(303, { location, 'cache-control': 'no-store', ...headers });
  res.end();
}

function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > 16_384) {
        reject(new Error('form too large'));
        req.destroy();
      }
    });
    req.on('end', () => resolve(new URLSearchParams(body)));
    req.on('error', reject);
  });
}

function cookieOf(req: http.IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

export function createConsoleServer(deps: ConsoleDeps): http.Server {
  const sessions = new Map<string, { csrf: string; expires: number }>();

  const sessionOf = (req: http.IncomingMessage): { csrf: string } | undefined => {
    const id = cookieOf(req, sessionCookie);
    const session = id === undefined ? undefined : sessions.get(id);
    if (session && session.expires > deps.now()) return session;
    if (id !== undefined) sessions.delete(id);
    // A bearer token works as well (scripts); its forms then carry a token of their own.
    if (deps.auth.allows(req.headers)) return { csrf: 'bearer' };
    return undefined;
  };

  const orderView = async (
    res: http.ServerResponse,
    order: OrderSummary,
    csrf: string,
    notice?: { ok: boolean; text: string },
  ): Promise<void> => {
    const [replica, candidates] = await Promise.all([
      deps.replicaOf(order.order_id).catch(() => 'unknown' as const),
      order.phase === 'parked'
        ? deps.candidatesOf(order).catch((error: unknown) => ({
            unavailable: `the exchange could not be asked: ${(error as Error).message}`,
          }))
        : Promise.resolve(null),
    ]);
    const { timeline, parkedEvent } = deps.timelineOf(order.order_id);
    reply(
      res,
      200,
      orderPage({
        order,
        timeline,
        parkedEvent,
        replica,
        traceUiUrl: deps.traceUiUrl,
        candidates,
        csrf,
        canSign: deps.signer !== undefined,
        ...(notice ? { notice } : {}),
        now: deps.now(),
      }),
    );
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://console');
    const path = url.pathname;
    if (!deps.auth.enabled) return reply(res, 503, page('Off', '<h1>The console needs OPS_API_TOKEN</h1>'));
    if (path === '/login') {
      if (req.method === 'GET') return reply(res, 200, loginPage());
      if (req.method !== 'POST') return reply(res, 405, loginPage());
      const form = await readForm(req);
      const token = form.get('token') ?? '';
      if (!deps.auth.allows({ authorization: `Bearer ${token}` }))
        return reply(res, 401, loginPage('That is not a valid token.'));
      const id = randomBytes(24).toString('base64url');
      sessions.set(id, { csrf: randomBytes(24).toString('base64url'), expires: deps.now() + sessionTtlMs });
      return redirect(res, '/', {
        'set-cookie': `${sessionCookie}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${sessionTtlMs / 1000}`,
      });
    }
    const session = sessionOf(req);
    if (!session) return redirect(res, '/login');
    const now = deps.now();

    if (req.method === 'GET' && path === '/') {
      const parked = deps.view.list({ state: 'parked', limit: 1_000 }, now).orders;
      const stalled = deps.view.list(
        { state: 'active', older_than: deps.stalledAfterMs, limit: 1_000 },
        now,
      ).orders;
      return reply(
        res,
        200,
        page(
          'Parked queue',
          `<h1>Parked orders (${parked.length})</h1><p>Oldest first. Each waits for an operator: adopt the exchange order it created, or abandon it. ${stalled.length} open order(s) have not moved for ${Math.round(deps.stalledAfterMs / 60_000)} min (<a href="/stalled">stalled</a>).</p>
${orderTable(parked, now, 'No order is parked.')}`,
          { refreshSeconds: 15 },
        ),
      );
    }
    if (req.method === 'GET' && path === '/stalled') {
      const stalled = deps.view.list(
        { state: 'active', older_than: deps.stalledAfterMs, limit: 1_000 },
        now,
      ).orders;
      return reply(
        res,
        200,
        page(
          'Stalled',
          `<h1>Stalled orders (${stalled.length})</h1>${orderTable(stalled, now, 'No order is stalled.')}`,
        ),
      );
    }
    if (req.method === 'GET' && path === '/search') {
      const q = (url.searchParams.get('q') ?? '').slice(0, 200);
      const found = deps.view.search(q);
      if (found.length === 1 && found[0])
        return redirect(res, `/orders/${encodeURIComponent(found[0].order_id)}`);
      return reply(
        res,
        200,
        page(
          'Search',
          `<h1>Search: ${escapeHtml(q)}</h1>${orderTable(found, now, 'No order has that id, reference or address.')}`,
        ),
      );
    }
    const match = /^\/orders\/([^/]+)(\/settle)?$/.exec(path);
    const orderId = match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
    const order = orderId === undefined ? undefined : deps.view.find(orderId);
    if (!match || !order) return reply(res, 404, page('Not found', '<h1>No such order</h1>'));
    if (req.method === 'GET' && !match[2]) {
      const sent = url.searchParams.get('sent');
      return orderView(res, order, session.csrf, sent ? { ok: true, text: sent } : undefined);
    }
    if (req.method !== 'POST' || !match[2])
      return reply(res, 405, page('Not allowed', '<h1>Not allowed</h1>'));
    const form = await readForm(req);
    if (form.get('csrf') !== session.csrf)
      return reply(res, 403, page('Refused', '<h1>Stale form: reload the page</h1>'));
    const reference = form.get('unique_reference')?.trim() ?? '';
    const settle: Resolution | undefined =
      form.get('resolution') === 'abandon'
        ? { resolution: 'abandon' }
        : form.get('resolution') === 'adopt' && /^[A-Za-z0-9_-]{1,64}$/.test(reference)
          ? { resolution: 'adopt', uniqueReference: reference }
          : undefined;
    if (!settle)
      return orderView(res, order, session.csrf, {
        ok: false,
        text: 'Name the exchange order (its unique_reference) to adopt.',
      });
    const seq = Number(form.get('seq'));
    const refusal = refusalOf(
      { orderId: order.order_id, seq: Number.isSafeInteger(seq) ? seq : -1, settle },
      order,
    );
    if (refusal) return orderView(res, order, session.csrf, { ok: false, text: `Not sent: ${refusal}` });
    if (!deps.signer)
      return orderView(res, order, session.csrf, { ok: false, text: 'This console has no operator key.' });
    const prepared = prepare(order, settle, deps.signer, now);
    if (form.get('confirm') !== 'yes')
      return reply(res, 200, confirmPage({ order, command: prepared.command, csrf: session.csrf }));
    try {
      await deps.send(prepared);
    } catch (error) {
      return orderView(res, order, session.csrf, {
        ok: false,
        text: `Not sent: ${(error as Error).message}`,
      });
    }
    return redirect(
      res,
      `/orders/${encodeURIComponent(order.order_id)}?sent=${encodeURIComponent(`Sent ${prepared.command['command_id']} (${settle.resolution}), signed by ${deps.signer.keyId}; the timeline shows what follows.`)}`,
    );
  };

  return http.createServer({ headersTimeout: 5_000, requestTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        reply(res, 500, page('Error', `<h1>Error</h1><p>${escapeHtml((error as Error).message)}</p>`));
      else res.end();
    });
  });
}
