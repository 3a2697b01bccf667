// Everything a handler may touch, built once per sandbox instance: the world (config indexes), the sandbox clock,
// the seeded PRNG, and the stateful parts (quotes, orders, throttles, faults, late landings, webhooks).
import type { SandboxClock } from './clock.ts';
import type { SandboxConfig } from '../config.ts';
import type { FaultBoard } from './faults.ts';
import type { LateLandings } from './late-landings.ts';
import type { OrderStore } from './order-store.ts';
import type { QuoteBook } from './quote-book.ts';
import type { SeededRandom } from './seeded-random.ts';
import type { Throttles } from '../http/throttles.ts';
import type { WebhookDispatcher } from './webhook-dispatcher.ts';
import type { World } from './world.ts';

export interface SandboxContext {
  config: SandboxConfig;
  world: World;
  clock: SandboxClock;
  random: SeededRandom;
  quotes: QuoteBook;
  orders: OrderStore;
  throttles: Throttles;
  faults: FaultBoard;
  /** Requests the late_landing fault holds back, and when each lands. */
  landings: LateLandings;
  webhooks: WebhookDispatcher;
  /** Real-time wait (latency, actionable quote production) that ends early when the sandbox closes. */
  sleep(ms: number): Promise<void>;
}
