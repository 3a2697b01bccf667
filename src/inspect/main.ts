#!/usr/bin/env node
// The order inspector (`npm run inspect -- <order_id | unique_reference> [--follow] [--json]`, bin
// `exchange-order-inspect`): reads the worker's state and events topics and the lease in Redis, with the worker's
// own configuration variables, and prints one order's timeline, state, what it waits for, when it acts next, who
// drives it and, when it is parked, what an operator can do. Read-only: it writes nothing anywhere.
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ConfigError, loadOperatorConfig } from '../config.ts';
import { createKafka } from '../kafka/kafka-client.ts';
import { closeRedis, createRedis, whenRedisReady } from '../redis/connect.ts';
import { OrderLease } from '../redis/order-lease.ts';
import { createLogger } from '../telemetry/logger.ts';
import {
  describeOrder,
  publishedEventSchema,
  stateRecordSchema,
  traceIdOf,
  type EventOnTopic,
  type LeaseView,
  type StateRecord,
} from './order-report.ts';
import { renderReport, renderTimelineEntry } from './render.ts';
import { readTopic, type TopicMessage } from '../kafka/topic-reader.ts';
import { fleetCommands, fleetUsage, runFleetCommand } from './fleet-commands.ts';

const usage = `usage: exchange-order-inspect <order_id | unique_reference> [--follow] [--json]
  reads the worker's topics and Redis with the worker's variables (KAFKA_BROKERS, REDIS_URL, TOPIC_*, CONSUMER_GROUP)
  --follow  keep printing the order's new events until Ctrl-C
  --json    one JSON document (with --follow: then one JSON line per new event)
${fleetUsage}`;

function parseJson(value: Buffer | null): unknown {
  if (value === null) return undefined;
  try {
    return JSON.parse(value.toString()) as unknown;
  } catch {
    return undefined;
  }
}

function newer(candidate: StateRecord, current: StateRecord | undefined): boolean {
  if (!current) return true;
  return candidate.fence !== current.fence ? candidate.fence > current.fence : candidate.rev >= current.rev;
}

function eventOf(message: TopicMessage): EventOnTopic | undefined {
  const parsed = publishedEventSchema.safeParse(parseJson(message.value));
  if (!parsed.success) return undefined;
  return {
    event: parsed.data,
    partition: message.partition,
    offset: message.offset,
    traceId: traceIdOf(message.headers['traceparent']),
  };
}

