// Test harness for the order machine: stub actors answer from per-actor scripts (an empty script leaves the call
// pending, so a test can look at the state while a call is in flight), the clock is XState's SimulatedClock, and every
// emitted domain event is captured in order.
import { createActor, SimulatedClock } from 'xstate';
import type { Actor } from 'xstate';
import type { ExchangeFailure, ExchangeOrderView, FailureAction } from '../../../machines/domain.ts';
import { provideOrderActors } from '../../../machines/order-machine.ts';
import type { OrderMachine } from '../../../machines/order-machine.ts';
import { toPersisted, restoreInput } from '../../../machines/order-persistence.ts';
import type { PersistedOrder } from '../../../machines/order-persistence.ts';
import type {
  OrderActorName,
  OrderActorTypes,
  OrderCreateInput,
  OrderInput,
} from '../../../machines/order-types.ts';
import type { OrderDomainEvent } from '../../../machines/order-events.ts';

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');

type Reply<K extends OrderActorName> = (
  input: OrderActorTypes[K]['input'],
  now: number,
) => OrderActorTypes[K]['output'] | Promise<OrderActorTypes[K]['output']>;

export type Script = { [K in OrderActorName]?: Array<Reply<K>> };
/** Replies used whenever an actor's script is empty (instead of leaving the call in flight). */
export type Always = { [K in OrderActorName]?: Reply<K> };

export interface HarnessOptions {
  /** Share one clock between several orders (e.g. two replicas competing for a quote slot). */
  readonly clock?: SimulatedClock;
  readonly always?: Always;
}
interface Call<K extends OrderActorName> {
  readonly input: OrderActorTypes[K]['input'];
  readonly at: number;
  /** What the runtime would have stored just before making the call. */
  readonly persisted: PersistedOrder;
}
type Calls = { [K in OrderActorName]: Array<Call<K>> };

type WithoutAt<T> = T extends unknown ? Omit<T, 'at'> : never;

/** Answers with `output` stamped with the clock. */
export function ok<K extends OrderActorName>(output: WithoutAt<OrderActorTypes[K]['output']>): Reply<K> {
  return (_input, now) => ({ ...output, at: now }) as unknown as OrderActorTypes[K]['output'];
}

export function failure(action: FailureAction, extra: Partial<ExchangeFailure> = {}): ExchangeFailure {
  return {
    kind: 'exchange_failure',
    action,
    code: extra.code ?? action,
    message: extra.message ?? `${action} failure`,
    ...extra,
  };
}

/** Throws an ExchangeFailure stamped with the clock. */
export function fails<K extends OrderActorName>(
  action: FailureAction,
  extra: Partial<ExchangeFailure> = {},
): Reply<K> {
  return (_input, now) => {
    // ExchangeFailure is a plain, serialisable object by design (machines/domain.ts), thrown as the runtime throws it.
    // eslint-disable-next-line @typescript-eslint/only-throw-error
    throw { ...failure(action, extra), at: now };
  };
}

export function exchangeOrder(overrides: Partial<ExchangeOrderView> = {}): ExchangeOrderView {
  return {
    uniqueReference: 'EXREF1',
    status: 'INITIAL',
    createdOn: new Date(T0).toISOString(),
    side: 'BUY',
    depositAmount: '1.00000000',
    withdrawAmount: '0.05000000',
    depositCurrency: 'ETH',
    withdrawCurrency: 'BTC',
    depositAddress: '0xdeposit',
    depositAddressExtraId: '',
    withdrawAddress: 'bc1qwithdraw',
    withdrawAddressExtraId: '',
    refundAddress: '',
    refundAddressExtraId: '',
    paymentWindowMinutes: 30,
    fixedRateDeadline: null,
    rate: '0.05000000',
    depositTransaction: '',
    withdrawTransaction: '',
    refundTransaction: '',
    ...overrides,
  };
}

export function orderInput(overrides: Partial<OrderCreateInput> = {}): OrderCreateInput {
  return {
    orderId: 'order-1',
    mode: 'defi',
    depositCurrency: 'ETH',
    withdrawCurrency: 'BTC',
    depositAmount: '1.00000000',
    withdrawAddress: 'bc1qwithdraw',
    now: T0,
    seed: 42,
    ...overrides,
  };
}

export const quoteReply =
  (rateId = 'rate-1', expiresInMs = 60_000): Reply<'requestQuote'> =>
  (_input, now) => ({
    rateId,
    rate: '0.05',
    expiresAt: now + expiresInMs,
    depositAmount: '1.00000000',
    withdrawAmount: '0.05000000',
    at: now,
  });

/**
 * What the runtime's Redis does: one cooldown per identical request (mode, pair, amounts), whichever order or
 * replica asks. Share one instance between harnesses to share the cooldown.
 */
export function quoteSlots(): Reply<'acquireQuoteSlot'> & { readonly grants: number[] } {
  const blockedUntil = new Map<string, number>();
  const grants: number[] = [];
  const reply = (input: OrderActorTypes['acquireQuoteSlot']['input'], now: number) => {
    const key = [input.mode, input.pair, input.depositAmount, input.withdrawAmount].join('|');
    const until = blockedUntil.get(key);
    if (until !== undefined && now < until) return { granted: false as const, retryAt: until, at: now };
    blockedUntil.set(key, now + input.cooldownMs);
    grants.push(now);
    return { granted: true as const, at: now };
  };
  return Object.assign(reply, { grants });
}

export const granted: Reply<'acquireQuoteSlot'> = (_input, now) => ({ granted: true, at: now });

/** The address and chain pairing check passed. */
const addressChecked: Reply<'checkAddress'> = (_input, now) => ({ ok: true, at: now });

