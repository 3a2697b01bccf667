// The operator tools' read of the state topic into a read view (src/fleet/fleet-view.ts), the same view every worker
// replica keeps: `inspect list`, `find-exchange-order`, `settle` (which reads it again to refuse orders that moved)
// and the console (which keeps following it). Read-only, read_committed, with a throw-away consumer group.
import { FleetView } from '../fleet/fleet-view.ts';
import { summaryRecordSchema } from '../fleet/order-summary.ts';
import type { KafkaClient } from '../kafka/kafka-client.ts';
import { readTopic, type TopicReading } from '../kafka/topic-reader.ts';

function parse(value: Buffer): unknown {
  try {
    return JSON.parse(value.toString()) as unknown;
  } catch {
    return undefined;
  }
}

/** Reads the whole state topic; with `follow`, keeps the view current until `stop`. */
export async function readFleet(
  kafka: KafkaClient,
  stateTopic: string,
  opts: { follow?: boolean } = {},
): Promise<{ view: FleetView; incomplete: string[]; stop: () => Promise<void> }> {
  const view = new FleetView();
  const reading: TopicReading = await readTopic(
    kafka,
    stateTopic,
    (message) => {
      if (message.key === null) return;
      if (message.value === null) {
        view.forget(message.key);
        return;
      }
      const parsed = summaryRecordSchema.safeParse(parse(message.value));
      if (parsed.success) view.apply(parsed.data); // barriers are not orders
    },
    { groupPrefix: 'inspect-fleet' },
  );
  const { incomplete } = await reading.caughtUp;
  if (!opts.follow) await reading.stop();
  return { view, incomplete, stop: () => (opts.follow ? reading.stop() : Promise.resolve()) };
}
