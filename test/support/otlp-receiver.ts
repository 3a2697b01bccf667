// A stand-in for an OpenTelemetry collector: an HTTP server that accepts OTLP/HTTP JSON trace exports
// (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every span, plus the raw bodies for secret checks.
import http from 'node:http';
import { freePort } from '../../dev/services/index.ts';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
  service: string;
}

/** OTLP span kinds (numbers in OTLP/JSON). */
export const spanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    out[key] =
      value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ??
      value.boolValue ??
      '';
  }
  return out;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  raw: string[];
  close: () => Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const port = await freePort();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const text = Buffer.concat(chunks).toString('utf8');
        raw.push(text);
        const body = JSON.parse(text) as {
          resourceSpans?: Array<{
            resource?: { attributes?: OtlpKeyValue[] };
            scopeSpans?: Array<{
              spans?: Array<{
                traceId: string;
                spanId: string;
                parentSpanId?: string;
                name: string;
                kind: number;
                attributes?: OtlpKeyValue[];
                links?: Array<{ traceId: string; spanId: string }>;
                events?: Array<{ name: string; attributes?: OtlpKeyValue[] }>;
              }>;
            }>;
          }>;
        };
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
          for (const scope of resourceSpans.scopeSpans ?? [])
            for (const span of scope.spans ?? [])
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                events: (span.events ?? []).map((e) => ({
                  name: e.name,
                  attributes: attributesOf(e.attributes),
                })),
                service,
              });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    raw,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** True when `span` is `ancestor` or one of its descendants (following parentSpanId within one trace). */
export function isUnder(spans: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  for (
    let current: ReceivedSpan | undefined = span;
    current;
    current = byId.get(current.parentSpanId ?? '')
  ) {
    if (current.spanId === ancestor.spanId && current.traceId === ancestor.traceId) return true;
  }
  return false;
}
