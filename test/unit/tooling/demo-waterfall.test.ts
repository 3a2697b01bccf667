import { describe, expect, it } from 'vitest';
import type { ReceivedSpan } from '../../../scripts/demo/trace-receiver.ts';
import { renderWaterfall, traceOfOrder } from '../../../scripts/demo/waterfall.ts';

const span = (
  traceId: string,
  spanId: string,
  parent: string | null,
  name: string,
  from: number,
  to: number,
  attributes = {},
): ReceivedSpan => ({
  traceId,
  spanId,
  parentSpanId: parent,
  name,
  startNs: BigInt(from) * 1_000_000n,
  endNs: BigInt(to) * 1_000_000n,
  service: 'exchange-order-worker',
  instance: 'w1',
  attributes,
  error: name.includes('POST'),
});

describe('the demo trace waterfall', () => {
  const create = [
    span('t1', 'a', null, 'order command', 0, 100, { 'order.id': 'o-1' }),
    span('t1', 'b', 'a', 'exchange POST /orders/', 10, 60),
    span('t1', 'c', 'a', 'exchange GET /orders/', 70, 90),
  ];
  const hint = [
    span('t2', 'd', null, 'order command', 0, 10, { 'order.id': 'o-1' }),
    ...['e', 'f', 'g', 'h'].map((id, i) =>
      span('t2', id, 'd', 'exchange GET /orders/{unique_reference}/', i, i + 1),
    ),
  ];

  it("picks the order's trace that created its exchange order, over a longer one", () => {
    expect(
      traceOfOrder(
        [...hint, ...create, span('t3', 'x', null, 'order command', 0, 1, { 'order.id': 'o-2' })],
        'o-1',
      ),
    ).toEqual(create);
    expect(traceOfOrder(hint, 'o-1')).toEqual(hint);
    expect(traceOfOrder(create, 'nobody')).toEqual([]);
  });

  it('draws each span under its parent, on the time axis of the whole trace', () => {
    const lines = renderWaterfall(create, 80);
    expect(lines[0]).toBe('trace t1: 3 spans over 100.0 ms');
    expect(lines[1]).toMatch(/^order command\s+█+\s+100\.0 ms$/);
    expect(lines[2]).toMatch(/^ {2}exchange POST \/orders\/\s+ {2,}!+\s+50\.0 ms$/);
    expect(lines[3]).toMatch(/^ {2}exchange GET \/orders\/\s+ +█+\s+20\.0 ms$/);
    // The child bars start where their spans start: POST at 10 %, GET at 70 % of the bar width.
    const barStart = (line: string): number => line.search(/[█!]/);
    expect(barStart(lines[3]!)).toBeGreaterThan(barStart(lines[2]!));
    expect(barStart(lines[2]!)).toBeGreaterThan(barStart(lines[1]!));
  });
});
