// Public face of the exchange sandbox: `startSandbox(options)` starts a server that behaves like the exchange's
// v2 and v1 HTTP API and returns a handle with its URLs and typed controls. `handle.url` is the v2 base URL:
// it ends with the v2 prefix and has no trailing slash, so endpoint paths append as `${handle.url}/rate/`.
import type { AdvanceTarget, OrderStatus } from './domain/order-lifecycle.ts';
import type { AutoSchedule } from './domain/order-store.ts';
import type { ControlOrderView } from './domain/control.ts';
import type { SandboxConfig } from './config.ts';
import { demoConfig } from './demo-config.ts';
import type { FaultSpec, FaultView } from './domain/faults.ts';
import type { LateLanding } from './domain/late-landings.ts';
import { startSandboxServer, type SandboxOptions } from './http/server.ts';
import type { WebhookDelivery, WebhookOutcomeCount, WebhookState } from './domain/webhook-dispatcher.ts';
import type { ThrottleRefusal } from './http/throttles.ts';

export type { SandboxOptions } from './http/server.ts';
export type { SandboxConfig, SandboxConfigInput, TradingMode } from './config.ts';
export { parseSandboxConfig, loadSandboxConfigFile, sandboxConfigSchema } from './config.ts';
export { demoConfig, demoKeys, demoReferral } from './demo-config.ts';
export type { FaultSpec, FaultView, EndpointFaultKind, WebhookFaultKind } from './domain/faults.ts';
export type { LateLanding, LateLandingState } from './domain/late-landings.ts';
export type { RoundingMode } from './domain/decimal.ts';
export type { AdvanceTarget, OrderStatus } from './domain/order-lifecycle.ts';
export { statusCodes } from './domain/order-lifecycle.ts';
export type { AutoSchedule } from './domain/order-store.ts';
export type { ControlOrderView } from './domain/control.ts';
export type { WebhookDelivery, WebhookOutcomeCount, WebhookState } from './domain/webhook-dispatcher.ts';
export type { ThrottleRefusal } from './http/throttles.ts';
export { signWebhook, webhookEventId } from './domain/webhook-dispatcher.ts';
export { messages } from './wire/messages.ts';

export interface SandboxHandle {
  /** v2 base URL, e.g. http://127.0.0.1:40123/api/v2 (no trailing slash). */
  readonly url: string;
  /** v1 base URL, e.g. http://127.0.0.1:40123/api/v1 (no trailing slash). */
  readonly v1Url: string;
  /** Admin API base URL, e.g. http://127.0.0.1:40123/_sandbox (no trailing slash). */
  readonly adminUrl: string;
  readonly port: number;
  /** The validated config the sandbox runs on (defaults applied). */
  readonly config: SandboxConfig;
  close(): Promise<void>;

  /** Walks the order forward to `to` (event name or status), one status change and webhook per step. */
  advanceOrder(reference: string, to: AdvanceTarget): OrderStatus[];
  /** Default schedule for every order, or an override for one order (enabled unless said otherwise). */
  setAutoSchedule(schedule: Partial<AutoSchedule>, reference?: string): AutoSchedule;
  /** Moves the sandbox clock forward and applies everything that fell due; returns the new sandbox time. */
  advanceClock(ms: number): number;
  /** Sandbox time, epoch ms. */
  now(): number;

  injectFault(spec: FaultSpec): number;
  clearFaults(): void;
  listFaults(): FaultView[];
  /** Requests the late_landing fault held back: pending ones have not taken effect yet. */
  lateLandings(): LateLanding[];
  /** Requests the sandbox refused under its own limits (global throttle, fixed-rate throttles, cooldown). */
  throttleRefusals(): ThrottleRefusal[];

  listWebhookDeliveries(): WebhookDelivery[];
  /** Deliveries counted by outcome, HTTP status and error, without their bodies. */
  webhookOutcomes(): WebhookOutcomeCount[];
  /** Resolves once every webhook delivery queued so far has finished. */
  webhooksIdle(): Promise<void>;
  /** Webhook deliveries queued or in flight (a benchmark paces itself by it). */
  webhooksPending(): number;
  webhookStates(): WebhookState[];
  setWebhookEnabled(webhookId: string, enabled: boolean): void;
  emitKycStatus(reference: string, kycStatus: string): void;

  readonly orders: {
    get(reference: string): ControlOrderView | undefined;
    list(): ControlOrderView[];
  };
}

export async function startSandbox(options: SandboxOptions = {}): Promise<SandboxHandle> {
  const started = await startSandboxServer(options, demoConfig);
  const { control, ctx } = started;
  // A wildcard listen address is reachable on loopback; URLs name a host a client can dial.
  const dialHost = started.host === '0.0.0.0' ? '127.0.0.1' : started.host === '::' ? '::1' : started.host;
  const origin = `http://${dialHost.includes(':') ? `[${dialHost}]` : dialHost}:${started.port}`;
  return {
    url: `${origin}${started.paths.v2}`,
    v1Url: `${origin}${started.paths.v1}`,
    adminUrl: `${origin}${started.paths.admin}`,
    port: started.port,
    config: ctx.config,
    close: () => started.close(),
    advanceOrder: (reference, to) => control.advanceOrder(reference, to),
    setAutoSchedule: (schedule, reference) => control.setAutoSchedule(schedule, reference),
    advanceClock: (ms) => control.advanceClock(ms),
    now: () => ctx.clock.now(),
    injectFault: (spec) => control.injectFault(spec),
    clearFaults: () => control.clearFaults(),
    listFaults: () => control.listFaults(),
    lateLandings: () => control.lateLandings(),
    throttleRefusals: () => ctx.throttles.refusals(),
    listWebhookDeliveries: () => control.listWebhookDeliveries(),
    webhooksIdle: () => ctx.webhooks.idle(),
    webhookOutcomes: () => control.webhookOutcomes(),
    webhooksPending: () => control.webhooksPending(),
    webhookStates: () => control.webhookStates(),
    setWebhookEnabled: (webhookId, enabled) => control.setWebhookEnabled(webhookId, enabled),
    emitKycStatus: (reference, kycStatus) => control.emitKycStatus(reference, kycStatus),
    orders: {
      get: (reference) => control.getOrder(reference),
      list: () => control.listOrders(),
    },
  };
}
