// The read API of the operations port (METRICS_PORT): current state of any order, from the read view of the orders
// this replica owns (src/fleet/fleet-view.ts) and, for the others, from their owners (src/fleet/fleet-peers.ts), so
// any replica answers for any order. The lease holder (the replica driving it) comes from Redis. Bearer-token authenticated (bearer-auth.ts); without a
// configured token every route answers 404, as if the API did not exist. Answers carry summaries only: never the
// state record itself, never a configuration value. OpenAPI: docs/openapi.json.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseListQuery, type ListQuery } from '../fleet/list-query.ts';
import { forwardedHeader, type FleetRead } from '../fleet/fleet-peers.ts';
import type { OrderPage } from '../fleet/fleet-view.ts';
import type { OrderSummary } from '../fleet/order-summary.ts';
import type { BearerCheck } from './bearer-auth.ts';

/** The replica holding the order's lease: its WORKER_ID, the lease's fence and time left. */
export interface ReplicaView {
  worker_id: string;
  fence: number;
  lease_remaining_ms: number;
}

/**
 * Which replica drives an order, read from its lease's holder (src/redis/order-lease.ts): null when nobody holds it.
 * A lease owner is `<WORKER_ID>:<pid>:<random>` (WORKER_ID has no colon).
 */
export function replicaOfLease(lease: {
  holder(orderId: string): Promise<{ owner: string; fence: number; remainingMs: number } | null>;
}): (orderId: string) => Promise<ReplicaView | null> {
  return async (orderId) => {
    const holder = await lease.holder(orderId);
    return holder
      ? {
          worker_id: holder.owner.split(':')[0] ?? holder.owner,
          fence: holder.fence,
          lease_remaining_ms: holder.remainingMs,
        }
      : null;
  };
}

export interface OrdersApiDeps {
  auth: BearerCheck;
  view: {
    find(id: string): OrderSummary | undefined;
    list(query: ListQuery, now: number): OrderPage;
    readonly size: number;
  };
  /** The lease holder of an order (null: nobody; 'unknown': Redis did not answer). */
  replicaOf(orderId: string): Promise<ReplicaView | null | 'unknown'>;
  /**
   * The other replicas, asked for what this one's view does not hold (absent: this view holds every order). A
   * request another replica passed on is answered from this view alone.
   */
  peers?: {
    find(id: string, authorization: string | undefined): Promise<FleetRead>;
    list(
      search: string,
      limit: number,
      local: OrderPage,
      authorization: string | undefined,
    ): Promise<FleetRead>;
  };
  /** This replica's WORKER_ID, named in every answer. */
  workerId: string;
  now: () => number;
}

const ordersPath = '/orders';

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/** The order id of `/orders/{id}` (percent-decoded), `''` for `/orders`, undefined for any other path. */
function routeOf(pathname: string): string | undefined {
  if (pathname === ordersPath || pathname === `${ordersPath}/`) return '';
  if (!pathname.startsWith(`${ordersPath}/`)) return undefined;
  const rest = pathname.slice(ordersPath.length + 1).replace(/\/$/, '');
  if (rest === '' || rest.includes('/')) return undefined;
  try {
    return decodeURIComponent(rest);
  } catch {
    return undefined;
  }
}

/**
 * Answers the request when it is one of the API's routes (true), else leaves it (false). Every route needs the
 * bearer token; only GET is allowed.
 */
export function createOrdersApi(deps: OrdersApiDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://worker');
    const id = routeOf(url.pathname);
    if (id === undefined) return false;
    if (!deps.auth.enabled) {
      send(res, 404, { detail: 'not found' });
      return true;
    }
    if (!deps.auth.allows(req.headers)) {
      send(res, 401, { detail: 'a valid bearer token is required' }, { 'www-authenticate': 'Bearer' });
      return true;
    }
    if (req.method !== 'GET') {
      send(res, 405, { detail: 'method not allowed' }, { allow: 'GET' });
      return true;
    }
    const peers = req.headers[forwardedHeader] === undefined ? deps.peers : undefined;
    const authorization = req.headers.authorization;
    const answered = (read: FleetRead): void =>
      read.kind === 'answer'
        ? send(res, read.status, { ...read.body, answered_by: deps.workerId })
        : send(res, 503, { detail: read.detail, answered_by: deps.workerId }, { 'retry-after': '2' });
    const failed = (error: unknown): void =>
      send(res, 503, {
        detail: `not answered: ${(error as Error).message}; retry`,
        answered_by: deps.workerId,
      });
    if (id === '') {
      const parsed = parseListQuery(url.searchParams);
      if (!parsed.ok) {
        send(res, 400, { detail: 'bad query', problems: parsed.problems });
        return true;
      }
      const page = deps.view.list(parsed.query, deps.now());
      if (!peers) send(res, 200, { ...page, answered_by: deps.workerId });
      else peers.list(url.search, parsed.query.limit, page, authorization).then(answered, failed);
      return true;
    }
    const order = deps.view.find(id);
    if (!order) {
      if (peers) peers.find(id, authorization).then(answered, failed);
      else
        send(res, 404, {
          detail: `no order with order_id or unique_reference "${id.slice(0, 128)}" in the state topic`,
          answered_by: deps.workerId,
        });
      return true;
    }
    deps.replicaOf(order.order_id).then(
      (replica) => send(res, 200, { order, replica, answered_by: deps.workerId }),
      () => send(res, 200, { order, replica: 'unknown', answered_by: deps.workerId }),
    );
    return true;
  };
}
