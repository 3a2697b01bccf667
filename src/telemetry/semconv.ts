// Attribute names of the OpenTelemetry semantic conventions used by the worker. Stable names come from the
// package; incubating ones (messaging) are copied here, as the package's README advises, so that a rename upstream
// is a deliberate change here rather than a surprise in a minor release.
export {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_INSTANCE_ID,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';

export const ATTR_MESSAGING_SYSTEM = 'messaging.system' as const;
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type' as const;
export const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name' as const;
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name' as const;
export const ATTR_MESSAGING_DESTINATION_PARTITION_ID = 'messaging.destination.partition.id' as const;
export const ATTR_MESSAGING_CONSUMER_GROUP_NAME = 'messaging.consumer.group.name' as const;
export const ATTR_MESSAGING_KAFKA_MESSAGE_KEY = 'messaging.kafka.message.key' as const;
export const ATTR_MESSAGING_KAFKA_OFFSET = 'messaging.kafka.offset' as const;
export const ATTR_MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count' as const;
export const ATTR_URL_TEMPLATE = 'url.template' as const;

/** Our own attributes: what makes one order's whole life findable. */
export const ATTR_ORDER_ID = 'order.id' as const;
export const ATTR_EXCHANGE_UNIQUE_REFERENCE = 'exchange.unique_reference' as const;
