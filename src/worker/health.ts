// Liveness, start-up and readiness of the worker, as the operations server answers them. Alive until the command
// consumer crashed for good (only a restart brings consumption back) and while no command handler has been running
// past stuckHandlerAfterOf(session timeout) (a handler stuck on a wait: the group has evicted this replica by then). Started once it has been in the consumer group
// with every assigned partition restored (latched: a later rebalance does not un-start it). Ready once started with
// Redis, the exchange and Kafka answering; not ready once stopping. Webhooks are accepted from start-up until the
// worker stops, whatever Redis or the exchange do (the Kubernetes readiness probe asks that, docs/operations.md).
import type { CommandConsumer } from '../kafka/command-consumer.ts';

export type Readiness = { ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> };

export interface WorkerHealthDeps {
  consumer: Pick<
    CommandConsumer,
    'crashedForGood' | 'joined' | 'allRestored' | 'restoredPartitions' | 'assigned'
  >;
  /** Whether the Kafka cluster answers (asked at most every 10 s). */
  kafka: { reachable(): Promise<boolean> };
  checks: { redis: () => Promise<boolean>; exchange: () => Promise<boolean> };
  /** The command handler running now: how long it has been running (undefined when idle), and when it is stuck. */
  commands?: { runningForMs(): number | undefined; stuckAfterMs: number };
  now: () => number;
}

/**
 * When a command handler that is still running counts as stuck: a little past the consumer group's session timeout.
 * By then the group has evicted this member (kafkajs heartbeats only between messages), so its partitions are
 * someone else's, and a handler that has not returned will not return in a useful time: the liveness probe fails
 * and Kubernetes restarts the container. The margin (a quarter of the session, at least 5 s) keeps a handler that
 * ends just as the session would have expired from restarting the pod.
 */
export function stuckHandlerAfterOf(sessionTimeoutMs: number): number {
  return sessionTimeoutMs + Math.max(5_000, Math.ceil(sessionTimeoutMs / 4));
}

/** A check that does not answer within 2 s failed. */
function timed(check: () => Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    check().catch(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), 2_000);
    }),
  ]).finally(() => clearTimeout(timer));
}

export class WorkerHealth {
  private readonly deps: WorkerHealthDeps;
  private kafkaHealthy = { ok: false, at: 0 };
  private stopping = false;
  private started = false;

  constructor(deps: WorkerHealthDeps) {
    this.deps = deps;
  }

  /** Kafka just answered (the topics were checked): no need to ask again for a while. */
  kafkaAnswered(): void {
    this.kafkaHealthy = { ok: true, at: this.deps.now() };
  }

  /** The worker is stopping: no longer ready. */
  stopped(): void {
    this.stopping = true;
  }

  /**
   * Not alive once the command consumer crashed for good, or while a command handler has been running longer than
   * `commands.stuckAfterMs`: a restart is the only way back.
   */
  liveness(): { alive: boolean; detail?: string } {
    const crashed = this.deps.consumer.crashedForGood;
    if (crashed !== undefined) return { alive: false, detail: `command consumer crashed: ${crashed}` };
    const commands = this.deps.commands;
    const runningForMs = commands?.runningForMs();
    if (commands && runningForMs !== undefined && runningForMs > commands.stuckAfterMs)
      return {
        alive: false,
        detail: `command handler running for ${runningForMs} ms (> ${commands.stuckAfterMs} ms)`,
      };
    return { alive: true };
  }

  /** Started once every assigned partition was restored after joining the group (the start-up probe). */
  startup(): { started: boolean; detail: string } {
    const { consumer } = this.deps;
    if (!this.started && consumer.joined && consumer.allRestored()) this.started = true;
    return {
      started: this.started,
      detail: `${consumer.restoredPartitions.size}/${consumer.assigned.length} restored`,
    };
  }

  /** Webhooks are taken (answered, routed once running) until the worker stops: the webhook Service's readiness. */
  acceptsWebhooks(): boolean {
    return !this.stopping;
  }

  async readiness(): Promise<Readiness> {
    const { consumer, checks: probes } = this.deps;
    const checks: Readiness['checks'] = {};
    const [redis, exchange] = await Promise.all([timed(probes.redis), timed(probes.exchange)]);
    checks['redis'] = { ok: redis };
    checks['exchange'] = { ok: exchange };
    if (this.deps.now() - this.kafkaHealthy.at > 10_000) {
      const ok = await timed(() => this.deps.kafka.reachable());
      this.kafkaHealthy = { ok, at: this.deps.now() };
    }
    checks['kafka'] = { ok: this.kafkaHealthy.ok };
    // Ready once in the group with every assigned partition restored; a replica beyond the partition count holds
    // none and is still ready (it takes over when another leaves).
    checks['partitions'] = {
      ok: consumer.joined && consumer.allRestored(),
      detail: `${consumer.restoredPartitions.size}/${consumer.assigned.length} restored`,
    };
    checks['stopping'] = { ok: !this.stopping };
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  }
}
