// Builds the AsyncAPI 3 document of the worker's Kafka contract, with JSON Schemas generated from the zod
// schemas (the zod schemas are the source; the documents under docs/ are generated and checked in CI): the topics
// with their Kafka bindings, every message with its headers, key, correlation id and one example, and the rules no
// schema states (contract-rules.ts) as the document's description.
import { z } from 'zod';
import { commandAnswers, isAnsweredCommand } from './command-answers.ts';
import {
  orderCancelCommand,
  orderCreateCommand,
  orderSettleCommand,
  orderSubmitDepositCommand,
  orderWebhookHintCommand,
} from './commands.ts';
import { contractRulesMarkdown, contractVersion } from './contract-rules.ts';
import { operatorCommandTypes, operatorHeaders } from './operator-signature.ts';
import {
  commandRejectedEvent,
  kycStatusChangedEvent,
  operatorCommandEvent,
  publishedOrderEvents,
} from './events.ts';
import { commandExamples, eventExamples, type ContractExample } from './examples.ts';

export const commandSchemas = {
  'order.create': orderCreateCommand,
  'order.submit_deposit': orderSubmitDepositCommand,
  'order.cancel': orderCancelCommand,
  'order.webhook_hint': orderWebhookHintCommand,
  'order.settle': orderSettleCommand,
} as const;

export const eventSchemas = {
  ...publishedOrderEvents,
  'exchange.kyc_status_changed': kycStatusChangedEvent,
  'command.rejected': commandRejectedEvent,
  'order.operator_command': operatorCommandEvent,
} as const;

/** The draft-07 JSON Schema that AsyncAPI message payloads are given in. */
export const payloadSchemaFormat = 'application/schema+json;version=draft-07';

export function messageId(type: string): string {
  return type.replace(/[^A-Za-z0-9]+/g, '_');
}

/** JSON Schema (2020-12) of every message, by type: docs/schemas/<type>.json. */
export function jsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [type, schema] of Object.entries({ ...commandSchemas, ...eventSchemas })) {
    out[type] = z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' });
  }
  return out;
}

/** The same schemas in draft-07, as AsyncAPI payloads take them (the parser's JSON Schema format). */
function payloadSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [type, schema] of Object.entries({ ...commandSchemas, ...eventSchemas })) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema as z.ZodType, {
      io: 'input',
      unrepresentable: 'any',
      target: 'draft-7',
    });
    out[type] = rest;
  }
  return out;
}

const traceHeaders = {
  traceparent: {
    type: 'string',
    pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
    description: 'W3C Trace Context',
  },
  tracestate: { type: 'string', description: 'W3C Trace Context' },
  baggage: { type: 'string', description: 'W3C Baggage, when the context carries any' },
};

const forwardingHeaders = {
  'forwarded-from': {
    type: 'string',
    pattern: '^.+:[0-9]+:[0-9]+$',
    description:
      "set by the worker on a command it forwarded to its order's partition: <topic>:<partition>:<offset> where it first arrived; a producer must not set it",
  },
  'forward-hops': {
    type: 'string',
    pattern: '^[1-9][0-9]*$',
    description: 'set by the worker: forwards the copy went through; a producer must not set it',
  },
};

/** The headers that make a command an operator's (operator-signature.ts): required on operator commands. */
const operatorSignatureHeaders = {
  [operatorHeaders.keyId]: {
    type: 'string',
    pattern: '^[A-Za-z0-9._@-]{1,64}$',
    description: 'the operator key that signed the command: a key id of OPERATOR_PUBLIC_KEYS',
  },
  [operatorHeaders.signedAt]: {
    type: 'string',
    pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d{1,3})?Z$',
    description: 'when it was signed (ISO 8601 UTC); refused past OPERATOR_SIGNATURE_MAX_AGE_MS',
  },
  [operatorHeaders.signature]: {
    type: 'string',
    pattern: '^[A-Za-z0-9+/]{86}==$',
    description:
      'base64 Ed25519 signature over "exchange-order-worker operator command v1\\n<key id>\\n<signed at>\\n<message key>\\n" followed by the value exactly as sent',
  },
};

function commandHeaders(type: string): Record<string, unknown> {
  const operator = operatorCommandTypes.includes(type);
  return {
    type: 'object',
    ...(operator ? { required: Object.values(operatorHeaders) } : {}),
    properties: {
      ...traceHeaders,
      ...forwardingHeaders,
      ...(operator ? operatorSignatureHeaders : {}),
    },
    description: operator
      ? 'An operator command: refused (command.rejected, unauthorized) without a valid operator signature. Every header is kept (and forwarded with it); these are the ones the worker reads.'
      : 'Every header of a command is kept (and forwarded with it); these are the ones the worker reads.',
  };
}

const eventHeaders = {
  type: 'object',
  required: ['event-type'],
  properties: {
    'event-type': { type: 'string', description: "the payload's type" },
    ...traceHeaders,
  },
};

const orderKey = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  description: 'the order_id, UTF-8',
};

function answeredByText(type: string): string {
  if (!isAnsweredCommand(type)) return 'Internal: answered by no event of its own.';
  return `Answered by: ${commandAnswers[type].description} (each carries this command_id), or command.rejected.`;
}

function answersText(type: string): string | undefined {
  const commands = Object.entries(commandAnswers)
    .filter(([, answer]) => (answer.answeredBy as readonly string[]).includes(type))
    .map(([command]) => command);
  if (type === 'command.rejected') return 'Answers any command; command_id names it.';
  if (type === 'order.operator_command')
    return `Answers ${commands.join(' or ')} first, as accepted from an operator (who signed it), before its outcome; command_id names it.`;
  return commands.length
    ? `Answers ${commands.join(' or ')} (command_id set) when one of those caused it; otherwise no command_id.`
    : undefined;
}

