// A partner holding a key and a referral token per trading mode, through a real worker process: the CeFi key
// belongs to another partner account than the shared EXCHANGE_REFERRAL_TOKEN, so CeFi requests carry
// EXCHANGE_REFERRAL_TOKEN_CEFI; a referral code the key's owner does not own fails the order with a specific code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoKeys, demoReferral } from '../../sandbox/index.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({
    workers: 1,
    partitions: 1,
    env: {
      EXCHANGE_API_KEY_CEFI: demoKeys.otherPartnerCefi,
      EXCHANGE_REFERRAL_TOKEN_CEFI: demoReferral.otherPartnerToken,
    },
  });
});
afterAll(async () => {
  await cluster?.stop();
});

describe('referral tokens per trading mode', () => {
  it("creates a CeFi order with the mode's own token, and fails one whose referral code the key's owner does not own", async () => {
    const created = uniqueName('order');
    await cluster.send(orderCreateCommand('cefi', '1.15', created));
    const event = await cluster.collector.waitForOrderEvent(created, 'order.created', 60_000);
    const reference = String(event['unique_reference']);
    expect(cluster.sandbox.orders.get(reference)).toBeDefined();

    const notOwned = uniqueName('order');
    await cluster.send({ ...orderCreateCommand('cefi', '1.25', notOwned), referral_code: demoReferral.code });
    const failed = await cluster.collector.waitForOrderEvent(notOwned, 'order.failed', 60_000);
    expect(failed).toMatchObject({ reason: 'rejected', code: 'referral_code_not_owned' });
    expect(cluster.collector.of(notOwned).some((e) => e.type === 'order.created')).toBe(false);
    expect(JSON.stringify(cluster.collector.of(notOwned))).not.toContain(demoReferral.otherPartnerToken);
  });
});
