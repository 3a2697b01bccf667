// A minimal OTLP/HTTP trace receiver for the demo (JSON encoding): the workers export their spans to it, and the
// demo renders one order's trace as a waterfall in the terminal. Spans in protobuf are counted, not decoded
// (the workers are told OTEL_EXPORTER_OTLP_PROTOCOL=http/json).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  startNs: bigint;
  endNs: bigint;
  service: string;
  instance: string;
  attributes: Record<string, string | number | boolean>;
  error: boolean;
}

export interface TraceReceiver {
  /** The OTLP base URL (spans arrive at <endpoint>/v1/traces). */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  undecoded: number;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value?: OtlpValue;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (!value) continue;
    const v = value.stringValue ?? value.boolValue ?? value.doubleValue ?? value.intValue;
    if (v !== undefined) out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v;
  }
  return out;
}

function nanos(value: unknown): bigint {
  return typeof value === 'string' || typeof value === 'number' ? BigInt(value) : 0n;
}

export function spansOfExport(body: unknown): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  const resourceSpans = (body as { resourceSpans?: unknown[] } | null)?.resourceSpans ?? [];
  for (const rs of resourceSpans as Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
  }>) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const scope of rs.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        const parent = typeof span['parentSpanId'] === 'string' ? span['parentSpanId'] : '';
        spans.push({
          traceId: String(span['traceId']),
          spanId: String(span['spanId']),
          parentSpanId: parent === '' ? null : parent,
          name: String(span['name']),
          startNs: nanos(span['startTimeUnixNano']),
          endNs: nanos(span['endTimeUnixNano']),
          service: String(resource['service.name'] ?? ''),
          instance: String(resource['service.instance.id'] ?? ''),
          attributes: attributesOf(span['attributes'] as OtlpAttribute[] | undefined),
          error: (span['status'] as { code?: number } | undefined)?.code === 2,
        });
      }
    }
  }
  return spans;
}

export async function startTraceReceiver(): Promise<TraceReceiver> {
  const receiver = { spans: [] as ReceivedSpan[], undecoded: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        try {
          receiver.spans.push(...spansOfExport(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        } catch {
          receiver.undecoded++;
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}
