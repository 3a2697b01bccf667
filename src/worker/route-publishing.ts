// What the owner of a partition publishes about its orders, and when: where each order lives (the order index, so
// that another replica routes its webhooks here) and its claim on its exchange order again (a Redis that restarted
// empty gets both back as partitions are read; the claim guards adoption across partitions). Best effort: a route
// not recorded only sends that order's webhooks to the poll.
// Reading a state topic of 100k orders records 100k routes: a bounded number in flight, the rest queued, so they
// never crowd out (time out) the lease and budget commands that share the connection. While a partition is being
// restored they wait for it: the restore's own Redis commands (a lease per open order) come first, and the routes
// follow at once after.
import pLimit from 'p-limit';
import type { Logger } from '../telemetry/logger.ts';
import type { OrderRoutes } from './webhook-routing.ts';

/** The order index as route publishing uses it (src/redis/order-index.ts). */
export interface RouteIndex {
  put(uniqueReference: string, orderId: string, partition: number): Promise<void>;
  locate(uniqueReference: string): Promise<{ orderId: string; partition?: number } | null>;
  forget(uniqueReference: string): Promise<void>;
}

/** The claims of exchange orders (src/redis/reference-claims.ts): true when the claim is this order's. */
export interface RouteClaims {
  reassert(uniqueReference: string, orderId: string): Promise<boolean>;
}

export interface RoutePublishingOptions {
  index: RouteIndex;
  claims: RouteClaims;
  logger: Logger;
  /** An exchange order this replica's order published is claimed by another order (counted by the caller). */
  onClaimedElsewhere: () => void;
  /** Routes written at once (the rest queue). */
  maxInFlight?: number;
  /** How often held routes look again whether the restore is over. */
  holdRetryMs?: number;
}

type Route = [reference: string, orderId: string, partition: number];

export class RoutePublishing {
  /** The routes as the state store records them and webhook routing reads them. */
  readonly routes: OrderRoutes;
  readonly #opts: RoutePublishingOptions;
  readonly #log: Logger;
  readonly #writes: ReturnType<typeof pLimit>;
  #restoring: () => boolean = () => false;
  #held: Route[] = [];

  constructor(opts: RoutePublishingOptions) {
    this.#opts = opts;
    this.#log = opts.logger.child({ component: 'order-routes' });
    this.#writes = pLimit(opts.maxInFlight ?? 32);
    this.routes = {
      record: (reference, orderId, partition) => this.#record([reference, orderId, partition]),
      locate: async (reference) => {
        const found = await opts.index.locate(reference);
        return found?.partition === undefined
          ? undefined
          : { orderId: found.orderId, partition: found.partition };
      },
      forget: (reference) => void opts.index.forget(reference).catch(() => {}),
    };
  }

  /**
   * Routes recorded while `restoring()` is true are held until it is false (given once the order host exists; till
   * then nothing is held).
   */
  holdWhile(restoring: () => boolean): void {
    this.#restoring = restoring;
  }

  /** Routes held back or being written: the restore's follow-up is not over. */
  get busy(): boolean {
    return this.#held.length > 0 || this.#writes.activeCount + this.#writes.pendingCount > 0;
  }

  #record(route: Route): void {
    if (!this.#restoring() && this.#held.length === 0) {
      this.#publish(route);
      return;
    }
    this.#held.push(route);
    if (this.#held.length === 1) this.#releaseLater();
  }

  #releaseLater(): void {
    setTimeout(() => this.#release(), this.#opts.holdRetryMs ?? 100).unref();
  }

  #release(): void {
    if (this.#restoring()) {
      this.#releaseLater();
      return;
    }
    const held = this.#held;
    this.#held = [];
    for (const route of held) this.#publish(route);
  }

  #publish([reference, orderId, partition]: Route): void {
    void this.#writes(async () => {
      await this.#opts.index
        .put(reference, orderId, partition)
        .catch((error: unknown) =>
          this.#log.debug({ orderId, err: { message: (error as Error).message } }, 'route not recorded'),
        );
      await this.#opts.claims.reassert(reference, orderId).then(
        (ours) => {
          if (ours) return;
          // This order published the exchange order (its record names it), yet another order claims it: both
          // may have handed its deposit address out. Nothing is undone automatically (docs/operations.md).
          this.#opts.onClaimedElsewhere();
          this.#log.error(
            { orderId, uniqueReference: reference },
            'exchange order claimed by another order: two orders may have published it (worker_create_doubts{kind="route_claimed_elsewhere"}; see docs/operations.md)',
          );
        },
        () => {},
      );
    });
  }
}
