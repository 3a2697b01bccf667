// Shared helpers of the sandbox conformance suite: start a sandbox on a free port with a test-sized world, speak
// HTTP to it with global fetch, and receive webhooks on a node:http server of our own.
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-explicit-any -- conformance tests read the exchange's raw JSON and assert its shape instead of assuming it */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import {
  demoConfig,
  demoKeys,
  startSandbox,
  type SandboxConfigInput,
  type SandboxHandle,
  type SandboxOptions,
} from '../../../sandbox/index.ts';

export { demoKeys };
export { demoReferral } from '../../../sandbox/index.ts';

export const EVM_ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
export const BTC_ADDRESS = 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4';

export type ConfigPatch = Partial<Omit<SandboxConfigInput, 'partners'>> & {
  partners?: SandboxConfigInput['partners'];
};

/** The demo world with a fast actionable quote (tests must not wait seconds) and the given overrides. */
export function testConfig(patch: ConfigPatch = {}): SandboxConfigInput {
  return {
    ...demoConfig,
    ...patch,
    quotes: { actionableDelayMs: 20, ...patch.quotes },
  };
}

export async function startTestSandbox(
  patch: ConfigPatch = {},
  options: Omit<SandboxOptions, 'config'> = {},
): Promise<SandboxHandle> {
  const handle = await startSandbox({ port: 0, config: testConfig(patch), ...options });
  onTestFinished(() => handle.close());
  return handle;
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions {
  method?: string;
  key?: string | null;
  headers?: Record<string, string>;
  body?: unknown;
  rawBody?: string;
}

/** One request; `key` defaults to the demo CeFi key, `null` sends no Authorization header. */
export async function call<T = any>(
  base: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  const key = options.key === undefined ? demoKeys.cefi : options.key;
  if (key !== null) headers['Authorization'] = `ApiKey ${key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] = 'application/json';
  }
  const method = options.method ?? (body === undefined ? 'GET' : 'POST');
  const response = await fetch(
    `${base}${path}`,
    body === undefined ? { method, headers } : { method, headers, body },
  );
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

/** A BTC -> ETH CeFi order body (pair ETHBTC) that passes every validation. */
export function btcToEthOrder(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    deposit_currency: 'BTC',
    withdraw_currency: 'ETH',
    deposit_amount: '0.1',
    withdraw_address: EVM_ADDRESS,
    ...extra,
  };
}

export async function createOrder(
  handle: SandboxHandle,
  extra: Record<string, unknown> = {},
  key: string = demoKeys.cefi,
): Promise<any> {
  const response = await call(handle.url, '/orders/', { key, body: btcToEthOrder(extra) });
  if (response.status !== 201) throw new Error(`order creation failed: ${response.status} ${response.text}`);
  return response.body;
}

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: any;
  receivedAt: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Status the receiver answers with (default 200); a function may also hang by returning 'hang'. */
  respondWith: (webhook: ReceivedWebhook) => number | 'hang';
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    received,
    respondWith: () => 200,
    async waitFor(count, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} webhooks, got ${received.length}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return received;
    },
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const webhook: ReceivedWebhook = {
        headers: request.headers,
        rawBody,
        body: JSON.parse(rawBody),
        receivedAt: Date.now(),
      };
      received.push(webhook);
      const status = receiver.respondWith(webhook);
      if (status === 'hang') return;
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return receiver;
}

export interface WebhookOptions {
  id?: string;
  payloadVersion?: 'v1' | 'v2';
  secret?: string;
  categories?: ('order_status' | 'kyc_status')[];
}

/** The demo partners, with the demo partner's webhooks replaced by the given configurations. */
export function partnersWithWebhooks(
  hooks: (WebhookOptions & { url: string })[],
): SandboxConfigInput['partners'] {
  return demoConfig.partners.map((partner) =>
    partner.id === 'demo'
      ? {
          ...partner,
          webhooks: hooks.map((hook, i) => ({
            id: hook.id ?? `hook-${i + 1}`,
            url: hook.url,
            ...(hook.payloadVersion ? { payloadVersion: hook.payloadVersion } : {}),
            ...(hook.secret ? { secret: hook.secret } : {}),
            ...(hook.categories ? { categories: hook.categories } : {}),
          })),
        }
      : partner,
  );
}
