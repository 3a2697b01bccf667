import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../../src/contract/commands.ts';

const create = {
  type: 'order.create',
  command_id: 'c-1',
  order_id: 'o-1',
  mode: 'defi',
  deposit_currency: 'USDT',
  withdraw_currency: 'ETH',
  deposit_amount: '100.5',
  withdraw_address: '0x52908400098527886E0F7030069857D2E4169EE7',
};

const parse = (value: unknown, key: string | null = 'o-1') =>
  parseCommand(Buffer.from(JSON.stringify(value)), key);

describe('command parsing', () => {
  it('accepts a complete order.create and keeps amounts as strings', () => {
    const result = parse({ ...create, limit_order: undefined });
    expect(result.ok).toBe(true);
    if (result.ok && result.command.type === 'order.create')
      expect(result.command.deposit_amount).toBe('100.5');
  });

  it('rejects a value that is not JSON, naming the problem', () => {
    const result = parseCommand(Buffer.from('{nope'), 'o-1');
    expect(result).toMatchObject({
      ok: false,
      reason: 'malformed',
      message: 'value is not valid JSON',
      orderId: 'o-1',
    });
  });

  it('rejects an unknown command type and lists the known ones', () => {
    const result = parse({ type: 'order.explode', command_id: 'c', order_id: 'o-1' });
    expect(result).toMatchObject({ ok: false, reason: 'unknown_type', commandId: 'c', orderId: 'o-1' });
    if (!result.ok) expect(result.message).toContain('order.create');
  });

  it('rejects an amount given as a JSON number (amounts are decimal strings)', () => {
    const result = parse({ ...create, deposit_amount: 100.5 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/deposit_amount/);
  });

  it('requires exactly one of deposit_amount and withdraw_amount', () => {
    const both = parse({ ...create, withdraw_amount: '1' });
    const none = parse({ ...create, deposit_amount: undefined });
    for (const result of [both, none]) {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.message).toContain('exactly one of deposit_amount or withdraw_amount');
    }
  });

  it('carries the networks of the withdraw and refund addresses', () => {
    const result = parse({
      ...create,
      withdraw_network: 'ETH',
      refund_address: '0x52908400098527886E0F7030069857D2E4169EE7',
      refund_network: 'eth',
    });
    expect(result.ok).toBe(true);
    if (result.ok && result.command.type === 'order.create')
      expect([result.command.withdraw_network, result.command.refund_network]).toEqual(['ETH', 'eth']);
    expect(parse(create).ok).toBe(true); // both stay optional
  });

  it('refuses a refund_network without refund_address, and a network name that is not one', () => {
    const orphan = parse({ ...create, refund_network: 'ETH' });
    expect(orphan).toMatchObject({ ok: false, reason: 'malformed' });
    if (!orphan.ok)
      expect(orphan.message).toBe(
        'refund_network: needs refund_address (it names the network of the refund address)',
      );
    const bad = parse({ ...create, withdraw_network: 'BNB Smart Chain' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.message).toBe('withdraw_network: must be a network name such as "ETH" or "TRX"');
  });

  it('rejects unknown fields instead of ignoring them', () => {
    const result = parse({ ...create, deposit_amout: '1' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/deposit_amout/);
  });

  it('rejects a referral code off the exchange pattern and limit ttl under 600', () => {
    const badCode = parse({ ...create, referral_code: 'has space' });
    const shortTtl = parse({ ...create, mode: 'cefi', limit_order: { ttl_seconds: 599 } });
    expect(badCode.ok || shortTtl.ok).toBe(false);
    if (!badCode.ok) expect(badCode.message).toMatch(/referral_code/);
    if (!shortTtl.ok) expect(shortTtl.message).toMatch(/600/);
  });

  it('checks user_timezone at intake with the one pattern the client sends by', () => {
    for (const good of [
      'GMT +02:00 (Europe/Berlin)',
      'GMT -03:00 (America/Argentina/Buenos_Aires)',
      'GMT +00:00 (UTC)',
      'GMT +05:45 (Asia/Kathmandu)',
    ])
      expect(parse({ ...create, user_timezone: good }).ok, good).toBe(true);
    for (const bad of [
      'GMT +02:00 (Europe/)',
      'GMT +02:00 (/Berlin)',
      'GMT +02:00 (Europe//Berlin)',
      'GMT +25:00 (Europe/Berlin)',
      'GMT +02:60 (Europe/Berlin)',
      'GMT+02:00 (Europe/Berlin)',
      'GMT +02:00 (Europe/Berlin)\r\nX-Evil: 1',
    ]) {
      const result = parse({ ...create, user_timezone: bad });
      expect(result, bad).toMatchObject({ ok: false, reason: 'malformed' });
      if (!result.ok) expect(result.message).toMatch(/user_timezone/);
    }
  });

  it('allows limit orders in CeFi mode only', () => {
    expect(parse({ ...create, mode: 'cefi', limit_order: { ttl_seconds: 600 } }).ok).toBe(true);
    expect(parse({ ...create, limit_order: { ttl_seconds: 600 } }).ok).toBe(false);
  });

  it('rejects a message whose key differs from its order_id', () => {
    const result = parse(create, 'o-2');
    expect(result).toMatchObject({ ok: false, reason: 'malformed' });
  });

  it('parses submit_deposit and cancel', () => {
    expect(
      parse({
        type: 'order.submit_deposit',
        command_id: 'c-2',
        order_id: 'o-1',
        tx_hash: '0xabcdef0123456789',
      }).ok,
    ).toBe(true);
    expect(parse({ type: 'order.cancel', command_id: 'c-3', order_id: 'o-1' }).ok).toBe(true);
  });

  it('refuses a value above the size limit without reading it', () => {
    const big = Buffer.from(JSON.stringify({ ...create, withdraw_address_extra_id: 'x'.repeat(70_000) }));
    expect(parseCommand(big, 'o-1')).toMatchObject({
      ok: false,
      reason: 'too_large',
      orderId: 'o-1',
      message: `command is ${big.length} bytes; the limit is 65536 (MAX_COMMAND_BYTES)`,
    });
    expect(parseCommand(big, 'o-1', { maxBytes: 100_000 }).ok).toBe(false);
    expect(parseCommand(Buffer.from(JSON.stringify(create)), 'o-1', { maxBytes: 100 })).toMatchObject({
      reason: 'too_large',
    });
  });

  it('requires the message key (it decides the partition, and so the replica driving the order)', () => {
    const result = parse(create, null);
    expect(result).toMatchObject({ ok: false, reason: 'malformed', orderId: 'o-1' });
    if (!result.ok) expect(result.message).toMatch(/key is missing/);
  });

  it('never echoes a long value in a failure message, nor takes a long key for an order id', () => {
    const longType = parse({ type: 'z'.repeat(50_000), command_id: 'c', order_id: 'o-1' });
    const longField = parse({ ...create, ['f'.repeat(50_000)]: true });
    const longKey = parseCommand(Buffer.from('{nope'), 'k'.repeat(50_000));
    for (const result of [longType, longField]) {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.message.length).toBeLessThanOrEqual(1_024);
    }
    expect(longKey).toMatchObject({ ok: false, orderId: null });
  });

  it('refuses a routed webhook hint whose exchange text runs past the cap an order keeps it under', () => {
    const hint = {
      type: 'order.webhook_hint',
      command_id: 'h-1',
      order_id: 'o-1',
      unique_reference: 'R1',
      status: 'PAID',
      received_at: '2026-11-22T06:00:00.000Z',
    };
    expect(parse(hint).ok).toBe(true);
    expect(parse({ ...hint, status: 'P'.repeat(10_000) })).toMatchObject({ ok: false, reason: 'malformed' });
    expect(parse({ ...hint, unique_reference: 'R'.repeat(10_000) })).toMatchObject({
      ok: false,
      reason: 'malformed',
    });
  });
});
