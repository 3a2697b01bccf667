// v2 authentication as documented: `Authorization: ApiKey <key>` on every endpoint (Bearer and any other scheme
// are refused with the credentials-not-provided 401), x-referral-token as an alternative credential on /rate/
// only, and the ownership rule: with an API key, every referral code supplied by any mechanism (header, `ref`
// query parameter, `referral_code` body field) must belong to the key's partner, else 401. v1 authentication is
// optional: an unknown ApiKey is a 401, an absent one leaves the caller anonymous (or known by its referral token).
// An empty (or blank) x-referral-token header supplies no code: v2 takes it as absent, as v1 does (EdgeApp's exchange
// plugin sends the header empty when its partner has no referral code).
import type { Caller } from './caller.ts';
import { HttpError, headerValue, v2Error, type SandboxRequest } from './http-kit.ts';
import { messages } from '../wire/messages.ts';
import type { ReferralCodeRecord, World } from '../domain/world.ts';

const API_KEY_SCHEME = /^ApiKey\s+(\S+)\s*$/;

/** A referral token as supplied: undefined when absent, empty or blank (none supplied). */
function suppliedCode(value: string | null | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

export function unauthorized(): never {
  throw v2Error(401, messages.credentialsNotProvided);
}

export function authenticate(
  request: SandboxRequest,
  world: World,
  options: { referralTokenAlone: boolean },
): Caller {
  const authorization = headerValue(request.headers, 'authorization');
  const token = suppliedCode(headerValue(request.headers, 'x-referral-token'));
  const tokenReferral = token === undefined ? undefined : world.referralToken(token);
  const keyText = authorization ? API_KEY_SCHEME.exec(authorization)?.[1] : undefined;
  const apiKey = keyText ? world.apiKey(keyText) : undefined;

  if (!apiKey) {
    if (options.referralTokenAlone && authorization === undefined && tokenReferral) {
      return { apiKey: undefined, tokenReferral, ip: request.ip };
    }
    return unauthorized();
  }
  if (token !== undefined && (!tokenReferral || tokenReferral.partner.id !== apiKey.partner.id)) {
    throw v2Error(401, messages.referralNotOwned);
  }
  return { apiKey, tokenReferral, ip: request.ip };
}

/** The v1 caller: undefined when neither a known ApiKey nor a known referral token names one. */
export function authenticateV1(request: SandboxRequest, world: World): Caller | undefined {
  const authorization = headerValue(request.headers, 'authorization');
  const token = headerValue(request.headers, 'x-referral-token');
  const keyText = authorization ? /^ApiKey\s+(\S+)$/.exec(authorization)?.[1] : undefined;
  const apiKey = keyText ? world.apiKey(keyText) : undefined;
  if (keyText && !apiKey)
    throw new HttpError({ status: 401, body: { detail: messages.credentialsNotProvided } });
  const tokenReferral = token ? world.referralToken(token) : undefined;
  if (!apiKey && !tokenReferral) return undefined;
  return { apiKey, tokenReferral, ip: request.ip };
}

/**
 * The referral code an order or quote is attributed to: body field, then `ref`, then the token header. Every code
 * supplied must exist and, when an API key authenticates the request, belong to the key's partner (401 otherwise).
 */
export function resolveReferral(
  caller: Caller,
  world: World,
  supplied: readonly (string | undefined)[],
): ReferralCodeRecord | undefined {
  const records: ReferralCodeRecord[] = [];
  for (const code of supplied) {
    if (code === undefined) continue;
    const record = world.referralCode(code);
    if (!record || (caller.apiKey && record.partner.id !== caller.apiKey.partner.id)) {
      throw v2Error(401, messages.referralNotOwned);
    }
    records.push(record);
  }
  return records[0] ?? caller.tokenReferral;
}
