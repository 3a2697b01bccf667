// The exchange orders a parked CeFi order may be among: GET /orders/ (CeFi orders only, cursor pages, newest first
// as assumed in docs/decisions/create-in-doubt.md) read from the newest back to the start of the order's window.
import type { ExchangeOrderView } from '../../machines/domain.ts';
import type { ExchangeClient } from '../exchange/client.ts';

/** Every exchange order listed from the newest back to the window's start (pages are newest first). */
export async function listExchangeOrders(
  client: ExchangeClient,
  mode: 'cefi' | 'cefi_fixed',
  fromMs: number,
  maxPages = 200,
): Promise<{ orders: ExchangeOrderView[]; complete: boolean }> {
  const orders: ExchangeOrderView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const result = await client.listOrders(mode, cursor ? { cursor } : {});
    orders.push(...result.results);
    const allBefore =
      result.results.length > 0 && result.results.every((order) => Date.parse(order.createdOn) < fromMs);
    if (!result.next || allBefore) return { orders, complete: true };
    cursor = result.next;
  }
  return { orders, complete: false };
}
