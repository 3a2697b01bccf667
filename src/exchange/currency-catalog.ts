// The exchange's currency and network records, fetched through the ExchangeClient (GET /currency/ and GET
// /network/, budget priority low) and cached as one immutable snapshot. Invariants: at most one refresh runs at a
// time; a snapshot older than the refresh interval is refreshed on the next read; when a refresh fails, the last
// good snapshot is served (and the failure logged) until a retry succeeds; with no snapshot at all, reads throw a
// retryable ExchangeError (currency_catalog_unavailable).
import type { TradingMode } from '../../machines/domain.ts';
import type { CallOptions } from './call-spec.ts';
import type { ExchangeLogger } from './transport.ts';
import { ExchangeError, isExchangeError } from './errors.ts';
import type { WireCurrency, WireNetwork } from './schemas.ts';

/** A network a currency can be sent or received on; names are upper-cased. */
export interface CatalogCurrencyNetwork {
  readonly network: string;
  /** The token contract on that network; null for the network's native currency (or when the record omits it). */
  readonly contractAddress: string | null;
}

export interface CatalogCurrency {
  /** Upper-cased code, as the lookup key. */
  readonly code: string;
  /** Every network the record names (its `network` and its `networks` list), without repeats. */
  readonly networks: readonly CatalogCurrencyNetwork[];
}

export interface CatalogNetwork {
  /** Upper-cased name, as the lookup key. */
  readonly name: string;
  readonly isEvm: boolean;
  /** The record's `address_format` (a family name such as "evm" or "bitcoin"), lower-cased, or null. */
  readonly addressFormat: string | null;
  /** The record's `address_regex`, or null. */
  readonly addressRegex: string | null;
}

/** What the pairing check reads: lookups by code and by name (case-insensitive), and when they were fetched. */
export interface CatalogSnapshot {
  readonly fetchedAt: number;
  currency(code: string): CatalogCurrency | undefined;
  network(name: string): CatalogNetwork | undefined;
}

const upper = (text: string): string => text.trim().toUpperCase();
const nonEmpty = (text: string | null | undefined): string | null =>
  text === null || text === undefined || text.trim() === '' ? null : text.trim();

function currencyNetworks(record: WireCurrency): CatalogCurrencyNetwork[] {
  const found = new Map<string, CatalogCurrencyNetwork>();
  const add = (name: string | null | undefined, contract: string | null | undefined): void => {
    const network = nonEmpty(name);
    if (network === null) return;
    const key = upper(network);
    const known = found.get(key);
    if (known === undefined || known.contractAddress === null)
      found.set(key, { network: key, contractAddress: nonEmpty(contract) });
  };
  add(record.network, record.contract_address);
  for (const entry of record.networks ?? []) {
    if (typeof entry === 'string') add(entry, null);
    else add(entry.name ?? entry.network ?? entry.code, entry.contract_address);
  }
  return [...found.values()];
}

/** Builds the lookup snapshot from validated wire records (a code or name seen twice: the first record wins). */
export function buildCatalogSnapshot(
  currencies: readonly WireCurrency[],
  networks: readonly WireNetwork[],
  fetchedAt: number,
): CatalogSnapshot {
  const byCode = new Map<string, CatalogCurrency>();
  for (const record of currencies) {
    const code = upper(record.code);
    if (!byCode.has(code)) byCode.set(code, { code, networks: currencyNetworks(record) });
  }
  const byName = new Map<string, CatalogNetwork>();
  for (const record of networks) {
    const name = upper(record.name ?? record.code ?? '');
    if (name === '' || byName.has(name)) continue;
    byName.set(name, {
      name,
      isEvm: record.is_evm === true,
      addressFormat: nonEmpty(record.address_format)?.toLowerCase() ?? null,
      addressRegex: nonEmpty(record.address_regex),
    });
  }
  return {
    fetchedAt,
    currency: (code) => byCode.get(upper(code)),
    network: (name) => byName.get(upper(name)),
  };
}

/** The two client calls the catalog makes (ExchangeClient satisfies it). */
export interface CatalogSource {
  listCurrencies(mode: TradingMode, options?: CallOptions): Promise<WireCurrency[]>;
  listNetworks(mode: TradingMode, options?: CallOptions): Promise<WireNetwork[]>;
}

