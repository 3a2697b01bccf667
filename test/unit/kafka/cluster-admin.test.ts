import { describe, expect, it } from 'vitest';
import { lagOf } from '../../../src/kafka/cluster-admin.ts';

describe('consumer lag of one partition', () => {
  it('is the high watermark minus the committed offset', () => {
    expect(lagOf(120n, 0n, 100n)).toBe(20);
    expect(lagOf(120n, 0n, 120n)).toBe(0);
  });

  it('counts from the low watermark when the group committed nothing (kafkajs reports -1)', () => {
    expect(lagOf(120n, 30n, -1n)).toBe(90);
    expect(lagOf(120n, 30n, undefined)).toBe(90);
  });

  it('is never negative when the committed offset was read past the watermark (CI run of stop 18 saw -1)', () => {
    expect(lagOf(41n, 0n, 42n)).toBe(0);
    expect(lagOf(0n, 0n, 5n)).toBe(0);
  });
});
