// The rules of the Kafka contract that no schema states: keys and partitions, headers, deduplication, ordering,
// versioning, and which events answer which command. Written once, here: the AsyncAPI document (info.description)
// and the README's "Kafka contract" section are generated from these texts (scripts/generate-contract-docs.ts), so
// the two say the same. Markdown.
import { commandAnswers } from './command-answers.ts';

/** The contract's version (docs/asyncapi.json info.version): see the versioning rule. */
export const contractVersion = '2.0.0';

/** Commands an order remembers for deduplication (its state record keeps the last this many command ids). */
export const rememberedCommandIds = 200;

const answers = Object.entries(commandAnswers)
  .map(([type, answer]) => `  - \`${type}\`: ${answer.description}.`)
  .join('\n');

export const contractRules: ReadonlyArray<{ title: string; text: string }> = [
  {
    title: 'Keys and partitions',
    text: [
      'Every command and every event is keyed by its `order_id` (UTF-8 bytes). A producer may use any partitioner:',
      "a command that arrives on another partition than its order's is forwarded there by the worker, in the Kafka",
      'transaction that commits its arrival, with the same value (so the same `command_id`) and headers. The',
      "partition the Java client's default partitioner picks for the key (murmur2, as kafkajs's default and",
      "librdkafka's `partitioner=murmur2_random`) is the home of every new order and costs no forward; librdkafka's",
      'default `consistent_random` (kcat, confluent-kafka for Go, Python, .NET) costs one. Never choose a partition by',
      "hand for a command. The state topic is the worker's own: never produce to it.",
    ].join('\n'),
  },
  {
    title: 'Headers',
    text: [
      '- Commands: optional `traceparent` and `tracestate` (W3C Trace Context): the command is handled in that trace.',
      '  Other headers are kept and ignored. `forwarded-from` (`<topic>:<partition>:<offset>` where the command first',
      '  arrived) and `forward-hops` are set by the worker on the copies it forwards; a producer must not set them.',
      '- Operator commands (`order.settle`): `operator-key-id`, `operator-signed-at` (ISO 8601 UTC) and',
      '  `operator-signature` (base64 Ed25519, by a key of `OPERATOR_PUBLIC_KEYS`, over',
      '  `exchange-order-worker operator command v1\\n<key id>\\n<signed at>\\n<message key>\\n` and the value exactly',
      '  as sent), required: without them, or signed by another key, over other bytes or longer ago than',
      '  `OPERATOR_SIGNATURE_MAX_AGE_MS`, the command is refused (`command.rejected`, reason `unauthorized`). A forward',
      "  keeps them and changes neither key nor value: the signature is checked on the order's partition.",
      "- Events: `event-type` (the payload's `type`), always; `traceparent` and `tracestate` of the worker span that",
      '  wrote the event whenever the work that caused it had a trace context (a command that carried one, or any',
      '  work while the worker exports traces); `baggage` when that context carried W3C baggage.',
    ].join('\n'),
  },
  {
    title: 'Deduplication',
    text: [
      `A command is identified by its \`order_id\` and \`command_id\`. The same \`command_id\` again with the same`,
      'content (every field but `command_id`, compared as canonical JSON: key order and whitespace do not matter) is',
      'a duplicate: its offset is committed and nothing is published. The same `command_id` with other content is',
      'refused (`command.rejected`, reason `duplicate_conflict`). An order remembers its last',
      `${rememberedCommandIds} command ids for as long as its record exists: while it is open and for`,
      '`FINISHED_ORDER_RETENTION_MS` (7 days by default) after it finished. An `order.create` is also recognised by',
      'its content alone, under any `command_id`: the same create again is a duplicate; another create of the same',
      '`order_id` is `order_exists`, and so is any create of an order that finished and left the state topic (for at',
      'least 30 days more). Consumers deduplicate events on `event_id`: delivery is at least once.',
    ].join('\n'),
  },
  {
    title: 'Ordering',
    text: [
      'Events of one order are published on one partition (key = `order_id`) in `seq` order: 1, 2, 3, … with no gap',
      'and no repeat; read them with `isolation.level=read_committed` (they are written in Kafka transactions).',
      'Nothing orders the events of two orders. Commands of one order are applied in the order they reach its home',
      'partition: the commands one producer sends through one partitioner keep the order it sent them in;',
      'commands of one order sent by two producers (or two partitioners) at once have no order between them.',
    ].join('\n'),
  },
  {
    title: 'Versioning',
    text: [
      `The contract is versioned as a whole (\`info.version\` of docs/asyncapi.json, now ${contractVersion}); a change`,
      'that adds something is a minor version, one that removes, renames or retypes something a major version,',
      'announced beforehand. A consumer must ignore fields it does not know, skip event types it does not know,',
      'accept new values of the open strings (`reason`, `code`, `status`, `previous_status`) and of',
      '`command.rejected` `reason`, and read an optional field as possibly absent. Commands are strict (an unknown',
      'field is `malformed`, so a typo in a money-moving command is never ignored): a producer may send a new field or',
      'command type only once every replica of the worker runs a version that documents it; until then it is',
      'refused, never half-applied.',
    ].join('\n'),
  },
  {
    title: 'Which events answer which command',
    text: [
      "An event that answers a command carries that command's `command_id` in its envelope; an event no command",
      'caused (a status the exchange moved to, a lapsed payment window, a KYC notice) carries none.',
      '`command.rejected` answers any command and names it in its own `command_id` field; `order.operator_command`',
      'records an accepted operator command (who signed it) in its own `command_id` field, before its outcome.',
      answers,
    ].join('\n'),
  },
];

/** The rules as one markdown text, each under a bold title. */
export function contractRulesMarkdown(): string {
  return contractRules
    .map(({ title, text }) => (text.startsWith('- ') ? `**${title}.**\n\n${text}` : `**${title}.** ${text}`))
    .join('\n\n');
}