export interface CurrencyCatalogOptions {
  readonly source: CatalogSource;
  /** The trading mode whose API key reads the catalogue (any configured mode: market data needs only a key). */
  readonly mode: TradingMode;
  /** A snapshot older than this is refreshed on the next read. */
  readonly refreshIntervalMs: number;
  /** After a failed refresh, the next attempt waits this long (default: min(refresh interval, 30 s)). */
  readonly retryAfterFailureMs?: number;
  readonly now?: () => number;
  readonly logger?: ExchangeLogger;
}

/**
 * Thrown when the catalogue has never been fetched and the fetch fails: there is nothing to check addresses
 * against. An ExchangeError with action 'backoff' (code currency_catalog_unavailable), so toExchangeFailure hands
 * the machine a retryable failure: the exchange was unavailable, the order was not wrong.
 */
export function catalogUnavailable(cause: unknown): ExchangeError {
  return new ExchangeError({
    code: 'currency_catalog_unavailable',
    action: 'backoff',
    message: `currency catalog unavailable (${describeFailure(cause).message})`,
    endpoint: 'GET /currency/',
    cause,
  });
}

export class CurrencyCatalog {
  readonly #source: CatalogSource;
  readonly #mode: TradingMode;
  readonly #refreshIntervalMs: number;
  readonly #retryAfterFailureMs: number;
  readonly #now: () => number;
  readonly #logger: ExchangeLogger | undefined;
  #snapshot: CatalogSnapshot | undefined;
  #refreshing: Promise<CatalogSnapshot> | undefined;
  #lastFailureAt: number | undefined;

  constructor(options: CurrencyCatalogOptions) {
    this.#source = options.source;
    this.#mode = options.mode;
    this.#refreshIntervalMs = options.refreshIntervalMs;
    this.#retryAfterFailureMs = options.retryAfterFailureMs ?? Math.min(options.refreshIntervalMs, 30_000);
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
  }

  /**
   * The current snapshot: the cached one while it is fresh (or while a failed refresh waits to be retried), else a
   * refreshed one. A refresh that fails falls back to the cached snapshot; with none, CatalogUnavailableError.
   */
  async snapshot(options: { readonly signal?: AbortSignal } = {}): Promise<CatalogSnapshot> {
    const cached = this.#snapshot;
    const now = this.#now();
    if (cached !== undefined && now - cached.fetchedAt < this.#refreshIntervalMs) return cached;
    if (
      cached !== undefined &&
      this.#lastFailureAt !== undefined &&
      now - this.#lastFailureAt < this.#retryAfterFailureMs
    )
      return cached;
    // One refresh for every reader, never tied to one reader's signal: a reader that gives up leaves it running.
    const refreshing = (this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined;
    }));
    return options.signal === undefined ? refreshing : untilAborted(refreshing, options.signal);
  }

  /** The cached snapshot without any I/O (undefined before the first successful fetch). */
  cached(): CatalogSnapshot | undefined {
    return this.#snapshot;
  }

  async #refresh(): Promise<CatalogSnapshot> {
    const options: CallOptions = { priority: 'low' };
    try {
      const [currencies, networks] = await Promise.all([
        this.#source.listCurrencies(this.#mode, options),
        this.#source.listNetworks(this.#mode, options),
      ]);
      const snapshot = buildCatalogSnapshot(currencies, networks, this.#now());
      this.#snapshot = snapshot;
      this.#lastFailureAt = undefined;
      this.#logger?.debug(
        { currencies: currencies.length, networks: networks.length },
        'currency catalog refreshed',
      );
      return snapshot;
    } catch (err) {
      this.#lastFailureAt = this.#now();
      const detail = describeFailure(err);
      const stale = this.#snapshot;
      if (stale !== undefined) {
        this.#logger?.warn(
          { ...detail, ageMs: this.#now() - stale.fetchedAt },
          'currency catalog refresh failed; using the cached catalog',
        );
        return stale;
      }
      this.#logger?.warn(detail, 'currency catalog fetch failed; no catalog to check addresses against');
      throw catalogUnavailable(err);
    }
  }
}

/** The promise's outcome, or the signal's reason when it aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  });
}

function describeFailure(err: unknown): { code: string; message: string } {
  if (isExchangeError(err)) return { code: err.code, message: `${err.endpoint}: ${err.message}` };
  return { code: 'error', message: err instanceof Error ? err.message : String(err) };
}
