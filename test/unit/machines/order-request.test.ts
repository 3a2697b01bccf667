import { describe, expect, it } from 'vitest';
import { createInputOf, initialOrderContext, requestOf } from '../../../machines/order-context.ts';
import { camelKeys, orderCreateFields, orderRequestKeys } from '../../../machines/order-request.ts';
import { T0, orderInput } from './order-harness.ts';

describe('order request: one schema of the order.create fields', () => {
  it('names every field of the schema, in camelCase, in the request', () => {
    expect(orderRequestKeys).toEqual([
      'orderId',
      ...Object.keys(orderCreateFields.shape).map((key) =>
        key.replace(/_(.)/g, (_, c: string) => c.toUpperCase()),
      ),
    ]);
    expect(orderRequestKeys).toContain('withdrawAddressExtraId');
    expect(orderRequestKeys).toContain('userTimezone');
  });

  it('camelCases the command fields, nested objects too', () => {
    expect(
      camelKeys({
        order_id: 'o',
        withdraw_address_extra_id: 'x',
        limit_order: { ttl_seconds: 600 },
        markup: 0,
      }),
    ).toEqual({ orderId: 'o', withdrawAddressExtraId: 'x', limitOrder: { ttlSeconds: 600 }, markup: 0 });
  });

  it('keeps every field given (zero included) and reads an absent one as null', () => {
    const request = requestOf(orderInput({ markup: 0, limitOrder: { ttlSeconds: 600 } }));
    expect(request).toMatchObject({ orderId: 'order-1', markup: 0, limitOrder: { ttlSeconds: 600 } });
    expect(request.refundAddress).toBeNull();
    expect(request.preScreening).toBeNull();
    expect(Object.keys(request).sort()).toEqual([...orderRequestKeys].sort());
    expect(request).not.toHaveProperty('now');
  });

  it('restores a stored request without a field added since: the field reads as null', () => {
    const fresh = initialOrderContext(orderInput());
    const { withdrawNetwork: _w, refundNetwork: _r, ...olderRequest } = fresh.request;
    const restored = initialOrderContext({
      restore: { resumeFrom: 'open', context: { ...fresh, request: olderRequest as typeof fresh.request } },
      now: T0 + 1_000,
    });
    expect(restored.request).toEqual({ ...olderRequest, withdrawNetwork: null, refundNetwork: null });
  });

  it('gives the create every field of the request it sends, with the attempt and the bound rate', () => {
    const context = initialOrderContext(orderInput({ refundAddress: 'bc1qrefund', side: 'BUY' }));
    expect(createInputOf(context)).toEqual({
      orderId: 'order-1',
      mode: 'defi',
      depositCurrency: 'ETH',
      withdrawCurrency: 'BTC',
      depositAmount: '1.00000000',
      withdrawAmount: null,
      withdrawAddress: 'bc1qwithdraw',
      withdrawAddressExtraId: null,
      refundAddress: 'bc1qrefund',
      refundAddressExtraId: null,
      referralCode: null,
      markup: null,
      side: 'BUY',
      userTimezone: null,
      attempt: 0,
      rateId: null,
      isLimitOrder: false,
      limitTtlSeconds: null,
    });
  });
});
