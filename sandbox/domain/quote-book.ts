// Quotes (rates) and their rate_ids: every quote remembers the pair, the trading mode it was issued for, whether it
// is actionable (DeFi fixed-rate), the markup it promised and when it expires on the sandbox clock. Orders bind to
// a quote by rate_id; DeFi quotes remember the order they produced so a repeated POST reuses it (200).
import { randomBytes } from 'node:crypto';
import type { TradingMode } from '../config.ts';
import { multiply } from './decimal.ts';
import { withdrawFor, type PairRecord } from './world.ts';

export interface Quote {
  rateId: string;
  pair: PairRecord;
  mode: TradingMode;
  actionable: boolean;
  /** Rate after markup (units of `to` per unit of `from`). */
  rate: bigint;
  markupBps: number | undefined;
  referralRate: bigint | undefined;
  depositAmount: bigint | undefined;
  withdrawAmount: bigint | undefined;
  issuedAt: number;
  expiresAt: number;
  partnerId: string | undefined;
  /** The DeFi order created from this quote (idempotent reuse). */
  orderReference: string | undefined;
}

export interface QuoteRequest {
  pair: PairRecord;
  mode: TradingMode;
  actionable: boolean;
  /** Fraction taken by markup or referral_rate (0.0025 for 25 bps). */
  markupFraction: bigint;
  markupBps: number | undefined;
  referralRate: bigint | undefined;
  depositAmount: bigint | undefined;
  partnerId: string | undefined;
  now: number;
  ttlMs: number;
}

export function rateAfterMarkup(pair: PairRecord, markupFraction: bigint): bigint {
  return pair.rate - multiply(pair.rate, markupFraction);
}

export class QuoteBook {
  readonly #quotes = new Map<string, Quote>();

  issue(request: QuoteRequest): Quote {
    const rate = rateAfterMarkup(request.pair, request.markupFraction);
    const quote: Quote = {
      rateId: randomBytes(16).toString('hex'),
      pair: request.pair,
      mode: request.mode,
      actionable: request.actionable,
      rate,
      markupBps: request.markupBps,
      referralRate: request.referralRate,
      depositAmount: request.depositAmount,
      withdrawAmount:
        request.depositAmount === undefined
          ? undefined
          : withdrawFor(request.depositAmount, rate, request.pair.withdrawalFee),
      issuedAt: request.now,
      expiresAt: request.now + request.ttlMs,
      partnerId: request.partnerId,
      orderReference: undefined,
    };
    this.#quotes.set(quote.rateId, quote);
    return quote;
  }

  get(rateId: string): Quote | undefined {
    return this.#quotes.get(rateId);
  }

  /** Forgets quotes expired for over an hour (orders keep their own copy of what they need). */
  prune(now: number): void {
    for (const [id, quote] of this.#quotes) {
      if (quote.expiresAt < now - 3_600_000 && quote.orderReference === undefined) this.#quotes.delete(id);
    }
  }
}
