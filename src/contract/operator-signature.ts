// Operator commands carry their authority with them: an Ed25519 signature by an operator key, in three Kafka headers,
// over the exact bytes the worker receives (the message key and value) and the signing time. The worker knows the
// operators' public keys by key id (OPERATOR_PUBLIC_KEYS); the operator tools sign with a private key file. A trading
// service can write to the commands topic but holds no operator key, so it cannot settle (abandon) an order.
// Part of the Kafka contract: the header names and the signed text are what any producer of operator commands uses.
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/** Commands only an operator may send. */
export const operatorCommandTypes: readonly string[] = ['order.settle'];

export const operatorHeaders = {
  keyId: 'operator-key-id',
  signedAt: 'operator-signed-at',
  signature: 'operator-signature',
} as const;

/** The text signed: a fixed label, the key id, the signing time, the message key, then the value exactly as sent. */
export function signedBytes(keyId: string, signedAt: string, key: string, value: Buffer | string): Buffer {
  return Buffer.concat([
    Buffer.from(`exchange-order-worker operator command v1\n${keyId}\n${signedAt}\n${key}\n`, 'utf8'),
    typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
  ]);
}

/** The headers that make a command an operator's: signed now with the key's PEM (PKCS#8 Ed25519). */
export function signOperatorCommand(
  signer: { keyId: string; privateKeyPem: string },
  message: { key: string; value: string },
  now: number,
): Record<string, string> {
  const signedAt = new Date(now).toISOString();
  const privateKey = createPrivateKey(signer.privateKeyPem);
  const signature = sign(null, signedBytes(signer.keyId, signedAt, message.key, message.value), privateKey);
  return {
    [operatorHeaders.keyId]: signer.keyId,
    [operatorHeaders.signedAt]: signedAt,
    [operatorHeaders.signature]: signature.toString('base64'),
  };
}

/** Who signed a command, as the worker records it in the order's events. */
export interface OperatorIdentity {
  key_id: string;
  signed_at: string;
}

export type SignatureVerdict = { ok: true; operator: OperatorIdentity } | { ok: false; problem: string };

/** The verifier over the configured public keys (base64 DER SubjectPublicKeyInfo, by key id). */
export function operatorVerifier(
  keys: ReadonlyArray<{ keyId: string; spki: string }>,
  opts: { maxAgeMs: number; maxSkewMs?: number },
): (
  message: { key: string | null; value: Buffer | null; headers: Record<string, string> },
  now: number,
) => SignatureVerdict {
  const publicKeys = new Map<string, KeyObject>(
    keys.map((key) => [
      key.keyId,
      createPublicKey({ key: Buffer.from(key.spki, 'base64'), format: 'der', type: 'spki' }),
    ]),
  );
  const maxSkewMs = opts.maxSkewMs ?? 300_000;
  return (message, now) => {
    const keyId = message.headers[operatorHeaders.keyId];
    const signedAt = message.headers[operatorHeaders.signedAt];
    const signature = message.headers[operatorHeaders.signature];
    if (keyId === undefined || signedAt === undefined || signature === undefined)
      return {
        ok: false,
        problem: `an operator command must be signed with an operator key (headers ${Object.values(operatorHeaders).join(', ')}); the command carries none`,
      };
    const publicKey = publicKeys.get(keyId);
    if (!publicKey)
      return {
        ok: false,
        problem: `operator key "${keyId.slice(0, 64)}" is not one of OPERATOR_PUBLIC_KEYS`,
      };
    const at = Date.parse(signedAt);
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$/.test(signedAt) || !Number.isFinite(at))
      return { ok: false, problem: `${operatorHeaders.signedAt} is not an ISO 8601 UTC time` };
    if (now - at > opts.maxAgeMs)
      return {
        ok: false,
        problem: `signed at ${signedAt}, longer ago than OPERATOR_SIGNATURE_MAX_AGE_MS (${opts.maxAgeMs} ms): sign it again`,
      };
    if (at - now > maxSkewMs)
      return { ok: false, problem: `signed at ${signedAt}, in the future (clock skew?)` };
    let valid: boolean;
    try {
      valid = verify(
        null,
        signedBytes(keyId, signedAt, message.key ?? '', message.value ?? Buffer.alloc(0)),
        publicKey,
        Buffer.from(signature, 'base64'),
      );
    } catch {
      valid = false;
    }
    if (!valid)
      return {
        ok: false,
        problem: `the signature of key "${keyId}" does not match this command (its key, value or signing time changed after signing)`,
      };
    return { ok: true, operator: { key_id: keyId, signed_at: signedAt } };
  };
}
