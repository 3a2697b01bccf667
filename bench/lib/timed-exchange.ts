// The timing pass-through the benchmarks put in front of the exchange: it forwards every request to the sandbox
// unchanged and records method, path, query, start and end (wall-clock ms: performance.timeOrigin + performance.now(), so
// records taken in another process on the machine compare with the benchmark's own Date.now()). It runs in the
// benchmark's process (startTimedExchange) or, beside the sandbox, in a process of its own (exchange-process.ts);
// a benchmark reads either through `TimedExchange`.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface TimedCall {
  method: string;
  path: string;
  /** The query string as sent ("" or "?status=2&cursor=…"): what tells a lookup's listing page from a status walk's. */
  query: string;
  startedAt: number;
  endedAt: number | null;
  status: number | null;
}

/**
 * Forwards every request to the sandbox unchanged and records method, path, start and end. The upstream may be set
 * after the pass-through started (`setUpstream`): requests arriving before wait for it. `throttle(limit)` makes it
 * answer as the document's global throttle does (429 with Retry-After once `limit` requests of one Authorization
 * header were admitted in the last 60 s), whatever the sandbox behind it allows; `throttle(null)` stops that.
 */
export async function startTimedExchange(prefix = '/api/v2'): Promise<{
  url: string;
  calls: TimedCall[];
  setUpstream: (v2Url: string) => void;
  throttle: (limit: number | null) => void;
  close: () => Promise<void>;
}> {
  let upstream: URL | undefined;
  const calls: TimedCall[] = [];
  let limit: number | null = null;
  const admitted = new Map<string, number[]>();
  /** Seconds to wait when the request must be refused, else undefined (and the request counts). */
  const refusal = (identity: string, now: number): number | undefined => {
    if (limit === null) return undefined;
    const hits = admitted.get(identity) ?? [];
    while (hits.length > 0 && (hits[0] ?? now) <= now - 60_000) hits.shift();
    admitted.set(identity, hits);
    if (hits.length >= limit) return Math.max(1, Math.ceil(((hits[0] ?? now) + 60_000 - now) / 1000));
    hits.push(now);
    return undefined;
  };
  const server: Server = createServer((incoming, response) => {
    void forwardWhenReady(incoming, response);
  });
  const forwardWhenReady = async (incoming: IncomingMessage, response: ServerResponse): Promise<void> => {
    while (upstream === undefined) await sleep(10);
    const target = upstream;
    const { pathname: path, search } = new URL(incoming.url ?? '/', 'http://x');
    const call: TimedCall = {
      method: incoming.method ?? 'GET',
      path: path.startsWith(prefix) ? path.slice(prefix.length) || '/' : path,
      query: search,
      startedAt: performance.timeOrigin + performance.now(),
      endedAt: null,
      status: null,
    };
    calls.push(call);
    const waitSeconds = refusal(String(incoming.headers.authorization ?? ''), call.startedAt);
    if (waitSeconds !== undefined) {
      incoming.resume();
      call.status = 429;
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(waitSeconds) });
      response.end(
        JSON.stringify({ detail: `Request was throttled. Expected available in ${waitSeconds} seconds.` }),
      );
      call.endedAt = performance.timeOrigin + performance.now();
      return;
    }
    const forward = request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        // The client's Host is kept, as a reverse proxy that preserves it: links the exchange builds from it
        // (pagination.next) point back through the pass-through, not around it.
        headers: incoming.headers,
      },
      (answer) => {
        call.status = answer.statusCode ?? null;
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
        answer.on('end', () => (call.endedAt = performance.timeOrigin + performance.now()));
      },
    );
    forward.on('error', () => response.destroy());
    incoming.pipe(forward);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    calls,
    setUpstream: (v2Url) => (upstream = new URL(v2Url)),
    throttle: (perMinute) => {
      limit = perMinute;
      admitted.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What a benchmark reads of a pass-through wherever it runs: its URL, its call records and its throttle. */
export interface TimedExchange {
  /** The v2 base URL the workers (or the floor) call. */
  readonly url: string;
  /** The call records from index `from` on (all by default), as they stand now (a call under way: endedAt null). */
  calls(from?: number): Promise<TimedCall[]>;
  /** How many calls were recorded so far (an index for `calls(from)`). */
  callCount(): Promise<number>;
  /** As `startTimedExchange`'s `throttle`: the document's global throttle at `limit` per minute, or off (null). */
  throttle(limit: number | null): Promise<void>;
  close(): Promise<void>;
}

/** A pass-through in this process, read as any other. */
export function timedExchangeView(exchange: Awaited<ReturnType<typeof startTimedExchange>>): TimedExchange {
  return {
    url: exchange.url,
    calls: (from = 0) => Promise.resolve(exchange.calls.slice(from)),
    callCount: () => Promise.resolve(exchange.calls.length),
    throttle: (limit) => Promise.resolve(exchange.throttle(limit)),
    close: () => exchange.close(),
  };
}
