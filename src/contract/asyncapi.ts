// Builds the AsyncAPI 3 document of the worker's Kafka contract, with JSON Schemas generated from the zod
// schemas (the zod schemas are the source; the documents under docs/ are generated and checked in CI).
import { z } from 'zod';
import {
  orderCancelCommand,
  orderCreateCommand,
  orderSettleCommand,
  orderSubmitDepositCommand,
  orderWebhookHintCommand,
} from './commands.ts';
import {
  commandRejectedEvent,
  kycStatusChangedEvent,
  operatorCommandEvent,
  publishedOrderEvents,
} from './events.ts';

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

function messageId(type: string): string {
  return type.replace(/[^A-Za-z0-9]+/g, '_');
}

export function jsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [type, schema] of Object.entries({ ...commandSchemas, ...eventSchemas })) {
    out[type] = z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' });
  }
  return out;
}

export function asyncApiDocument(): Record<string, unknown> {
  const schemas = jsonSchemas();
  const messages: Record<string, unknown> = {};
  for (const type of [...Object.keys(commandSchemas), ...Object.keys(eventSchemas)]) {
    messages[messageId(type)] = {
      name: type,
      title: type,
      contentType: 'application/json',
      bindings: { kafka: { key: { type: 'string', description: 'order_id' } } },
      payload: schemas[type],
    };
  }
  const ref = (type: string): { $ref: string } => ({ $ref: `#/components/messages/${messageId(type)}` });
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'exchange-order-worker',
      version: '1.0.0',
      description:
        'Kafka contract of the order orchestration worker. Commands in (key = order_id), events out (key = order_id). ' +
        'Events carry {type, event_id, order_id, seq, occurred_at}; seq is strictly increasing per order with no gap or repeat; ' +
        'event_id = `${order_id}:${seq}`. command.rejected for a command naming no existing order has seq 0. ' +
        'order.webhook_hint is internal (the worker routes verified webhooks to the owning replica through it).',
    },
    defaultContentType: 'application/json',
    channels: {
      commands: {
        address: '${TOPIC_COMMANDS} (default exchange.orders.commands)',
        description: 'Commands from trading services, keyed by order_id.',
        messages: Object.fromEntries(Object.keys(commandSchemas).map((t) => [messageId(t), ref(t)])),
      },
      events: {
        address: '${TOPIC_EVENTS} (default exchange.orders.events)',
        description:
          'Every state change of every order, keyed by order_id; written in Kafka transactions (read_committed).',
        messages: Object.fromEntries(Object.keys(eventSchemas).map((t) => [messageId(t), ref(t)])),
      },
    },
    operations: {
      receiveCommands: {
        action: 'receive',
        channel: { $ref: '#/channels/commands' },
        messages: Object.keys(commandSchemas).map((t) => ({
          $ref: `#/channels/commands/messages/${messageId(t)}`,
        })),
      },
      sendEvents: {
        action: 'send',
        channel: { $ref: '#/channels/events' },
        messages: Object.keys(eventSchemas).map((t) => ({
          $ref: `#/channels/events/messages/${messageId(t)}`,
        })),
      },
    },
    components: { messages },
  };
}
