// A counting pass-through in front of the exchange sandbox: the workers call it as their exchange, it forwards
// every request unchanged and records what was asked, so the demo can say how many exchange calls each order
// cost without asking the worker. A dropped upstream connection (the sandbox's lost_response fault) is dropped
// here too, so the worker sees exactly what the sandbox did.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ExchangeCall {
  at: number;
  method: string;
  /** Path below the v2 prefix, e.g. "/orders/ABC/". */
  path: string;
  query: URLSearchParams;
  body: Record<string, unknown> | null;
  status: number | null;
}

export interface ExchangeMeter {
  /** v2 base URL to give the workers (same path prefix as the sandbox's). */
  readonly url: string;
  readonly calls: ExchangeCall[];
  close(): Promise<void>;
}

export async function startExchangeMeter(upstreamV2Url: string): Promise<ExchangeMeter> {
  const upstream = new URL(upstreamV2Url);
  const prefix = upstream.pathname.replace(/\/$/, '');
  const calls: ExchangeCall[] = [];
  const server: Server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const raw = Buffer.concat(chunks);
      const url = new URL(incoming.url ?? '/', 'http://meter');
      let body: Record<string, unknown> | null = null;
      try {
        const parsed = raw.length ? (JSON.parse(raw.toString()) as unknown) : null;
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
          body = parsed as Record<string, unknown>;
      } catch {
        body = null;
      }
      const call: ExchangeCall = {
        at: Date.now(),
        method: incoming.method ?? 'GET',
        path: url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) || '/' : url.pathname,
        query: url.searchParams,
        body,
        status: null,
      };
      calls.push(call);
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...incoming.headers, host: upstream.host },
        },
        (answer) => {
          call.status = answer.statusCode ?? null;
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      forward.on('error', () => response.destroy());
      response.on('close', () => forward.destroy());
      forward.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
