// Fakes of the CeFi listing's two sides: the exchange's GET /orders/?status= (rows per mode and status, cursor
// pages, failures on demand, a clock that moves with every page) and the order host (which references this replica
// drives, and what each row did).
import { exchangeStatusCodes, type TradingMode } from '../../machines/domain.ts';
import type { ExchangeClient, ListOrdersParams, OrderPage } from '../../src/exchange/client.ts';
import type { CallOptions } from '../../src/exchange/call-spec.ts';
import type { ListedMode, ListingTarget } from '../../src/worker/cefi-listing.ts';
import { exchangeOrder } from '../unit/machines/order-harness.ts';

type Row = { reference: string; status: string };
interface Request {
  mode: TradingMode;
  params: ListOrdersParams;
  priority: CallOptions['priority'];
}

/** The exchange's listing: rows per mode and status code, `pageSize` a page, cursors "<code>:<index>". */
export function fakeExchange(rows: Partial<Record<TradingMode, Row[]>>, pageSize = 2) {
  const requests: Request[] = [];
  const failAt = new Map<string, Error>();
  let clock = 1_000;
  const source: Pick<ExchangeClient, 'listOrders'> = {
    listOrders: async (mode, params = {}, options = {}) => {
      requests.push({ mode, params, priority: options.priority });
      await options.beforeSend?.();
      const code = typeof params.status === 'number' ? params.status : undefined;
      const start = params.cursor === undefined ? 0 : Number(params.cursor.split(':')[1]);
      const failure = failAt.get(`${mode}:${code}:${start}`);
      if (failure !== undefined) throw failure;
      clock += 10;
      const matching = (rows[mode] ?? []).filter(
        (row) => exchangeStatusCodes[row.status as keyof typeof exchangeStatusCodes] === code,
      );
      const page = matching.slice(start, start + pageSize);
      const next = start + pageSize < matching.length ? `${code}:${start + pageSize}` : null;
      const result: OrderPage = {
        results: page.map((row) => exchangeOrder({ uniqueReference: row.reference, status: row.status })),
        next,
        previous: null,
      };
      return result;
    },
  };
  return { source, requests, failAt, now: () => clock };
}

/** The host: which references this replica drives, and what the machine does with each row. */
export function fakeHost(local: Record<string, string>, drives: ListedMode[] = ['cefi', 'cefi_fixed']) {
  const delivered: Array<{ uniqueReference: string; status: string; at: number }> = [];
  const target: ListingTarget = {
    deliverListing: (row) => {
      delivered.push(row);
      const confirmed = local[row.uniqueReference];
      if (confirmed === undefined) return 'not_here';
      return confirmed === row.status ? 'confirmed' : 'differed';
    },
    drivesOpenOrders: (mode) => (drives as string[]).includes(mode),
    openReferences: (mode) => ((drives as string[]).includes(mode) ? Object.keys(local) : []),
  };
  return { target, delivered };
}
