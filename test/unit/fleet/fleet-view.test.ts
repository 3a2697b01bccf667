import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetView } from '../../../src/fleet/fleet-view.ts';
import { parseDuration, parseListQuery } from '../../../src/fleet/list-query.ts';
import { summarizeOrder, type SummaryRecord } from '../../../src/fleet/order-summary.ts';

const now = Date.parse('2026-06-01T12:00:00Z');
const minutes = (n: number) => n * 60_000;

function record(
  id: string,
  fields: Partial<SummaryRecord> & { state?: string; context?: Record<string, unknown> } = {},
): SummaryRecord {
  const { state = 'open', context = {}, ...rest } = fields;
  return {
    order_id: id,
    partition: 0,
    fence: 1,
    rev: 1,
    seq: 3,
    updated_at: new Date(now - minutes(5)).toISOString(),
    mode: 'cefi',
    unique_reference: null,
    terminal: false,
    machine: {
      resumeFrom: state,
      context: {
        request: {
          depositCurrency: 'ETH',
          withdrawCurrency: 'BTC',
          depositAmount: '1.5',
          withdrawAmount: null,
          withdrawAddress: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
        },
        ...context,
      },
    },
    ...rest,
  };
}

const parkedContext = (parkedAt: number) => ({
  parkedAt,
  createAttempts: 2,
  lookupScans: 1,
  pendingIntent: {
    kind: 'create',
    attempt: 2,
    rateId: null,
    startedAt: parkedAt - 60_000,
    outcome: 'unknown',
  },
  lastFailure: { action: 'fatal', code: 'http_403', message: 'HTTP 403', at: parkedAt - 1_000 },
});

function query(text: string) {
  const parsed = parseListQuery(new URLSearchParams(text));
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  return parsed.query;
}

describe('summarizeOrder', () => {
  it('reads a parked order with its window, attempts and last failure from the machine context', () => {
    const parkedAt = now - minutes(30);
    const summary = summarizeOrder(
      record('p', { state: 'creating.parked', context: parkedContext(parkedAt) }),
    );
    expect(summary.phase).toBe('parked');
    expect(summary.since).toBe(new Date(parkedAt).toISOString());
    expect(summary.parked).toMatchObject({
      reason: 'create_outcome_unknown',
      window_from: new Date(parkedAt - 60_000).toISOString(),
      window_to: new Date(parkedAt - 1_000).toISOString(),
      attempts: 2,
      lookup_scans: 1,
      last_failure: { code: 'http_403', message: 'HTTP 403' },
    });
    expect(summary.intent).toMatchObject({ deposit_currency: 'ETH', deposit_amount: '1.5' });
  });

  it('calls an order halted by a bug parked (internal_error), and a finished one finished', () => {
    const halted = summarizeOrder(
      record('h', { halted: { code: 'bug', message: 'boom', at: new Date(now).toISOString() } }),
    );
    expect(halted).toMatchObject({
      phase: 'parked',
      state: 'open (halted)',
      parked: { reason: 'internal_error' },
    });
    expect(summarizeOrder(record('f', { state: 'completed', terminal: true })).phase).toBe('finished');
  });

  it('gives nulls, never a made-up value, for a machine it cannot read', () => {
    const summary = summarizeOrder(record('x', { machine: 'garbage' }));
    expect(summary).toMatchObject({ state: 'unknown', phase: 'open', exchange_status: null });
    expect(summary.intent.deposit_amount).toBeNull();
  });
});

