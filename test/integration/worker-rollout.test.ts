// Rollouts without webhook loss: a replica that received SIGTERM keeps answering and routing webhooks until its
// HTTP server closes, which is the last thing it stops before its adapters. Deliveries are fired without pause from
// the signal to the closed port; every one that gets an answer must be a 2xx whose message reached Kafka.
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, webhookSecret, type Cluster } from '../support/worker-cluster.ts';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ workers: 1, partitions: 2 });
});

afterAll(async () => {
  await cluster?.stop();
});

/** A signed KYC notification: each one is published to the events topic (no deduplication applies). */
async function deliverKyc(n: number): Promise<{ status: number; eventId: string } | undefined> {
  const body = JSON.stringify({ kyc: { status: 'approved', tier: 2 }, user_reference: `rollout-${n}` });
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', webhookSecret).update(`${timestamp}.${body}`).digest('hex');
  const eventId = `kyc:${createHash('sha256').update(body).digest('hex').slice(0, 32)}`;
  try {
    const res = await fetch(`http://127.0.0.1:${cluster.webhookPort}/webhooks/exchange`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-webhook-timestamp': String(timestamp),
        'x-webhook-signature': `sha256=${signature}`,
        connection: 'close',
      },
      body,
    });
    await res.arrayBuffer();
    return { status: res.status, eventId };
  } catch {
    return undefined; // the listener is closed: the delivery was never accepted (the exchange sees a failure)
  }
}

describe('rolling restart', () => {
  it('answers every webhook it accepts while stopping with 2xx, and routes each to Kafka', async () => {
    const worker = cluster.workers[0];
    if (!worker) throw new Error('no worker');
    const warm = await deliverKyc(0);
    expect(warm?.status).toBe(200);

    const answered: Array<{ status: number; eventId: string }> = [];
    let n = 1;
    let closed = false;
    const stopped = worker.kill('SIGTERM');
    const lanes = Array.from({ length: 4 }, async () => {
      while (!closed) {
        const outcome = await deliverKyc(n++);
        if (outcome) answered.push(outcome);
        else closed = true;
      }
    });
    await Promise.all(lanes);
    expect(await stopped).toBe(0);

    expect(answered.length).toBeGreaterThan(0);
    expect(answered.filter((a) => a.status !== 200)).toEqual([]);
    const expected = new Set([warm?.eventId, ...answered.map((a) => a.eventId)]);
    await cluster.collector.waitFor(
      (events) => [...expected].every((id) => events.some((e) => e.event_id === id)),
      `${expected.size} KYC events`,
      30_000,
    );
  });
});
