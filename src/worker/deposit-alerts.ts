// The ends of orders that left a deposit unrecorded at the exchange, as the host tells an operator of them once
// their event is committed: a warning naming the order and the transaction, and a metric by end and state
// (worker_deposits_unrecorded_total). The event itself (unrecorded_deposit, machines/order-events.ts) is the record.
import { unrecordedDeposit } from '../../machines/order-events.ts';
import type { EventPayload } from './order-journal.ts';

/** One end event that carries an unrecorded deposit. */
export interface UnrecordedDepositAlert {
  /** The end: completed, refunded, canceled or failed (the event type without `order.`). */
  readonly outcome: string;
  /** unconfirmed, retrying or rejected. */
  readonly state: string;
  readonly txHash: string;
  /** The end's reason, when it has one (canceled, failed). */
  readonly reason: string | undefined;
}

/** The committed events, among `events`, that end an order with a deposit the exchange had not recorded. */
export function unrecordedDepositAlerts(events: readonly EventPayload[]): UnrecordedDepositAlert[] {
  const alerts: UnrecordedDepositAlert[] = [];
  for (const event of events) {
    if (!('unrecorded_deposit' in event) || event.unrecorded_deposit === undefined) continue;
    const deposit = unrecordedDeposit.safeParse(event.unrecorded_deposit);
    if (!deposit.success) continue;
    const reason: unknown = 'reason' in event ? event.reason : undefined;
    alerts.push({
      outcome: event.type.replace(/^order\./, ''),
      state: deposit.data.state,
      txHash: deposit.data.tx_hash,
      reason: typeof reason === 'string' ? reason : undefined,
    });
  }
  return alerts;
}