function example(type: string, given: ContractExample): Record<string, unknown> {
  return { name: messageId(type), summary: given.summary, headers: given.headers, payload: given.payload };
}

export function asyncApiDocument(): Record<string, unknown> {
  const schemas = payloadSchemas();
  const messages: Record<string, unknown> = {};
  for (const [type, given] of Object.entries(commandExamples)) {
    messages[messageId(type)] = {
      name: type,
      title: type,
      summary: answeredByText(type),
      contentType: 'application/json',
      headers: commandHeaders(type),
      correlationId: { location: '$message.payload#/command_id' },
      bindings: { kafka: { key: orderKey, bindingVersion: '0.5.0' } },
      payload: { schemaFormat: payloadSchemaFormat, schema: schemas[type] },
      examples: [example(type, given)],
    };
  }
  for (const [type, given] of Object.entries(eventExamples)) {
    const answers = answersText(type);
    messages[messageId(type)] = {
      name: type,
      title: type,
      ...(answers ? { summary: answers } : {}),
      contentType: 'application/json',
      headers: eventHeaders,
      ...(answers ? { correlationId: { location: '$message.payload#/command_id' } } : {}),
      bindings: {
        kafka: {
          key: {
            type: 'string',
            minLength: 1,
            description: 'the order_id (UTF-8); the event_id for an event that names no order',
          },
          bindingVersion: '0.5.0',
        },
      },
      payload: { schemaFormat: payloadSchemaFormat, schema: schemas[type] },
      examples: [example(type, given)],
    };
  }
  messages['order_state'] = {
    name: 'order.state',
    title: 'order state record (internal)',
    summary:
      "The worker's durable record of an order; not part of the contract, never produced by anyone else.",
    contentType: 'application/json',
    bindings: { kafka: { key: orderKey, bindingVersion: '0.5.0' } },
    payload: { type: 'object', description: 'internal: its fields may change in any release' },
  };
  const ref = (type: string): { $ref: string } => ({ $ref: `#/components/messages/${messageId(type)}` });
  const topicBinding = (cleanup: 'delete' | 'compact') => ({
    kafka: { partitions: 12, topicConfiguration: { 'cleanup.policy': [cleanup] }, bindingVersion: '0.5.0' },
  });
  return {
    asyncapi: '3.1.0',
    info: {
      title: 'exchange-order-worker',
      version: contractVersion,
      description: [
        'Kafka contract of the order orchestration worker: commands in, events out, JSON values, snake_case, key = `order_id`.',
        "Topic names and the partition count are the worker's configuration (`TOPIC_COMMANDS`, `TOPIC_EVENTS`, `TOPIC_STATE`, `TOPIC_PARTITIONS`; the addresses and bindings here are their defaults).",
        "Every event carries the envelope {type, event_id, order_id, seq, occurred_at, command_id?}; `event_id` = `<order_id>:<seq>` (`rejected:<topic>:<partition>:<offset>` and `kyc:<hash>` for the events of seq 0, which are not part of an order's history).",
        contractRulesMarkdown(),
      ].join('\n\n'),
    },
    defaultContentType: 'application/json',
    channels: {
      commands: {
        address: 'exchange.orders.commands',
        title: 'commands (TOPIC_COMMANDS)',
        description:
          'Commands from trading services and operators, keyed by order_id, on any partition (see Keys and partitions). order.webhook_hint is internal: the worker routes verified webhooks to the replica that drives the order through it.',
        messages: Object.fromEntries(Object.keys(commandSchemas).map((t) => [messageId(t), ref(t)])),
        bindings: topicBinding('delete'),
      },
      events: {
        address: 'exchange.orders.events',
        title: 'events (TOPIC_EVENTS)',
        description:
          'Every state change of every order, keyed by order_id, in seq order per order; written in Kafka transactions: consume with isolation.level=read_committed.',
        messages: Object.fromEntries(Object.keys(eventSchemas).map((t) => [messageId(t), ref(t)])),
        bindings: topicBinding('delete'),
      },
      state: {
        address: 'exchange.orders.commands.state',
        title: 'order state (TOPIC_STATE, default <TOPIC_COMMANDS>.state)',
        description:
          "Internal: the worker's compacted record of every order, co-partitioned with the commands topic (same partition count). Never produce to it; records are zstd-compressed at volume.",
        messages: { order_state: { $ref: '#/components/messages/order_state' } },
        bindings: topicBinding('compact'),
      },
    },
    operations: {
      receiveCommands: {
        action: 'receive',
        title: 'the worker consumes commands',
        channel: { $ref: '#/channels/commands' },
        messages: Object.keys(commandSchemas).map((t) => ({
          $ref: `#/channels/commands/messages/${messageId(t)}`,
        })),
        bindings: {
          kafka: {
            groupId: { type: 'string', default: 'exchange-order-worker', description: 'CONSUMER_GROUP' },
            bindingVersion: '0.5.0',
          },
        },
      },
      sendEvents: {
        action: 'send',
        title: 'the worker publishes events',
        channel: { $ref: '#/channels/events' },
        messages: Object.keys(eventSchemas).map((t) => ({
          $ref: `#/channels/events/messages/${messageId(t)}`,
        })),
      },
      keepOrderState: {
        action: 'send',
        title: "the worker writes (and reads back) each order's record",
        channel: { $ref: '#/channels/state' },
        messages: [{ $ref: '#/channels/state/messages/order_state' }],
      },
    },
    components: { messages },
  };
}
