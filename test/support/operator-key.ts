// The operator key of the test runs: an Ed25519 key pair made once per test process. The workers the tests start
// know its public key (OPERATOR_PUBLIC_KEYS); the tests' operator commands are signed with its private key, as the
// inspector signs with an operator's key file.
import { generateKeyPairSync } from 'node:crypto';
import { signOperatorCommand } from '../../src/contract/operator-signature.ts';

const pair = generateKeyPairSync('ed25519');

export const testOperator = {
  keyId: 'test-operator',
  privateKeyPem: pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  publicSpki: pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
};

/** OPERATOR_PUBLIC_KEYS naming the test operator. */
export const testOperatorPublicKeys = `${testOperator.keyId}=${testOperator.publicSpki}`;

/** The operator headers of a command value sent under `key`, signed by the test operator now. */
export function operatorHeadersFor(key: string, value: string): Record<string, string> {
  return signOperatorCommand(testOperator, { key, value }, Date.now());
}
