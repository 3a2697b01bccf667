// The order host: one actor per order of this replica's partitions, each provided the exchange actors behind the
// host's fencing barrier, its journal, its leases and its homes. New host options go in `buildHost`'s one object,
// each beside the configuration it comes from.
import type { WorkerConfig } from '../config.ts';
import { createOrderTimeoutMs } from '../exchange/client.ts';
import type { CommandConsumer } from '../kafka/command-consumer.ts';
import type { OrderStateStore } from '../kafka/order-state-store.ts';
import type { KeyPartitioning } from '../kafka/partitioning.ts';
import type { EventLoopLoad } from '../process/event-loop-load.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import { commandWaitBoundOf } from '../timeouts.ts';
import type { ExchangeActors } from '../worker/exchange-actors.ts';
import { OperatorAuthority } from '../worker/operator-authority.ts';
import { OrderHost } from '../worker/order-host.ts';
import type { OrderJournal } from '../worker/order-journal.ts';
import { callsSettleTimeoutOf } from '../worker/order-reload.ts';
import { createXStateBinding } from '../worker/xstate-binding.ts';
import type { RedisParts } from './redis.ts';

export function buildOperatorAuthority(config: WorkerConfig, logger: Logger): OperatorAuthority {
  const operatorLog = logger.child({ component: 'operator-authority' });
  return new OperatorAuthority({
    keys: config.operations.operatorKeys,
    allowUnsigned: config.operations.operatorCommandsUnsigned,
    maxAgeMs: config.operations.operatorSignatureMaxAgeMs,
    // Counted as messaging_client_consumed_messages_total{result="rejected",reason="unauthorized"}; the line says who tried.
    onRefused: ({ orderId, keyId, problem }) =>
      operatorLog.warn(
        { orderId, keyId, problem },
        'operator command refused: not signed by an operator key',
      ),
  });
}

export interface HostParts {
  operatorAuthority: OperatorAuthority;
  store: OrderStateStore;
  journal: OrderJournal;
  redis: Pick<RedisParts, 'leases' | 'homes'>;
  exchangeActors: ExchangeActors;
  /** Aborted when the writer failed for good. */
  writerFailed: AbortSignal;
  eventLoopLoad: EventLoopLoad;
  consumer: CommandConsumer;
  partitioning: KeyPartitioning;
}

export function buildHost(
  config: WorkerConfig,
  logger: Logger,
  telemetry: Telemetry,
  parts: HostParts,
): OrderHost {
  const { exchangeActors, eventLoopLoad, consumer, partitioning } = parts;
  return new OrderHost({
    operatorAuthority: parts.operatorAuthority,
    state: parts.store,
    journal: parts.journal,
    leases: parts.redis.leases,
    binding: (barrier) =>
      createXStateBinding({
        actors: exchangeActors.actors(barrier),
        orderConfig: {
          pollIntervalMs: config.pollIntervalMs,
          webhookPollIntervalMs: config.webhookPollIntervalMs,
          hintCoalesceMs: config.webhookCoalesceMs,
          hintCoalesceMaxMs: config.webhookCoalesceMaxMs,
          quoteCooldownMs: config.quoteCooldownMs,
          createSettleMs: config.createSettleMs,
          parkedRecheckMs: config.parkedRecheckMs,
        },
      }),
    writerFailed: parts.writerFailed,
    logger,
    now: () => Date.now(),
    callsSettled: exchangeActors.settled,
    // A lease is let go of, and a reload acts, once the order's calls ended: at most the create timeout and a margin.
    callsSettleTimeoutMs: callsSettleTimeoutOf(createOrderTimeoutMs),
    // A command's waits end well within the Kafka session: a handler still waiting past it leaves a zombie member.
    commandWaitBoundMs: commandWaitBoundOf(config.kafkaSessionTimeoutMs),
    callInFlight: exchangeActors.busy,
    passivateIdleMs: config.passivateIdleMs,
    // Routine polls of resting orders wait (up to 60 s after their last confirmation) while the thread is saturated
    // or commands wait for it: a backlog of creations on two shared cores need not keep the thread busy to be one.
    pollsMayWait: () => eventLoopLoad.saturated() || consumer.commandsWaiting(),
    pollResting: exchangeActors.pollResting,
    // The other half of the calls in flight stays for commands: polls at rest alone never pause consumption.
    maxPollsAtRest: Math.max(1, Math.floor(config.maxInflightExchangeCalls / 2)),
    commandPipelineDepth: config.commandPipelineDepth,
    // A rewind is asked for only once commands flow (the consumer is started after the host).
    rewind: (partition, offset) => consumer.rewind(partition, offset),
    maxCommandBytes: config.maxCommandBytes,
    metrics: telemetry.metrics.hostObserver({
      topic: config.topics.commands,
      consumerGroup: config.consumerGroup,
    }),
    homes: parts.redis.homes,
    canonicalPartition: (orderId) => partitioning.partitionOf(orderId),
  });
}
