// Webhooks as documented: per-partner configurations; one POST per order status change (5 s timeout, no retry);
// payload v2 (Order + `id`) or v1 (v1 Order + `id`); `id` stable per (configuration, order); when a secret is
// configured, X-Webhook-Timestamp and X-Webhook-Signature = "sha256=" + hex HMAC-SHA256 over "<timestamp>.<body>".
// Deliveries of one order to one configuration are sent in order (unless a reorder fault says otherwise); an
// endpoint with an error rate of 50% or more over the monitoring window is disabled until re-enabled.
// Signing timestamps use the wall clock (they are about transport freshness), not the sandbox clock.
import { createHash, createHmac } from 'node:crypto';
import type { SandboxClock } from './clock.ts';
import type { SandboxConfig } from '../config.ts';
import type { FaultBoard, WebhookFault } from './faults.ts';
import type { OrderStatus } from './order-lifecycle.ts';
import type { Order } from './order-store.ts';
import { toV1Order } from '../wire/v1-representation.ts';
import { toV2Order } from '../wire/v2-representation.ts';
import type { WebhookRecord, World } from './world.ts';

export interface WebhookDelivery {
  seq: number;
  webhookId: string;
  partnerId: string;
  url: string;
  category: 'order_status' | 'kyc_status';
  orderReference: string;
  /** Order status (or KYC status) this delivery announces. */
  status: string;
  eventId: string;
  payloadVersion: 'v1' | 'v2';
  body: string;
  headers: Record<string, string>;
  outcome: 'pending' | 'delivered' | 'failed' | 'timeout' | 'dropped';
  httpStatus: number | undefined;
  error: string | undefined;
  queuedAt: number;
  /** When its POST left (after the earlier deliveries for the same order and configuration, which go one at a time). */
  sentAt: number | undefined;
  finishedAt: number | undefined;
  faults: string[];
}

/** How many deliveries ended one way (pending included): what a benchmark reports, without the bodies. */
export interface WebhookOutcomeCount {
  outcome: WebhookDelivery['outcome'];
  httpStatus: number | null;
  error: string | null;
  count: number;
}

export interface WebhookState {
  webhookId: string;
  partnerId: string;
  url: string;
  enabled: boolean;
  disabledAt: number | undefined;
}