/** Lets every pending promise (stub answers, done events, the next invoke) run to completion. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class OrderHarness {
  readonly clock: SimulatedClock;
  readonly emitted: OrderDomainEvent[] = [];
  readonly calls: Calls = {
    checkAddress: [],
    acquireQuoteSlot: [],
    requestQuote: [],
    preScreen: [],
    createOrder: [],
    findExistingOrder: [],
    adoptOrder: [],
    submitDeposit: [],
    fetchOrder: [],
  };
  readonly actor: Actor<OrderMachine>;
  private readonly script: Script;

  private readonly always: Always;

  constructor(input: OrderInput, script: Script = {}, options: HarnessOptions = {}) {
    this.script = script;
    this.always = options.always ?? {};
    this.clock = options.clock ?? new SimulatedClock();
    if (!options.clock) this.clock.set(input.now);
    // Provided the way the runtime provides its actors: plain async functions.
    const machine = provideOrderActors({
      checkAddress: this.stub('checkAddress'),
      acquireQuoteSlot: this.stub('acquireQuoteSlot'),
      requestQuote: this.stub('requestQuote'),
      preScreen: this.stub('preScreen'),
      createOrder: this.stub('createOrder'),
      findExistingOrder: this.stub('findExistingOrder'),
      adoptOrder: this.stub('adoptOrder'),
      submitDeposit: this.stub('submitDeposit'),
      fetchOrder: this.stub('fetchOrder'),
    });
    this.actor = createActor(machine, { input, clock: this.clock });
    this.actor.on('*', (event) => this.emitted.push(event));
  }

  static async start(
    input: OrderInput,
    script: Script = {},
    options: HarnessOptions = {},
  ): Promise<OrderHarness> {
    const harness = new OrderHarness(input, script, options);
    harness.actor.start();
    await settle();
    return harness;
  }

  /** Restores a stored order into a fresh actor at `now` (as another replica would). */
  static async restore(
    persisted: PersistedOrder,
    now: number,
    script: Script = {},
    options: HarnessOptions = {},
  ): Promise<OrderHarness> {
    const json = JSON.parse(JSON.stringify(persisted)) as PersistedOrder;
    return OrderHarness.start(restoreInput(json, now), script, options);
  }

  private stub<K extends OrderActorName>(name: K) {
    return async (
      input: OrderActorTypes[K]['input'],
      signal: AbortSignal,
    ): Promise<OrderActorTypes[K]['output']> => {
      const now = this.clock.now();
      (this.calls[name] as Array<Call<K>>).push({
        input,
        at: now,
        persisted: toPersisted(this.actor.getSnapshot()),
      });
      // The pairing check passes unless a test scripts it: most tests are about what follows it.
      const reply =
        this.script[name]?.shift() ??
        this.always[name] ??
        (name === 'checkAddress' ? (addressChecked as unknown as Reply<K>) : undefined);
      if (reply) return reply(input, now);
      // No scripted answer: the call stays in flight until the test answers it.
      return new Promise<OrderActorTypes[K]['output']>((resolve, reject) => {
        // A call whose state was left (e.g. canceled) is forgotten, as the runtime would abort it.
        signal.addEventListener('abort', () => {
          const index = this.inFlight.findIndex((call) => call.signal === signal);
          if (index >= 0) this.inFlight.splice(index, 1);
        });
        this.inFlight.push({
          signal,
          name,
          answer: (late: Reply<OrderActorName>) => {
            try {
              resolve((late as unknown as Reply<K>)(input, this.clock.now()));
            } catch (error) {
              // Rejects with what the reply threw (an ExchangeFailure is a plain object by design).
              // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
              reject(error);
            }
          },
        });
      });
    };
  }

  private readonly inFlight: Array<{
    name: OrderActorName;
    signal: AbortSignal;
    answer: (reply: Reply<OrderActorName>) => void;
  }> = [];

  /** Answers the oldest call in flight to `name`, or scripts the answer of its next call. */
  async answer<K extends OrderActorName>(name: K, ...replies: Array<Reply<K>>): Promise<void> {
    for (const reply of replies) {
      const index = this.inFlight.findIndex((call) => call.name === name);
      if (index >= 0) {
        const [call] = this.inFlight.splice(index, 1);
        call?.answer(reply as unknown as Reply<OrderActorName>);
      } else {
        const queues = this.script as Record<OrderActorName, unknown[] | undefined>;
        queues[name] = [...(queues[name] ?? []), reply];
      }
      await settle();
    }
  }

  /** Calls still waiting for an answer. */
  pending(): OrderActorName[] {
    return this.inFlight.map((call) => call.name);
  }

  get snapshot() {
    return this.actor.getSnapshot();
  }

  get state(): string {
    return stateKey(this.snapshot.value);
  }

  get context() {
    return this.snapshot.context;
  }

  types(): string[] {
    return this.emitted.map((event) => event.type);
  }

  persisted(): PersistedOrder {
    return toPersisted(this.snapshot);
  }

  async send(event: Parameters<Actor<OrderMachine>['send']>[0]): Promise<void> {
    this.actor.send(event);
    await settle();
  }

  async advance(ms: number): Promise<void> {
    this.clock.increment(ms);
    await settle();
  }

  stop(): void {
    this.actor.stop();
  }
}

/** "quoting.coolingDown", "open.deposit.awaiting+open.exchange.monitoring", "completed". */
export function stateKey(value: unknown, prefix = ''): string {
  if (typeof value === 'string') return prefix + value;
  const entries = Object.entries(value as Record<string, unknown>);
  return entries.map(([key, child]) => stateKey(child, `${prefix}${key}.`)).join('+');
}
