// Finished orders leave the state topic after FINISHED_ORDER_RETENTION_MS: the owner of their partition writes a
// tombstone (null value) for the order's key through the transactional writer, under the order's lease like every
// other write (fenced: a replica that lost the lease or the partition writes nothing), then forgets the order.
// Until then the store keeps a compact form that answers late commands (a replayed order.create is skipped). Before
// the tombstone, the order's home (Redis, kept at least 30 days) is marked retired: a create replayed after the
// tombstone (the commands topic may keep it longer than the state topic keeps the order) is refused by the home
// instead of starting the order again. An order whose home cannot be marked stays until a later sweep.
import type { OrderStateStore } from '../kafka/order-state-store.ts';
import type { TransactionalWriter } from '../kafka/transactional-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { OrderLeases } from './ports.ts';

export interface StateRetentionOptions {
  store: Pick<OrderStateStore, 'expired' | 'get' | 'forget'>;
  writer: Pick<TransactionalWriter, 'write'>;
  leases: OrderLeases;
  stateTopic: string;
  retentionMs: number;
  logger: Logger;
  /** Where orders live (order-homes.ts): a home is marked retired before its order's tombstone. */
  homes?: { retire(orderId: string, partition: number): Promise<void> };
  /** Told of each tombstoned order (the composition root drops its webhook route). */
  onTombstoned?: (order: { orderId: string; uniqueReference: string | null }) => void;
}

/** How often the sweep runs: a tenth of the retention, between 1 s and 10 min. */
export function retentionSweepIntervalMs(retentionMs: number): number {
  return Math.min(600_000, Math.max(1_000, Math.floor(retentionMs / 10)));
}

export class StateRetention {
  private readonly opts: StateRetentionOptions;
  private readonly logger: Logger;
  private running: Promise<number> | undefined;
  tombstoned = 0;

  constructor(opts: StateRetentionOptions) {
    this.opts = opts;
    this.logger = opts.logger.child({ component: 'state-retention' });
  }

  /** Tombstones the finished orders past their retention; one sweep at a time. Resolves to how many. */
  sweep(now: number): Promise<number> {
    this.running ??= this.sweepOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepOnce(now: number): Promise<number> {
    let count = 0;
    for (const order of this.opts.store.expired(now - this.opts.retentionMs)) {
      // Held elsewhere (a late command being answered, or the partition moved): the next sweep tries again. A
      // lease lost meanwhile needs no handler: the write's guard (isValid) refuses the tombstone.
      const grant = await this.opts.leases.acquire(order.orderId, order.fence, () => {}).catch(() => null);
      if (!grant) continue;
      try {
        const current = this.opts.store.get(order.orderId);
        // Written again meanwhile (a late command was refused, which restarts its retention), or gone.
        if (!current?.terminal || current.rev !== order.rev || current.fence !== order.fence) continue;
        await this.opts.homes?.retire(order.orderId, order.partition);
        const written = await this.opts.writer.write(
          [{ topic: this.opts.stateTopic, key: order.orderId, partition: order.partition, value: null }],
          [],
          () => this.opts.leases.isValid(order.orderId),
        );
        if (!written) continue;
        this.opts.store.forget(order.orderId);
        this.opts.onTombstoned?.({ orderId: order.orderId, uniqueReference: order.uniqueReference });
        count++;
      } catch (error) {
        this.logger.warn(
          { orderId: order.orderId, err: { message: (error as Error).message } },
          'could not tombstone a finished order; the next sweep tries again',
        );
      } finally {
        await this.opts.leases.release(order.orderId).catch(() => {});
      }
    }
    this.tombstoned += count;
    if (count) this.logger.info({ count }, 'finished orders past their retention tombstoned');
    return count;
  }
}
