// Operator signatures: what the worker accepts (the tools' signature, and the runbook's openssl recipe) and what it
// refuses, each with a reason an operator can act on; and the order host's screening of order.settle.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../../src/contract/commands.ts';
import { operatorVerifier, signOperatorCommand } from '../../../src/contract/operator-signature.ts';
import { OperatorAuthority } from '../../../src/worker/operator-authority.ts';

function keyPair() {
  const pair = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    spki: pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  };
}

const alice = keyPair();
const mallory = keyPair();
const now = Date.parse('2026-06-01T12:00:00Z');
const value = JSON.stringify({
  type: 'order.settle',
  command_id: 's-1',
  order_id: 'o-1',
  resolution: 'abandon',
});
const verify = operatorVerifier([{ keyId: 'alice', spki: alice.spki }], { maxAgeMs: 86_400_000 });
const signed = (signer: { privateKeyPem: string }, at = now, keyId = 'alice') =>
  signOperatorCommand({ keyId, privateKeyPem: signer.privateKeyPem }, { key: 'o-1', value }, at);

describe('operator signatures', () => {
  it("accepts the operator's signature and names the key", () => {
    expect(verify({ key: 'o-1', value: Buffer.from(value), headers: signed(alice) }, now + 1_000)).toEqual({
      ok: true,
      operator: { key_id: 'alice', signed_at: new Date(now).toISOString() },
    });
  });

  it('refuses no signature, an unknown key, another key posing as a known one, changed content, stale or future signatures', () => {
    const problem = (headers: Record<string, string>, at = now, v = value, key = 'o-1') => {
      const verdict = verify({ key, value: Buffer.from(v), headers }, at);
      return verdict.ok ? 'accepted' : verdict.problem;
    };
    expect(problem({})).toMatch(/must be signed with an operator key/);
    expect(problem(signed(alice, now, 'bob'))).toMatch(/"bob" is not one of OPERATOR_PUBLIC_KEYS/);
    expect(problem(signed(mallory))).toMatch(/does not match this command/);
    expect(problem(signed(alice), now, value.replace('abandon', 'adopt'))).toMatch(/does not match/);
    expect(problem(signed(alice), now, value, 'o-2')).toMatch(/does not match/);
    expect(problem(signed(alice, now - 86_400_001))).toMatch(/OPERATOR_SIGNATURE_MAX_AGE_MS/);
    expect(problem(signed(alice, now + 600_000))).toMatch(/in the future/);
    expect(problem({ ...signed(alice), 'operator-signed-at': 'yesterday' })).toMatch(/not an ISO 8601/);
  });

  it("accepts a command signed by the runbook's openssl recipe, run as printed (docs/operations.md, Operator commands)", () => {
    const runbook = readFileSync(
      join(import.meta.dirname, '..', '..', '..', 'docs', 'operations.md'),
      'utf8',
    );
    const recipes = [...runbook.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((match) => match[1]!)
      .filter((block) => block.includes('operator-signature=$SIG'));
    expect(recipes).toHaveLength(1);
    const dir = mkdtempSync(join(tmpdir(), 'op-sig-'));
    const keyFile = join(dir, 'operator.pem');
    writeFileSync(keyFile, alice.privateKeyPem);
    // A kcat of the test's own on PATH: it records its arguments and what it was given to send.
    mkdirSync(join(dir, 'bin'));
    writeFileSync(
      join(dir, 'bin', 'kcat'),
      `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/args"\ncat > "${dir}/stdin"\n`,
      { mode: 0o755 },
    );
    execFileSync('bash', ['-c', `set -euo pipefail\n${recipes[0]!}`], {
      env: {
        PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`,
        KAFKA_BROKERS: 'broker:9092',
        ORDER_ID: 'o-1',
        REF: 'K8J2M4N6P0',
        OPERATOR_KEY_FILE: keyFile,
        OPERATOR_KEY_ID: 'alice',
      },
    });
    const args = readFileSync(join(dir, 'args'), 'utf8').trimEnd().split('\n');
    expect(args.slice(0, 7)).toEqual([
      '-P',
      '-b',
      'broker:9092',
      '-t',
      'exchange.orders.commands',
      '-K|',
      '-H',
    ]);
    const headers = Object.fromEntries(
      args
        .filter((_arg, i) => args[i - 1] === '-H')
        .map((header) => [header.slice(0, header.indexOf('=')), header.slice(header.indexOf('=') + 1)]),
    );
    const [key, ...rest] = readFileSync(join(dir, 'stdin'), 'utf8').trimEnd().split('|');
    const sent = rest.join('|');
    expect(key).toBe('o-1');
    expect(JSON.parse(sent)).toEqual({
      type: 'order.settle',
      command_id: 'settle-o-1-adopt',
      order_id: 'o-1',
      resolution: 'adopt',
      unique_reference: 'K8J2M4N6P0',
    });
    const verdict = verify(
      { key: 'o-1', value: Buffer.from(sent), headers },
      Date.parse(headers['operator-signed-at']!),
    );
    expect(verdict).toEqual({
      ok: true,
      operator: { key_id: 'alice', signed_at: headers['operator-signed-at'] },
    });
    // And the parsed command is the one the worker would act on.
    expect(parseCommand(sent, 'o-1').ok).toBe(true);
  });
});

describe('the order host screening', () => {
  const message = (headers: Record<string, string>) => ({ key: 'o-1', value: Buffer.from(value), headers });
  const parsed = parseCommand(value, 'o-1');
  const refusals: string[] = [];
  const authority = new OperatorAuthority({
    keys: [{ keyId: 'alice', spki: alice.spki }],
    allowUnsigned: false,
    maxAgeMs: 86_400_000,
    onRefused: (r) => refusals.push(r.problem),
  });

  it('turns an unsigned order.settle into an unauthorized refusal, and passes a signed one with its operator', () => {
    const refused = authority.screen(parsed, message({}), now);
    expect(refused.parsed).toMatchObject({
      ok: false,
      reason: 'unauthorized',
      orderId: 'o-1',
      commandId: 's-1',
    });
    expect(refusals).toHaveLength(1);
    const passed = authority.screen(parsed, message(signed(alice)), now);
    expect(passed).toEqual({ parsed, operator: { key_id: 'alice', signed_at: new Date(now).toISOString() } });
  });

  it('leaves a trading service command alone, and refuses every settle when no key is configured', () => {
    const create = parseCommand(
      JSON.stringify({ type: 'order.cancel', command_id: 'c', order_id: 'o-1' }),
      'o-1',
    );
    expect(authority.screen(create, message({}), now)).toEqual({ parsed: create, operator: null });
    const none = new OperatorAuthority({ keys: [], allowUnsigned: false, maxAgeMs: 1 });
    expect(none.screen(parsed, message(signed(alice)), now).parsed).toMatchObject({
      ok: false,
      reason: 'unauthorized',
      message: expect.stringMatching(/no operator keys are configured/) as unknown,
    });
    const dev = new OperatorAuthority({ keys: [], allowUnsigned: true, maxAgeMs: 1 });
    expect(dev.screen(parsed, message({}), now).operator?.key_id).toBe('unsigned');
  });
});
