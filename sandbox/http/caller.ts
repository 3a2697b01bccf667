// Who is calling: the API key (with its partner and trading mode) and/or the referral code named by the
// x-referral-token header, plus the client IP that identifies unauthenticated callers for throttling.
import type { ApiKeyRecord, ReferralCodeRecord } from '../domain/world.ts';

export interface Caller {
  apiKey: ApiKeyRecord | undefined;
  tokenReferral: ReferralCodeRecord | undefined;
  ip: string;
}
