// The operator commands the tools send (order.settle): built from a parked order's summary and a resolution,
// signed with the operator's key (src/contract/operator-signature.ts), and written to the commands topic on the
// order's own partition (its state record names it), or printed as the exact kcat line that does the same. The
// command_id is derived from the order's seq and the resolution, so a bulk run repeated after a failure is
// recognised by the worker as the same command (a duplicate), never as a second settle.
import { createHash } from 'node:crypto';
import { signOperatorCommand } from '../contract/operator-signature.ts';
import type { OrderSummary } from '../fleet/order-summary.ts';
import { BestEffortProducer } from '../kafka/best-effort-producer.ts';
import type { KafkaClient } from '../kafka/kafka-client.ts';
import { kcatLine } from './render.ts';

export type Resolution = { resolution: 'adopt'; uniqueReference: string } | { resolution: 'abandon' };

/** One order to settle, with the seq it had when it was listed (undefined: not checked). */
export interface SettleRequest {
  orderId: string;
  seq: number | undefined;
  settle: Resolution;
}

export interface Signer {
  keyId: string;
  privateKeyPem: string;
}

export interface PreparedCommand {
  orderId: string;
  partition: number;
  command: Record<string, string>;
  value: string;
  headers: Record<string, string>;
}

/** Why a request is refused before anything is sent, or null when it may go. */
export function refusalOf(request: SettleRequest, current: OrderSummary | undefined): string | null {
  if (!current) return 'no such order in the state topic';
  if (request.seq !== undefined && current.seq !== request.seq)
    return `its state changed since it was listed (seq ${request.seq} then, ${current.seq} now): look at it again`;
  if (current.phase !== 'parked') return `it is not parked (state ${current.state})`;
  if (request.settle.resolution === 'adopt' && current.state.endsWith('(halted)'))
    return 'an order halted by an internal error can only be abandoned';
  return null;
}

export function settleCommandOf(
  order: OrderSummary,
  settle: Resolution,
  note?: string,
): Record<string, string> {
  const suffix =
    settle.resolution === 'adopt'
      ? `adopt-${createHash('sha256').update(settle.uniqueReference).digest('hex').slice(0, 8)}`
      : 'abandon';
  return {
    type: 'order.settle',
    command_id: `settle-s${order.seq}-${suffix}`,
    order_id: order.order_id,
    resolution: settle.resolution,
    ...(settle.resolution === 'adopt' ? { unique_reference: settle.uniqueReference } : {}),
    ...(note ? { note } : {}),
  };
}

/** The command, its value as it will be sent, and its operator headers (none without a signer). */
export function prepare(
  order: OrderSummary,
  settle: Resolution,
  signer: Signer | undefined,
  now: number,
  note?: string,
): PreparedCommand {
  const command = settleCommandOf(order, settle, note);
  const value = JSON.stringify(command);
  return {
    orderId: order.order_id,
    partition: order.partition,
    command,
    value,
    headers: signer ? signOperatorCommand(signer, { key: order.order_id, value }, now) : {},
  };
}

/** The kcat line that writes the prepared command as is: its key, its partition, its headers. */
export function preparedKcatLine(prepared: PreparedCommand, brokers: string[], topic: string): string {
  const headers = Object.entries(prepared.headers)
    .map(([name, value]) => ` -H '${name}=${value}'`)
    .join('');
  return `${kcatLine(prepared.command, brokers, topic)} -p ${prepared.partition}${headers}`;
}

/** Writes the commands (each to its order's partition); resolves with the ones that failed and why. */
export async function sendPrepared(
  kafka: KafkaClient,
  topic: string,
  commands: readonly PreparedCommand[],
): Promise<Map<string, string>> {
  const failed = new Map<string, string>();
  if (commands.length === 0) return failed;
  const producer = new BestEffortProducer(kafka);
  await producer.connect();
  try {
    await Promise.all(
      commands.map((prepared) =>
        producer
          .send({
            topic,
            key: prepared.orderId,
            value: prepared.value,
            partition: prepared.partition,
            headers: prepared.headers,
          })
          .catch((error: unknown) => void failed.set(prepared.orderId, (error as Error).message)),
      ),
    );
  } finally {
    await producer.disconnect();
  }
  return failed;
}
