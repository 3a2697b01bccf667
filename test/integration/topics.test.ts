// The worker's topics against a real broker: created when missing, co-partitioned, the commands topic's retention
// checked at start against how long a replayed create is recognised (a topic that may keep a command longer is
// reported as an error, with its settings; one that cannot be described, as a warning), and an existing state topic
// refused unless it is compacted only.
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaClient } from '../../src/kafka/kafka-client.ts';
import { ensureTopics, longestRecordLifetimeMs, type TopicsConfig } from '../../src/kafka/topics.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';

const day = 86_400_000;
const kafka = testKafka(services().kafkaBrokers);
const admin = kafka.admin();
afterAll(async () => {
  await admin.disconnect();
});

function topicsNamed(prefix: string): TopicsConfig {
  const commands = uniqueName(prefix);
  return {
    commands,
    events: `${commands}.events`,
    state: `${commands}.state`,
    partitions: 3,
    replicationFactor: 1,
  };
}

/** A logger whose lines (parsed) are kept. */
function recordingLogger(): {
  logger: ReturnType<typeof createLogger>;
  lines: Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { logger, lines };
}

const reported = (lines: Array<Record<string, unknown>>): Array<Record<string, unknown>> =>
  lines.filter((line) => String(line['msg']).includes('commands topic'));

describe('ensureTopics', () => {
  it("creates the missing topics co-partitioned and finds a broker's default retention within what a replay is recognised", async () => {
    const topics = topicsNamed('topics-new');
    const { logger, lines } = recordingLogger();
    const result = await ensureTopics(KafkaClient.wrap(kafka), topics, logger, {
      replayRecognisedForMs: 37 * day,
    });
    // Kafka's defaults: retention.ms 7 days, segment.ms 7 days, deleted at the next check (5 min).
    expect(result).toEqual({ partitions: 3, commandLifetimeMs: 14 * day + 300_000 });
    expect(reported(lines)).toEqual([]);
    await admin.connect();
    const metadata = await admin.fetchTopicMetadata({
      topics: [topics.commands, topics.events, topics.state],
    });
    expect(metadata.topics.map((t) => t.partitions.length)).toEqual([3, 3, 3]);
  });

  it('reports a commands topic that keeps commands longer than a replay is recognised, and one kept for ever', async () => {
    await admin.connect();
    for (const [retention, expected] of [
      ['-1', Number.POSITIVE_INFINITY],
      [String(40 * day), 40 * day + 3_600_000 + 300_000],
    ] as const) {
      const topics = topicsNamed('topics-long');
      await admin.createTopics({
        topics: [
          {
            topic: topics.commands,
            numPartitions: 2,
            configEntries: [
              { name: 'retention.ms', value: retention },
              { name: 'segment.ms', value: '3600000' },
            ],
          },
        ],
        waitForLeaders: true,
      });
      const { logger, lines } = recordingLogger();
      const result = await ensureTopics(KafkaClient.wrap(kafka), topics, logger, {
        replayRecognisedForMs: 37 * day,
      });
      expect(result).toEqual({ partitions: 2, commandLifetimeMs: expected });
      const [line, ...more] = reported(lines);
      expect(more).toEqual([]);
      expect(line).toMatchObject({
        level: 'error',
        topic: topics.commands,
        retentionMs: Number(retention),
        segmentMs: 3_600_000,
        replayRecognisedDays: 37,
        keepsCommandsDays: Number.isFinite(expected) ? 40 : 'for ever',
      });
      expect(String(line?.['msg'])).toContain('FINISHED_ORDER_RETENTION_MS');
    }
  });

  it('warns, and starts, when the commands topic cannot be described', async () => {
    const topics = topicsNamed('topics-undescribed');
    const client = KafkaClient.wrap(kafka);
    await ensureTopics(client, topics, createLogger({ level: 'silent' }));
    const { logger, lines } = recordingLogger();
    const real = kafka.admin.bind(kafka);
    // A principal without DescribeConfigs: the broker's refusal, as kafkajs throws it.
    const refusing = Object.assign(Object.create(kafka) as typeof kafka, {
      admin: () => {
        const inner = real();
        const describe = inner.describeConfigs.bind(inner);
        inner.describeConfigs = (request) =>
          request.resources[0]?.name === topics.commands
            ? Promise.reject(new Error('Topic authorization failed (TOPIC_AUTHORIZATION_FAILED)'))
            : describe(request);
        return inner;
      },
    });
    const result = await ensureTopics(KafkaClient.wrap(refusing), topics, logger, {
      replayRecognisedForMs: 37 * day,
    });
    expect(result).toEqual({ partitions: 3 });
    const [line, ...more] = reported(lines);
    expect(more).toEqual([]);
    expect(line?.['level']).toBe('warn');
    expect(JSON.stringify(line?.['err'])).toContain('authorization');
  });
});

describe('an existing state topic', () => {
  it.each(['delete', 'compact,delete'])(
    'with cleanup.policy=%s stops start-up: the broker would delete open orders by retention',
    async (policy) => {
      await admin.connect();
      const topics = topicsNamed('topics-state-policy');
      await admin.createTopics({
        topics: [
          {
            topic: topics.state,
            numPartitions: 3,
            configEntries: [{ name: 'cleanup.policy', value: policy }],
          },
        ],
        waitForLeaders: true,
      });
      await expect(
        ensureTopics(KafkaClient.wrap(kafka), topics, createLogger({ level: 'silent' })),
      ).rejects.toMatchObject({
        code: 'state_topic_not_compacted',
        message: expect.stringContaining(`cleanup.policy=${policy}`) as unknown,
      });
    },
  );

  it('that cannot be described stops start-up, naming the permission', async () => {
    const topics = topicsNamed('topics-state-undescribed');
    const real = kafka.admin.bind(kafka);
    const refusing = Object.assign(Object.create(kafka) as typeof kafka, {
      admin: () => {
        const inner = real();
        inner.describeConfigs = () =>
          Promise.reject(new Error('Topic authorization failed (TOPIC_AUTHORIZATION_FAILED)'));
        return inner;
      },
    });
    await expect(
      ensureTopics(KafkaClient.wrap(refusing), topics, createLogger({ level: 'silent' })),
    ).rejects.toMatchObject({
      code: 'state_topic_undescribed',
      message: expect.stringContaining('DescribeConfigs') as unknown,
    });
  });
});

describe('longestRecordLifetimeMs', () => {
  it('adds a segment and a retention check to the retention, and is infinite for a topic kept for ever', () => {
    expect(longestRecordLifetimeMs({ retentionMs: day, segmentMs: 3_600_000, cleanupPolicy: 'delete' })).toBe(
      day + 3_600_000 + 300_000,
    );
    expect(longestRecordLifetimeMs({ retentionMs: -1, segmentMs: 1, cleanupPolicy: 'delete' })).toBe(
      Infinity,
    );
    expect(longestRecordLifetimeMs({ retentionMs: day, segmentMs: 1, cleanupPolicy: 'compact,delete' })).toBe(
      Infinity,
    );
    expect(longestRecordLifetimeMs({ retentionMs: day, segmentMs: 1, cleanupPolicy: 'compact' })).toBe(
      Infinity,
    );
  });
});