describe('FleetView', () => {
  function fleet(): FleetView {
    const view = new FleetView();
    view.apply(record('p-old', { state: 'creating.parked', context: parkedContext(now - minutes(40)) }));
    view.apply(record('p-new', { state: 'creating.parked', context: parkedContext(now - minutes(2)) }));
    view.apply(
      record('p-defi', { state: 'creating.parked', mode: 'defi', context: parkedContext(now - minutes(50)) }),
    );
    view.apply(record('stuck', { updated_at: new Date(now - minutes(90)).toISOString(), partition: 1 }));
    view.apply(record('moving', { unique_reference: 'REF9', partition: 1 }));
    view.apply(record('done', { state: 'completed', terminal: true }));
    return view;
  }

  it('lists parked orders older than 10 minutes of one mode, oldest first', () => {
    const page = fleet().list(query('state=parked&older_than=10m&mode=cefi'), now);
    expect(page.orders.map((o) => o.order_id)).toEqual(['p-old']);
    expect(page.next_cursor).toBeNull();
    expect(
      fleet()
        .list(query('state=parked'), now)
        .orders.map((o) => o.order_id),
    ).toEqual(['p-defi', 'p-old', 'p-new']);
  });

  it('finds stalled orders (active, unmoved) and pages with a cursor without repeating or skipping', () => {
    const view = fleet();
    expect(view.list(query('state=active&older_than=1h'), now).orders.map((o) => o.order_id)).toEqual([
      'stuck',
    ]);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = view.list(query(`state=open&limit=2${cursor ? `&cursor=${cursor}` : ''}`), now);
      seen.push(...page.orders.map((o) => o.order_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['stuck', 'p-defi', 'p-old', 'moving', 'p-new']);
  });

  it('keeps the newest record by (fence, rev), finds by reference and address, and forgets on a tombstone', () => {
    const view = fleet();
    view.apply(record('moving', { unique_reference: 'REF9', rev: 0, seq: 1, state: 'quoting.waiting' }));
    expect(view.get('moving')?.seq).toBe(3);
    expect(view.find('REF9')?.order_id).toBe('moving');
    expect(view.search('BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4').length).toBeGreaterThan(3);
    view.forget('moving');
    expect(view.find('REF9')).toBeUndefined();
  });

  it('counts parked, the oldest parked age and stalled orders over the orders selected', () => {
    const view = fleet();
    expect(view.counts(now, minutes(60))).toEqual({ parked: 3, oldestParkedSeconds: 50 * 60, stalled: 1 });
    expect(view.counts(now, minutes(60), (o) => o.partition === 1)).toEqual({
      parked: 0,
      oldestParkedSeconds: 0,
      stalled: 1,
    });
  });
});

describe('FleetView over shared records', () => {
  it("keeps an open order's record itself, summarized when read: a change to it shows, a finished order does not need it", () => {
    const view = new FleetView({ sharesRecords: true });
    const open = record('o', { unique_reference: 'REF1' });
    view.apply(open);
    expect(view.get('o')?.state).toBe('open');
    // The store amends a held record in place (a machine that only confirmed itself): the view reads it as it is.
    (open.machine as { resumeFrom: string }).resumeFrom = 'creating.parked';
    expect(view.get('o')?.phase).toBe('parked');
    const done = record('d', { state: 'refunded', terminal: true });
    view.apply(done);
    done.machine = null;
    expect(view.get('d')).toMatchObject({ state: 'refunded', phase: 'finished' });
    expect(view.find('REF1')?.order_id).toBe('o');
  });

  it('lets go of the orders of released partitions, and only of them', () => {
    const view = new FleetView({ sharesRecords: true });
    view.apply(record('a', { partition: 0, unique_reference: 'RA' }));
    view.apply(record('b', { partition: 1, unique_reference: 'RB' }));
    view.apply(record('c', { partition: 1, state: 'completed', terminal: true }));
    view.release([1]);
    expect(view.size).toBe(1);
    expect(view.find('RB')).toBeUndefined();
    expect(view.find('RA')?.order_id).toBe('a');
  });

  it('counts an open order stalled from exactly the stalled age on, whatever form its time is written in', () => {
    for (const sharesRecords of [true, false]) {
      const view = new FleetView({ sharesRecords });
      const at = (ageMs: number) => new Date(now - ageMs).toISOString();
      view.apply(record('exact', { updated_at: at(minutes(60)) }));
      view.apply(record('just-under', { updated_at: at(minutes(60) - 1) }));
      view.apply(record('seconds', { updated_at: `${at(minutes(61)).slice(0, 19)}Z` }));
      view.apply(record('seconds-under', { updated_at: `${at(minutes(59)).slice(0, 19)}Z` }));
      view.apply(record('unreadable', { updated_at: 'yesterday' }));
      expect(view.counts(now, minutes(60)).stalled, `sharesRecords ${sharesRecords}`).toBe(3);
    }
  });

  it('answers every list, lookup and count as a view of copies does, for any records', () => {
    const timeIn = (form: string, ms: number): string => {
      const iso = new Date(ms).toISOString();
      if (form === 'seconds') return `${iso.slice(0, 19)}Z`;
      if (form === 'offset') return `${new Date(ms + 2 * 3_600_000).toISOString().slice(0, 23)}+02:00`;
      if (form === 'unreadable') return 'yesterday';
      return iso;
    };
    const states = ['open', 'creating.parked', 'creating.waiting', 'completed', 'refunded'];
    const arbitraryRecord = fc.record({
      id: fc.integer({ min: 0, max: 30 }),
      state: fc.constantFrom(...states),
      partition: fc.integer({ min: 0, max: 2 }),
      fence: fc.integer({ min: 1, max: 3 }),
      rev: fc.integer({ min: 0, max: 5 }),
      ageMinutes: fc.integer({ min: 0, max: 200 }),
      // The time as toISOString writes it, and in the other forms a record might carry (parsed, not compared).
      timeForm: fc.constantFrom('iso', 'iso', 'seconds', 'offset', 'unreadable'),
      mode: fc.constantFrom('cefi', 'defi'),
      halted: fc.boolean(),
      reference: fc.option(fc.constantFrom('R1', 'R2', 'R3')),
    });
    fc.assert(
      fc.property(
        fc.array(arbitraryRecord, { maxLength: 60 }),
        fc.constantFrom(
          'state=open',
          'state=parked&older_than=10m',
          'state=active&mode=defi',
          'state=finished',
        ),
        fc.integer({ min: 1, max: 7 }),
        (entries, filter, limit) => {
          const shared = new FleetView({ sharesRecords: true });
          const copied = new FleetView();
          for (const entry of entries) {
            const terminal = entry.state === 'completed' || entry.state === 'refunded';
            const fields = {
              state: entry.state,
              partition: entry.partition,
              fence: entry.fence,
              rev: entry.rev,
              mode: entry.mode,
              terminal,
              unique_reference: entry.reference,
              updated_at: timeIn(entry.timeForm, now - minutes(entry.ageMinutes)),
              ...(entry.state === 'creating.parked'
                ? { context: parkedContext(now - minutes(entry.ageMinutes)) }
                : {}),
              ...(entry.halted && !terminal
                ? {
                    halted: {
                      code: 'bug',
                      message: 'boom',
                      at: new Date(now - minutes(entry.ageMinutes + 1)).toISOString(),
                    },
                  }
                : {}),
            };
            shared.apply(record(`o${entry.id}`, fields));
            copied.apply(record(`o${entry.id}`, fields));
          }
          const pages = (view: FleetView): unknown[] => {
            const seen: unknown[] = [];
            let cursor: string | null = null;
            do {
              const page = view.list(
                query(`${filter}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`),
                now,
              );
              seen.push(page.orders);
              cursor = page.next_cursor;
            } while (cursor);
            return seen;
          };
          expect(pages(shared)).toEqual(pages(copied));
          expect(shared.counts(now, minutes(60))).toEqual(copied.counts(now, minutes(60)));
          for (const id of ['o1', 'o7', 'R1', 'R2']) expect(shared.find(id)).toEqual(copied.find(id));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('list queries', () => {
  it('reads durations and refuses what it does not know, naming the parameter', () => {
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('ten')).toBeUndefined();
    const bad = parseListQuery(new URLSearchParams('older_than=soon&mode=cex&limit=0&colour=red&cursor=zz'));
    expect(bad.ok).toBe(false);
    const problems = bad.ok ? [] : bad.problems.join('\n');
    expect(problems).toMatch(/older_than: must be a duration/);
    expect(problems).toMatch(/mode:/);
    expect(problems).toMatch(/limit:/);
    expect(problems).toMatch(/unknown parameter\(s\): colour/);
    expect(problems).toMatch(/cursor: is not a cursor/);
  });
});
