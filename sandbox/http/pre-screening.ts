// Compliance pre-screening, v2 and v1. Only a trusted referral token (x-referral-token) may call it: without one
// the route answers 404, with a token the operator refused 403. A compliance rejection is a 200 with status
// `failed`; v2 answers every outcome in {status, message}, v1 in {detail} (pass 200, rejection 400).
import { isIP } from 'node:net';
import type { SandboxContext } from '../domain/context.ts';
import { parseDecimal } from '../domain/decimal.ts';
import type { HttpError } from './http-kit.ts';
import { bodyObject, type Reply, type SandboxRequest } from './http-kit.ts';
import { messages } from '../wire/messages.ts';

export interface ScreeningInput {
  ip: unknown;
  pair: unknown;
  amounts: { name: string; value: unknown }[];
}

export type ScreeningResult =
  | { kind: 'not_found' }
  | { kind: 'refused' }
  | { kind: 'invalid'; message: string }
  | { kind: 'failed'; message: string }
  | { kind: 'success'; message: string };

const NOT_TRUSTED: ScreeningResult = { kind: 'not_found' };

export function screen(ctx: SandboxContext, request: SandboxRequest, input: ScreeningInput): ScreeningResult {
  const token = request.caller?.tokenReferral;
  if (!token || token.preScreening === undefined) return NOT_TRUSTED;
  if (token.preScreening === 'refused') return { kind: 'refused' };
  if (typeof input.ip !== 'string' || input.ip.trim() === '')
    return { kind: 'invalid', message: `ip: ${messages.required}` };
  if (isIP(input.ip.trim()) === 0)
    return { kind: 'invalid', message: 'ip: Enter a valid IPv4 or IPv6 address.' };
  if (typeof input.pair !== 'string' || input.pair.trim() === '')
    return { kind: 'invalid', message: `pair: ${messages.required}` };
  const pair = ctx.world.pair(input.pair.trim());
  if (!pair) return { kind: 'invalid', message: `pair: Object with name=${input.pair} does not exist.` };
  const supplied = input.amounts.filter((a) => a.value !== undefined && a.value !== null && a.value !== '');
  if (supplied.length > 1) return { kind: 'invalid', message: messages.preScreeningOneAmount };
  const amount = supplied[0];
  if (!amount)
    return {
      kind: 'invalid',
      message: `One of ${input.amounts.map((a) => a.name).join(' or ')} is required`,
    };
  const value = parseDecimal(amount.value);
  if (value === undefined || value <= 0n)
    return { kind: 'invalid', message: `${amount.name}: ${messages.invalidNumber}` };
  if (ctx.config.preScreening.riskyIps.includes(input.ip.trim()))
    return { kind: 'failed', message: "User's IP has risk." };
  return { kind: 'success', message: 'Pre-screening passed.' };
}

export function preScreeningV2(ctx: SandboxContext, request: SandboxRequest): Reply {
  const body = bodyObject(request);
  const result = screen(ctx, request, {
    ip: body['ip'],
    pair: body['pair'],
    amounts: [
      { name: 'deposit_amount', value: body['deposit_amount'] },
      { name: 'withdraw_amount', value: body['withdraw_amount'] },
    ],
  });
  switch (result.kind) {
    case 'not_found':
      return { status: 404, body: { status: 'failed', message: messages.notFound } };
    case 'refused':
      return { status: 403, body: { status: 'failed', message: 'Pre-screening access refused.' } };
    case 'invalid':
      return { status: 400, body: { status: 'failed', message: result.message } };
    case 'failed':
    case 'success':
      return { status: 200, body: { status: result.kind, message: result.message } };
  }
}

/** Rewraps a v2 `{detail, errors}` error (e.g. the 401) into the pre-screening `{status, message}` envelope. */
export function toPreScreeningEnvelope(error: HttpError): Reply {
  const body = error.reply.body as { detail?: string; errors?: Record<string, string[]> } | undefined;
  const message = body?.detail ?? Object.values(body?.errors ?? {}).flat()[0] ?? 'Request failed.';
  return { ...error.reply, body: { status: 'failed', message } };
}

export function preScreeningV1(ctx: SandboxContext, request: SandboxRequest): Reply {
  const body = bodyObject(request);
  const result = screen(ctx, request, {
    ip: body['ip'],
    pair: body['pair'],
    amounts: [{ name: 'amount_quote', value: body['amount_quote'] }],
  });
  switch (result.kind) {
    case 'not_found':
      return { status: 404, body: { detail: messages.notFound } };
    case 'refused':
      return { status: 403, body: { detail: 'Pre-screening access refused.' } };
    case 'invalid':
    case 'failed':
      return { status: 400, body: { detail: result.message } };
    case 'success':
      return { status: 200, body: { detail: result.message } };
  }
}
