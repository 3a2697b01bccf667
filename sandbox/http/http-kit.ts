// The small HTTP toolkit the sandbox is built on (node:http only): a thrown HttpError carries a complete reply,
// routes are `METHOD /template/{param}/` strings so faults can name them, and bodies are read fully before any
// handler runs, with a size cap, so a bad request ends in a 400 rather than a crash or a hang.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from './caller.ts';
import { messages } from '../wire/messages.ts';

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class HttpError extends Error {
  readonly reply: Reply;
  constructor(reply: Reply) {
    super(`HTTP ${reply.status}`);
    this.reply = reply;
  }
}

export type FieldErrorMap = Record<string, string[]>;

/** The v2 error envelope `{detail, errors}`; either or both keys may be present. */
export function v2Error(
  status: number,
  detail?: string,
  errors?: FieldErrorMap,
  headers?: Record<string, string>,
): HttpError {
  const body: { detail?: string; errors?: FieldErrorMap } = {};
  if (detail !== undefined) body.detail = detail;
  if (errors !== undefined) body.errors = errors;
  return new HttpError(headers ? { status, body, headers } : { status, body });
}

/** A 400 for field errors: `errors` keyed by field, `detail` repeating the first message for substring matchers. */
export function validationError(errors: FieldErrorMap): HttpError {
  const first = Object.values(errors).flat()[0];
  return v2Error(400, first, errors);
}

export function fieldError(field: string, message: string): HttpError {
  return validationError({ [field]: [message] });
}

export interface SandboxRequest {
  method: string;
  /** Path below the surface's base path, always starting and ending with "/". */
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  ip: string;
  rawBody: string;
  /** Absolute URL of this request, as the client addressed it (for pagination links). */
  url: URL;
  /** The JSON (or form) body; undefined when empty. Throws the exchange's 400 on malformed JSON. */
  body(): unknown;
  /** Set by the v2 pipeline once authentication succeeded (v1 sets it when a key or token is sent). */
  caller: Caller | undefined;
}

export type RouteHandler = (request: SandboxRequest) => Promise<Reply> | Reply;

export interface Route {
  method: string;
  template: string;
  handler: RouteHandler;
}

export function route(method: string, template: string, handler: RouteHandler): Route {
  return { method, template, handler };
}

/** `/orders/{unique_reference}/` against `/orders/ABC/` gives `{unique_reference: 'ABC'}`. */
function matchTemplate(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] ?? '';
    const g = got[i] ?? '';
    if (w.startsWith('{') && w.endsWith('}')) {
      if (g === '') return undefined;
      try {
        params[w.slice(1, -1)] = decodeURIComponent(g);
      } catch {
        return undefined; // malformed percent-encoding names nothing: 404, not a crash
      }
    } else if (w !== g) {
      return undefined;
    }
  }
  return params;
}

export type RouteMatch =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method_not_allowed'; template: string }
  | { kind: 'not_found' };

/** Literal segments win over parameters (so /pair/random/ is not /pair/{name}/). */
export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch {
  const candidates = routes
    .map((r) => ({ route: r, params: matchTemplate(r.template, path) }))
    .filter((c): c is { route: Route; params: Record<string, string> } => c.params !== undefined)
    .sort((a, b) => Object.keys(a.params).length - Object.keys(b.params).length);
  const first = candidates[0];
  if (!first) return { kind: 'not_found' };
  const bestParamCount = Object.keys(first.params).length;
  const sameShape = candidates.filter((c) => Object.keys(c.params).length === bestParamCount);
  const exact = sameShape.find((c) => c.route.method === method);
  if (exact) return { kind: 'found', route: exact.route, params: exact.params };
  const any = candidates.find((c) => c.route.method === method);
  if (any) return { kind: 'found', route: any.route, params: any.params };
  return { kind: 'method_not_allowed', template: first.route.template };
}

const MAX_BODY_BYTES = 1_000_000;

/** Reads the whole body; a body over the cap is drained and answered with a 400 by the caller. */
export async function readRawBody(request: IncomingMessage): Promise<{ text: string; tooLarge: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) tooLarge = true;
    else chunks.push(buffer);
  }
  return { text: tooLarge ? '' : Buffer.concat(chunks).toString('utf8'), tooLarge };
}

function describeJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'list';
  if (value === null) return 'NoneType';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}

export function parseBody(rawBody: string, contentType: string | undefined): unknown {
  if (rawBody.trim() === '') return undefined;
  if (contentType?.includes('application/x-www-form-urlencoded')) {
    return Object.fromEntries(new URLSearchParams(rawBody));
  }
  try {
    return JSON.parse(rawBody) as unknown;
  } catch (error) {
    throw v2Error(400, messages.jsonParseError((error as Error).message));
  }
}

/** The body as a JSON object (DRF's "Expected a dictionary" 400 otherwise); an empty body is `{}`. */
export function bodyObject(request: SandboxRequest): Record<string, unknown> {
  const body = request.body();
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationError({ non_field_errors: [messages.expectedObject(describeJsonType(body))] });
  }
  return body as Record<string, unknown>;
}

/** The request's JSON body as an object, for faults aimed with `whenBody`; undefined when it has none. */
export function bodySubject(request: SandboxRequest): Readonly<Record<string, unknown>> | undefined {
  try {
    const body = request.body();
    return typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export function sendReply(response: ServerResponse, reply: Reply): void {
  if (response.headersSent || response.destroyed) return;
  const payload = reply.body === undefined ? '' : JSON.stringify(reply.body);
  response.writeHead(reply.status, {
    ...(reply.body === undefined ? {} : { 'Content-Type': 'application/json' }),
    'Content-Length': Buffer.byteLength(payload).toString(),
    ...reply.headers,
  });
  response.end(payload);
}

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** DRF's BooleanField spellings for query parameters. */
export function queryBoolean(query: URLSearchParams, name: string): boolean | 'invalid' | undefined {
  const value = query.get(name);
  if (value === null || value === '') return undefined;
  if (['true', 'True', 'TRUE', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', 'False', 'FALSE', '0', 'no', 'off'].includes(value)) return false;
  return 'invalid';
}
