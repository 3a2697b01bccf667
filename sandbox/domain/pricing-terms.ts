// Partner rate terms on /rate/ and /orders/: markup (basis points, preferred) or the legacy referral_rate
// (decimal fraction), never both; both capped at N basis points (N from config, interpolated in the message);
// referral_rate only for referral codes allowed to use it.
import { SCALE, fromBasisPoints } from './decimal.ts';
import { validationError, v2Error } from '../http/http-kit.ts';
import { messages } from '../wire/messages.ts';
import type { ReferralCodeRecord } from './world.ts';

export interface PricingTerms {
  markupFraction: bigint;
  markupBps: number | undefined;
  referralRate: bigint | undefined;
}

export function resolvePricingTerms(input: {
  markup: number | undefined;
  referralRate: bigint | undefined;
  referral: ReferralCodeRecord | undefined;
  capBps: number;
}): PricingTerms {
  const { markup, referralRate, capBps } = input;
  if (markup !== undefined && referralRate !== undefined) {
    throw v2Error(400, messages.markupAndReferralRate, {
      non_field_errors: [messages.markupAndReferralRate],
    });
  }
  if (markup !== undefined) {
    if (markup < 0) throw validationError({ markup: [messages.minValue('0')] });
    if (markup > capBps) throw validationError({ markup: [messages.markupCap(capBps)] });
    return { markupFraction: fromBasisPoints(markup), markupBps: markup, referralRate: undefined };
  }
  if (referralRate !== undefined) {
    if (!input.referral?.allowReferralRate)
      throw validationError({ referral_rate: [messages.referralRateNotAllowed] });
    if (referralRate < 0n) throw validationError({ referral_rate: [messages.minValue('0')] });
    if (referralRate * 10_000n > BigInt(capBps) * SCALE) {
      throw validationError({ referral_rate: [messages.markupCap(capBps)] });
    }
    return { markupFraction: referralRate, markupBps: undefined, referralRate };
  }
  return { markupFraction: 0n, markupBps: undefined, referralRate: undefined };
}