/** `id` of every delivery for one (configuration, order): a UUID-shaped digest of the pair. */
export function webhookEventId(webhookId: string, orderReference: string): string {
  const hex = createHash('sha256').update(`${webhookId}\u0000${orderReference}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export function signWebhook(secret: string, timestamp: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
}

/**
 * The outcomes of one configuration's deliveries inside the error window, oldest first from `head`, with the failures
 * among them counted: each delivery adds one and drops those that left the window, instead of copying the window
 * (tens of thousands of deliveries in a benchmark made that quadratic: 50k took some 24 s of the sandbox's CPU).
 */
interface OutcomeWindow {
  entries: { at: number; ok: boolean }[];
  head: number;
  errors: number;
}

export class WebhookDispatcher {
  readonly #world: World;
  readonly #clock: SandboxClock;
  readonly #faults: FaultBoard;
  readonly #settings: SandboxConfig['webhooks'];
  readonly #deliveries: WebhookDelivery[] = [];
  readonly #states = new Map<string, WebhookState>();
  readonly #outcomes = new Map<string, OutcomeWindow>();
  readonly #chains = new Map<string, Promise<void>>();
  readonly #held = new Map<string, () => void>();
  readonly #pending = new Set<Promise<void>>();
  readonly #controllers = new Set<AbortController>();
  #seq = 0;
  #closed = false;

  constructor(world: World, clock: SandboxClock, faults: FaultBoard, settings: SandboxConfig['webhooks']) {
    this.#world = world;
    this.#clock = clock;
    this.#faults = faults;
    this.#settings = settings;
    for (const record of world.webhooks()) {
      this.#states.set(record.config.id, {
        webhookId: record.config.id,
        partnerId: record.partner.id,
        url: record.config.url,
        enabled: record.config.enabled,
        disabledAt: undefined,
      });
    }
  }

  states(): WebhookState[] {
    return [...this.#states.values()].map((s) => ({ ...s }));
  }

  setEnabled(webhookId: string, enabled: boolean): boolean {
    const state = this.#states.get(webhookId);
    if (!state) return false;
    state.enabled = enabled;
    state.disabledAt = enabled ? undefined : this.#clock.now();
    if (enabled) this.#outcomes.delete(webhookId);
    return true;
  }

  deliveries(): WebhookDelivery[] {
    return this.#deliveries.map((d) => ({ ...d, headers: { ...d.headers }, faults: [...d.faults] }));
  }

  /** Every delivery so far counted by outcome, HTTP status and error, in the order each kind first occurred. */
  outcomeCounts(): WebhookOutcomeCount[] {
    const counts = new Map<string, WebhookOutcomeCount>();
    for (const d of this.#deliveries) {
      const key = JSON.stringify([d.outcome, d.httpStatus ?? null, d.error ?? null]);
      const entry = counts.get(key);
      if (entry) entry.count++;
      else
        counts.set(key, {
          outcome: d.outcome,
          httpStatus: d.httpStatus ?? null,
          error: d.error ?? null,
          count: 1,
        });
    }
    return [...counts.values()];
  }

  /** Deliveries queued or in flight. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Resolves once every delivery queued so far has finished (delivered, failed, timed out or dropped). */
  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  close(): void {
    this.#closed = true;
    for (const release of this.#held.values()) release();
    this.#held.clear();
    for (const controller of this.#controllers) controller.abort();
  }

  #configsFor(partnerId: string | undefined, category: 'order_status' | 'kyc_status'): WebhookRecord[] {
    if (!partnerId) return [];
    return this.#world
      .webhooks()
      .filter((w) => w.partner.id === partnerId && w.config.categories.includes(category))
      .filter((w) => this.#states.get(w.config.id)?.enabled === true);
  }

  orderStatusChanged(order: Order, _previous: OrderStatus): void {
    for (const record of this.#configsFor(order.partnerId, 'order_status')) {
      const eventId = webhookEventId(record.config.id, order.uniqueReference);
      const representation = record.config.payloadVersion === 'v2' ? toV2Order(order) : toV1Order(order);
      this.#queue(record, 'order_status', order.uniqueReference, order.status, eventId, {
        ...representation,
        id: eventId,
      });
    }
  }

  /** KYC events carry an assumed payload (the document does not show it). */
  kycStatusChanged(order: Order, kycStatus: string): void {
    for (const record of this.#configsFor(order.partnerId, 'kyc_status')) {
      const eventId = webhookEventId(record.config.id, order.uniqueReference);
      const body = {
        id: eventId,
        event: 'kyc_status_changed',
        unique_reference: order.uniqueReference,
        kyc_status: kycStatus,
      };
      this.#queue(record, 'kyc_status', order.uniqueReference, kycStatus, eventId, body);
    }
  }

  #queue(
    record: WebhookRecord,
    category: WebhookDelivery['category'],
    orderReference: string,
    status: string,
    eventId: string,
    payload: Record<string, unknown>,
  ): void {
    if (this.#closed) return;
    const faults = this.#faults.webhookFaults(record.config.id);
    const body = JSON.stringify(payload);
    const duplicate = faults.find((f) => f.kind === 'duplicate');
    const copies = duplicate ? (duplicate.copies ?? 2) : 1;
    for (let copy = 0; copy < copies; copy++) {
      const delivery: WebhookDelivery = {
        seq: ++this.#seq,
        webhookId: record.config.id,
        partnerId: record.partner.id,
        url: record.config.url,
        category,
        orderReference,
        status,
        eventId,
        payloadVersion: record.config.payloadVersion,
        body,
        headers: {},
        outcome: 'pending',
        httpStatus: undefined,
        error: undefined,
        queuedAt: this.#clock.now(),
        sentAt: undefined,
        finishedAt: undefined,
        faults: faults.map((f) => f.kind),
      };
      this.#deliveries.push(delivery);
      this.#schedule(record, delivery, faults);
    }
  }

  #schedule(record: WebhookRecord, delivery: WebhookDelivery, faults: WebhookFault[]): void {
    const chainKey = `${record.config.id}|${delivery.orderReference}`;
    const previous = this.#chains.get(chainKey) ?? Promise.resolve();
    const releaseEarlier = this.#held.get(chainKey);
    this.#held.delete(chainKey);
    const reorder = faults.some((f) => f.kind === 'reorder');
    const delayFault = faults.find((f) => f.kind === 'delay');
    const delayMs = delayFault ? (delayFault.delayMs ?? 1_000) : 0;
    // A reordered delivery is held back until the next delivery of its chain has gone out (at most 2 s).
    const hold = reorder
      ? new Promise<void>((resolve) => {
          this.#held.set(chainKey, resolve);
          setTimeout(resolve, 2_000).unref();
        })
      : undefined;

    const run = async (): Promise<void> => {
      await previous;
      if (hold) await hold;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
      await this.#send(record, delivery, faults);
    };
    const task = run();
    // The reordered delivery must not block its successors.
    this.#chains.set(chainKey, reorder ? previous : task);
    if (releaseEarlier) void task.finally(releaseEarlier);
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task));
  }

  async #send(record: WebhookRecord, delivery: WebhookDelivery, faults: WebhookFault[]): Promise<void> {
    if (faults.some((f) => f.kind === 'drop') || this.#closed) {
      delivery.outcome = 'dropped';
      delivery.finishedAt = this.#clock.now();
      return;
    }
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'User-Agent': 'exchange-sandbox-webhooks',
    };
    if (record.config.secret) {
      const wall = Math.floor(Date.now() / 1000);
      const skew = faults.find((f) => f.kind === 'skew_timestamp')?.skewSeconds ?? 0;
      const timestamp = String(faults.some((f) => f.kind === 'stale_timestamp') ? wall - 600 : wall + skew);
      const signingSecret = faults.some((f) => f.kind === 'bad_signature')
        ? `${record.config.secret}-wrong`
        : record.config.secret;
      headers['X-Webhook-Timestamp'] = timestamp;
      headers['X-Webhook-Signature'] = signWebhook(signingSecret, timestamp, delivery.body);
    }
    delivery.headers = headers;
    delivery.sentAt = this.#clock.now();
    const controller = new AbortController();
    this.#controllers.add(controller);
    const timer = setTimeout(() => controller.abort(new Error('timeout')), this.#settings.timeoutMs);
    let ok = false;
    try {
      const response = await fetch(record.config.url, {
        method: 'POST',
        headers,
        body: delivery.body,
        signal: controller.signal,
      });
      await response.arrayBuffer().catch(() => undefined);
      delivery.httpStatus = response.status;
      ok = response.status >= 200 && response.status < 300;
      delivery.outcome = ok ? 'delivered' : 'failed';
    } catch (error) {
      const timedOut = controller.signal.aborted && !this.#closed;
      delivery.outcome = timedOut ? 'timeout' : 'failed';
      delivery.error = timedOut
        ? `no answer within ${this.#settings.timeoutMs} ms`
        : (error as Error).message;
    } finally {
      clearTimeout(timer);
      this.#controllers.delete(controller);
    }
    delivery.finishedAt = this.#clock.now();
    this.#recordOutcome(record.config.id, ok);
  }

  #recordOutcome(webhookId: string, ok: boolean): void {
    const now = this.#clock.now();
    let window = this.#outcomes.get(webhookId);
    if (!window) {
      window = { entries: [], head: 0, errors: 0 };
      this.#outcomes.set(webhookId, window);
    }
    window.entries.push({ at: now, ok });
    if (!ok) window.errors++;
    // Outcomes are recorded in the order they finish, on a clock that only moves forward: the oldest leave first.
    const oldest = now - this.#settings.errorWindowMs;
    let first = window.entries[window.head];
    while (first !== undefined && first.at <= oldest) {
      if (!first.ok) window.errors--;
      first = window.entries[++window.head];
    }
    if (window.head > 1_000 && window.head * 2 > window.entries.length) {
      window.entries.splice(0, window.head);
      window.head = 0;
    }
    const inWindow = window.entries.length - window.head;
    if (inWindow >= this.#settings.minDeliveriesInWindow && window.errors * 2 >= inWindow) {
      const state = this.#states.get(webhookId);
      if (state?.enabled) {
        state.enabled = false;
        state.disabledAt = now;
      }
    }
  }
}
