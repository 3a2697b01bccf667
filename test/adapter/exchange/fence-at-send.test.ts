// The last lease check of a money-moving request happens as its bytes are written to the connection, not before it
// waits in the HTTP pool: a replica that stalls (a GC pause, SIGSTOP, a loaded machine) after the check must not
// send a POST /orders/ its successor may already have made. Real sockets (a node:http server and an undici Agent
// with one connection): MockAgent has no pool to wait in.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ExchangeClient } from '../../../src/exchange/client.ts';
import {
  orderFixture,
  RecordingBudget,
  referralToken,
  secrets,
} from '../../support/exchange/mock-exchange.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const order = {
  deposit_currency: 'BTC',
  withdraw_currency: 'ETH',
  withdraw_amount: '1.0',
  withdraw_address: '0x52908400098527886E0F7030069857D2E4169EE7',
};

/** A server whose first request is held until `release()`; it records every request that reached it. */
async function heldExchange(): Promise<{ url: string; received: string[]; release: () => void }> {
  const received: string[] = [];
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    received.push(`${req.method} ${req.url}`);
    const answer = (): void => {
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      const named = /\/orders\/([A-Z0-9]+)\/$/.exec(req.url ?? '')?.[1];
      res.end(JSON.stringify(orderFixture({ unique_reference: named ?? `REF${received.length}` })));
    };
    if (received.length === 1) void held.then(answer);
    else answer();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/en/api/v2`, received, release };
}

function clientOn(url: string): ExchangeClient {
  const dispatcher = new Agent({ connections: 1, pipelining: 1 });
  cleanups.push(() => dispatcher.close());
  return new ExchangeClient({
    baseUrl: url,
    credentials: secrets,
    referralToken,
    dispatcher,
    budget: new RecordingBudget(),
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
  });
}

describe('the lease fence as the request is written', () => {
  it('sends nothing when the lease lapsed while the POST /orders/ waited for a connection after its check', async () => {
    const exchange = await heldExchange();
    const client = clientOn(exchange.url);
    // The pool's one connection is busy with another order's GET, held by the exchange.
    const busy = client.getOrder('cefi', { uniqueReference: 'OTHER' });
    await waitUntil(() => exchange.received.length === 1);

    let ours = true;
    const notOurs = new Error('the lease passed to another replica');
    const creating = client.createOrder('cefi', order, {
      beforeSend: () => {
        if (!ours) throw notOurs;
      },
      fence: () => {
        if (!ours) throw notOurs;
      },
    });
    // The POST passed its checks and now waits inside the pool; meanwhile the lease lapses (the replica stalled).
    await new Promise((resolve) => setTimeout(resolve, 50));
    ours = false;
    exchange.release();
    await busy;

    await expect(creating).rejects.toBe(notOurs);
    expect(exchange.received).toEqual(['GET /en/api/v2/orders/OTHER/']);
  });

  it('sends the POST when the lease still holds as it is written', async () => {
    const exchange = await heldExchange();
    const client = clientOn(exchange.url);
    const busy = client.getOrder('cefi', { uniqueReference: 'OTHER' });
    await waitUntil(() => exchange.received.length === 1);
    let checks = 0;
    const creating = client.createOrder('cefi', order, { fence: () => void checks++ });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(checks).toBe(0); // not yet: it still waits for the connection
    exchange.release();
    await busy;
    const { order: created } = await creating;
    expect(created.uniqueReference).toBe('REF2');
    expect(checks).toBe(1);
    expect(exchange.received).toEqual(['GET /en/api/v2/orders/OTHER/', 'POST /en/api/v2/orders/']);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
