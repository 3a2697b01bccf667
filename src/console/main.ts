#!/usr/bin/env node
// The operator console (`npm run console`): a small web server on the operator's side (CONSOLE_HOST:CONSOLE_PORT,
// 127.0.0.1:9470 by default) for the jobs of `npm run inspect`: the parked queue with its evidence, stalled orders,
// search by order id, reference or address, an order's timeline (events with their trace ids, the replica holding
// it) and settling with a confirmation step. It follows the state and events topics itself (read_committed), asks
// Redis for lease holders and the exchange (GET /orders/, CeFi) for candidates, and signs what it sends with the
// operator's key (OPERATOR_KEY_FILE). Signed in with OPS_API_TOKEN, as the workers' read API.
import { pino } from 'pino';
import { ConfigError, loadOperatorConfig, loadOperatorToolConfig } from '../config.ts';
import { ExchangeClient } from '../exchange/client.ts';
import { bearerCheck } from '../http/bearer-auth.ts';
import { replicaOfLease } from '../http/orders-api.ts';
import { windowSkewMs, rankCandidates } from '../inspect/exchange-candidates.ts';
import { listExchangeOrders } from '../inspect/exchange-listing.ts';
import { readFleet } from '../inspect/fleet-reader.ts';
import { sendPrepared } from '../inspect/operator-commands.ts';
import {
  describeOrder,
  publishedEventSchema,
  traceIdOf,
  type EventOnTopic,
} from '../inspect/order-report.ts';
import { createKafka } from '../kafka/kafka-client.ts';
import { readTopic } from '../kafka/topic-reader.ts';
import { closeRedis, createRedis } from '../redis/connect.ts';
import { OrderLease } from '../redis/order-lease.ts';
import { createLogger } from '../telemetry/logger.ts';
import { createConsoleServer } from './console-server.ts';

function parse(value: Buffer | null): unknown {
  if (value === null) return undefined;
  try {
    return JSON.parse(value.toString()) as unknown;
  } catch {
    return undefined;
  }
}

async function main(): Promise<number> {
  let config;
  let tools;
  try {
    config = loadOperatorConfig(process.env);
    tools = loadOperatorToolConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) console.error(`config: ${problem}`);
    return 2;
  }
  if (tools.apiTokens.length === 0) {
    console.error(
      'config: OPS_API_TOKEN: the console signs operators in with it; set it (as on the workers)',
    );
    return 2;
  }
  const logger = createLogger({ level: 'warn', name: 'console', destination: pino.destination(2) });
  const kafka = createKafka({
    clientId: 'exchange-order-console',
    brokers: [...config.kafkaBrokers],
    logger,
    security: config.security.kafka,
  });
  const fleet = await readFleet(kafka, config.topics.state, { follow: true });

  // Every event of every order, as it comes (bounded by the topic's retention; an operator's process).
  const events = new Map<string, Map<string, EventOnTopic>>();
  const eventsReading = await readTopic(
    kafka,
    config.topics.events,
    (message) => {
      const parsed = publishedEventSchema.safeParse(parse(message.value));
      if (!parsed.success || parsed.data.order_id === null) return;
      let held = events.get(parsed.data.order_id);
      if (!held) events.set(parsed.data.order_id, (held = new Map<string, EventOnTopic>()));
      held.set(parsed.data.event_id, {
        event: parsed.data,
        partition: message.partition,
        offset: message.offset,
        traceId: traceIdOf(message.headers['traceparent']),
      });
    },
    { groupPrefix: 'console' },
  );
  await eventsReading.caughtUp;

  const redis = createRedis(config.redis.topology, {
    keyPrefix: config.redisKeyPrefix,
    security: config.security.redis,
    onError: () => {},
  });
  const lease = new OrderLease(redis);
  const exchange = tools.exchange;
  const client = exchange ? new ExchangeClient(exchange) : undefined;

  const server = createConsoleServer({
    auth: bearerCheck(tools.apiTokens),
    view: fleet.view,
    timelineOf: (orderId) => {
      const held = [...(events.get(orderId)?.values() ?? [])];
      const report = describeOrder({ orderId, record: null, events: held, lease: null, now: Date.now() });
      const parked = held.map((e) => e.event).findLast((e) => e.type === 'order.parked') as
        { tried?: unknown; message?: unknown } | undefined;
      return {
        timeline: report.timeline,
        parkedEvent: parked
          ? {
              tried: Array.isArray(parked.tried) ? parked.tried.map(String) : [],
              message: typeof parked.message === 'string' ? parked.message : '',
            }
          : null,
      };
    },
    replicaOf: replicaOfLease(lease),
    candidatesOf: async (order) => {
      if (order.mode === 'defi')
        return {
          unavailable: 'GET /orders/ lists CeFi orders only: find a DeFi order in the partner dashboard.',
        };
      const mode = order.mode as 'cefi' | 'cefi_fixed';
      if (!client || exchange?.credentials[mode] === undefined)
        return {
          unavailable: `set EXCHANGE_API_URL and EXCHANGE_API_KEY_${mode.toUpperCase()} to list the exchange's orders here`,
        };
      const listed = await listExchangeOrders(
        client,
        mode,
        Date.parse(order.parked?.window_from ?? '') - windowSkewMs,
      );
      return rankCandidates(order, listed.orders, (reference) => {
        const owner = fleet.view.find(reference);
        return owner?.unique_reference === reference ? owner.order_id : undefined;
      });
    },
    send: async (prepared) => {
      const failed = await sendPrepared(kafka, config.topics.commands, [prepared]);
      const reason = failed.get(prepared.orderId);
      if (reason !== undefined) throw new Error(reason);
    },
    signer: tools.signer,
    traceUiUrl: tools.traceUiUrl,
    stalledAfterMs: tools.stalledAfterMs,
    now: () => Date.now(),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(tools.console.port, tools.console.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : tools.console.port;
  console.log(`console: http://${tools.console.host}:${port}/ (sign in with OPS_API_TOKEN)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  server.close();
  await Promise.all([fleet.stop(), eventsReading.stop(), closeRedis(redis).catch(() => {}), client?.close()]);
  return 0;
}

try {
  process.exitCode = await main();
  process.exit();
} catch (error) {
  console.error(`console: ${(error as Error).message}`);
  process.exit(1);
}