async function main(): Promise<number> {
  const command = process.argv[2];
  if (command !== undefined && fleetCommands.has(command)) return runFleetCommand(process.argv.slice(2));
  let args;
  try {
    args = parseArgs({
      options: { follow: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean' } },
      allowPositionals: true,
    });
  } catch (error) {
    console.error(`inspect: ${(error as Error).message}\n${usage}`);
    return 2;
  }
  const id = args.positionals[0];
  if (args.values.help || id === undefined || args.positionals.length > 1) {
    console.error(usage);
    return args.values.help ? 0 : 2;
  }
  let config;
  try {
    config = loadOperatorConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) console.error(`config: ${problem}`);
    return 2;
  }
  const json = args.values.json === true;
  const follow = args.values.follow === true;
  // Logs go to stderr: stdout carries the report (and JSON for scripts).
  const logger = createLogger({ level: 'error', name: 'inspect', destination: pino.destination(2) });
  const kafka = createKafka({
    clientId: 'exchange-order-inspect',
    brokers: [...config.kafkaBrokers],
    logger,
    security: config.security.kafka,
  });

  // 1. The state topic: every order's latest record, to resolve a unique_reference and to read the state.
  const records = new Map<string, StateRecord>();
  const byReference = new Map<string, string>();
  let followedId: string | null = null;
  let printedState: string | null = null;
  const stateReading = await readTopic(kafka, config.topics.state, (message) => {
    // A tombstone: the finished order's retention passed and its record left the topic (its events remain).
    if (message.value === null && message.key !== null) {
      records.delete(message.key);
      return;
    }
    const parsed = stateRecordSchema.safeParse(parseJson(message.value));
    if (!parsed.success) return; // barriers and foreign records
    const record = parsed.data;
    if (!newer(record, records.get(record.order_id))) return;
    records.set(record.order_id, record);
    if (record.unique_reference) byReference.set(record.unique_reference, record.order_id);
    if (followedId === record.order_id && printedState !== null) {
      const name = (record.machine as { resumeFrom?: unknown } | null)?.resumeFrom;
      if (typeof name === 'string' && name !== printedState) {
        printedState = name;
        if (json)
          console.log(JSON.stringify({ state: name, seq: record.seq, updated_at: record.updated_at }));
        else console.log(`  ---- state ${name} (seq ${record.seq}, saved ${record.updated_at})`);
      }
    }
  });
  const incomplete: string[] = [];
  incomplete.push(...(await stateReading.caughtUp).incomplete);
  const orderId = records.has(id) ? id : (byReference.get(id) ?? id);

  // 2. The events topic: the order's events (key = order_id); events of an order without a state record (a
  // rejected command for an unknown order) are matched by the id or reference they carry.
  const events = new Map<string, EventOnTopic>();
  let following = false;
  const printEvent = (entry: EventOnTopic): void => {
    const line = describeOrder({ orderId, record: null, events: [entry], lease: null, now: Date.now() })
      .timeline[0];
    if (line)
      console.log(
        json ? JSON.stringify({ event: entry.event, trace_id: entry.traceId }) : renderTimelineEntry(line),
      );
  };
  const eventsReading = await readTopic(kafka, config.topics.events, (message) => {
    if (message.key !== orderId && !(message.value?.includes(id) ?? false)) return;
    const entry = eventOf(message);
    if (!entry) return;
    const e = entry.event as Record<string, unknown>;
    if (e['order_id'] !== orderId && e['unique_reference'] !== id) return;
    if (events.has(entry.event.event_id)) return;
    events.set(entry.event.event_id, entry);
    if (following) printEvent(entry);
  });
  incomplete.push(...(await eventsReading.caughtUp).incomplete);

  // 3. The lease, when Redis answers.
  let lease: LeaseView | null | 'unknown';
  const redis = createRedis(config.redis.topology, {
    keyPrefix: config.redisKeyPrefix,
    security: config.security.redis,
    onError: () => {},
  });
  try {
    await whenRedisReady(redis, 3_000);
    const holder = await new OrderLease(redis).holder(orderId);
    lease = holder ? { holder: holder.owner, fence: holder.fence, remainingMs: holder.remainingMs } : null;
  } catch {
    lease = 'unknown';
  } finally {
    await closeRedis(redis).catch(() => {});
  }

  const record = records.get(orderId) ?? null;
  const reportedIds = new Set(events.keys());
  const report = describeOrder({ orderId, record, events: [...events.values()], lease, now: Date.now() });
  report.problems.push(...incomplete.map((p) => `incomplete read: ${p}`));
  const found = report.found.state || report.found.events > 0;
  if (json) console.log(JSON.stringify(report, null, follow ? undefined : 2));
  else if (found) console.log(renderReport(report));
  else
    console.error(
      `inspect: no order with order_id or unique_reference "${id}" in ${config.topics.state} or ${config.topics.events}`,
    );

  if (follow && found) {
    followedId = orderId;
    printedState = report.state?.name ?? '';
    if (!json) console.log('  ---- following (Ctrl-C to stop)');
    // Events that arrived while the report was being put together, then every new one as it comes.
    for (const [eventId, entry] of events) if (!reportedIds.has(eventId)) printEvent(entry);
    following = true;
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
  }
  await Promise.all([stateReading.stop(), eventsReading.stop()]);
  return found ? 0 : 1;
}

try {
  process.exitCode = await main();
} catch (error) {
  // kafkajs may still be retrying in the background: leave now rather than after its retries.
  console.error(`inspect: ${(error as Error).message}`);
  process.exit(1);
}
