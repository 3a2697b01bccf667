// Model-based test of the order machine with @xstate/graph v3 (getShortestPaths and getAdjacencyMap: its
// createTestModel refuses machines that invoke actors): the pure traversal explores every reachable
// (abstracted) state under a catalogue of events (commands, hints, every actor's answers and failures, timers); each
// edge is then replayed on a running actor (stub actors that never answer, a SimulatedClock never advanced), checking
// that the actor lands where the model says and recording, through inspection, every transition the actor takes.
// Every stored state is also restored through the `restoring` router. Coverage must be total.
import { __unsafe_getAllOwnEventDescriptors, createActor, fromPromise, SimulatedClock } from 'xstate';
import type { ActorLogic, AnyTransitionDefinition, InspectionEvent, SnapshotFrom } from 'xstate';
import { getAdjacencyMap, getShortestPaths, getStateNodes } from '@xstate/graph';
import type { AdjacencyValue } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import type { ExchangeFailure, ExchangeOrderView, FailureAction } from '../../../machines/domain.ts';
import { orderMachine } from '../../../machines/order-machine.ts';
import { restoreInput, resumeKeyOf, toPersisted } from '../../../machines/order-persistence.ts';
import type {
  OrderActorName,
  OrderActorTypes,
  OrderCreateInput,
  OrderEvent,
  OrderInput,
} from '../../../machines/order-types.ts';
import { T0, exchangeOrder, orderInput } from './order-harness.ts';

/** A stub that never answers: the model's events stand in for its answers. */
const never = <K extends OrderActorName>() =>
  fromPromise<OrderActorTypes[K]['output'], OrderActorTypes[K]['input']>(() => new Promise(() => {}));
const machine = orderMachine.provide({
  actors: {
    checkAddress: never<'checkAddress'>(),
    acquireQuoteSlot: never<'acquireQuoteSlot'>(),
    requestQuote: never<'requestQuote'>(),
    preScreen: never<'preScreen'>(),
    createOrder: never<'createOrder'>(),
    findExistingOrder: never<'findExistingOrder'>(),
    adoptOrder: never<'adoptOrder'>(),
    submitDeposit: never<'submitDeposit'>(),
    fetchOrder: never<'fetchOrder'>(),
  },
});
type OrderSnapshot = SnapshotFrom<typeof machine>;
/** The machine as @xstate/graph's traversal sees it (it never emits, so the emitted-event type is irrelevant). */
const logic = machine as unknown as ActorLogic<OrderSnapshot, OrderEvent, OrderInput>;

// Small bounds keep the abstract state space finite and small.
const modelConfig = { maxAttempts: 2, maxRequotes: 1, backoff: { baseMs: 1_000, maxMs: 1_000, factor: 2 } };
const deadline = new Date(T0 + 30 * 60_000).toISOString();

function failure(action: FailureAction): ExchangeFailure {
  return { kind: 'exchange_failure', action, code: action, message: `${action} failure` };
}
function view(status: string): ExchangeOrderView {
  return exchangeOrder({ status, fixedRateDeadline: deadline });
}
const done = (id: string, output: unknown) =>
  ({ type: `xstate.done.actor.${id}`, output }) as unknown as OrderEvent;
const error = (id: string, action: FailureAction, extra: Partial<ExchangeFailure> = {}) =>
  ({ type: `xstate.error.actor.${id}`, error: { ...failure(action), ...extra } }) as unknown as OrderEvent;

/**
 * The events offered to a state: for each event type it has transitions for, the catalogue's variants (timers,
 * which carry nothing, as they are), as @xstate/graph's default does.
 */
function eventsFor(snapshot: OrderSnapshot): OrderEvent[] {
  if (snapshot.status !== 'active') return [];
  const catalogue = eventCatalogue(snapshot);
  const ownTypes = __unsafe_getAllOwnEventDescriptors(snapshot) as string[];
  return ownTypes.flatMap((type) => {
    const variants = catalogue.filter((event) => event.type === type);
    return variants.length > 0 ? variants : [{ type } as unknown as OrderEvent];
  });
}

/** Every event the environment can produce: commands, hints, each actor's answers and failures. */
function eventCatalogue(snapshot: OrderSnapshot): OrderEvent[] {
  const at = snapshot.context.now + 1_000;
  return [
    { type: 'CANCEL', at },
    { type: 'SUBMIT_DEPOSIT', txHash: '0xtx', at },
    { type: 'WEBHOOK_HINT', status: 'COMPLETED', at },
    // An open status ahead of INITIAL waits for the hints after it; INITIAL itself is already confirmed.
    { type: 'WEBHOOK_HINT', status: 'PAID', at },
    { type: 'WEBHOOK_HINT', status: 'INITIAL', at },
    { type: 'LISTED', status: 'COMPLETED', at },
    { type: 'LISTED', status: 'INITIAL', at },
    { type: 'SETTLE', resolution: 'adopt', uniqueReference: 'ADOPT1', at },
    { type: 'SETTLE', resolution: 'abandon', at },
    done('checkAddress', { ok: true, at }),
    done('checkAddress', {
      ok: false,
      code: 'withdraw_network_mismatch',
      message: 'not on that network',
      at,
    }),
    error('checkAddress', 'backoff'),
    error('checkAddress', 'fatal'),
    done('preScreen', { status: 'success', message: '', at }),
    done('preScreen', { status: 'failed', message: 'flagged', at }),
    error('preScreen', 'backoff'),
    error('preScreen', 'fatal'),
    done('acquireQuoteSlot', { granted: true, at }),
    done('acquireQuoteSlot', { granted: false, retryAt: at + 15_000, at }),
    error('acquireQuoteSlot', 'backoff'),
    error('acquireQuoteSlot', 'fatal'),
    done('requestQuote', { rateId: 'rate-1', rate: '0.05', expiresAt: at + 60_000, at }),
    error('requestQuote', 'throttled'),
    error('requestQuote', 'fatal'),
    done('createOrder', { order: view('INITIAL'), reused: false, at }),
    error('createOrder', 'requote'),
    error('createOrder', 'unknown_outcome'),
    error('createOrder', 'backoff'),
    error('createOrder', 'mode_mismatch'),
    // The POST made an exchange order another order holds (its claim said so): what only a CeFi lookup acts on.
    ...(snapshot.context.request.mode === 'defi'
      ? []
      : [
          error('createOrder', 'unknown_outcome', {
            code: 'created_order_claimed_elsewhere',
            evidence: { uniqueReference: 'HELD1', claim: 'another_order', created: true },
          }),
        ]),
    done('findExistingOrder', { order: view('INITIAL'), at }),
    done('findExistingOrder', { order: null, at }),
    // Another order's POST of the same siblings is out: nothing can be concluded yet.
    done('findExistingOrder', { order: null, recheckAt: at + 5_000, at }),
    error('findExistingOrder', 'backoff'),
    error('findExistingOrder', 'fatal'),
    error('findExistingOrder', 'fatal', { code: 'lookup_unreachable' }),
    done('adoptOrder', { order: view('INITIAL'), at }),
    error('adoptOrder', 'fatal'),
    done('submitDeposit', { alreadyRecorded: false, at }),
    error('submitDeposit', 'idempotent_success'),
    error('submitDeposit', 'backoff'),
    error('submitDeposit', 'fatal'),
    ...['INITIAL', 'PAID', 'COMPLETED', 'REFUNDED', 'CANCELED'].map((status) =>
      done('fetchOrder', { order: view(status), at }),
    ),
    error('fetchOrder', 'backoff'),
    // The runtime's poll of a resting order: its answer (news, or one older than the last confirmation), its failure.
    ...['INITIAL', 'PAID', 'COMPLETED', 'REFUNDED', 'CANCELED'].map((status): OrderEvent => ({
      type: 'POLLED',
      output: { order: view(status), at },
    })),
    { type: 'POLLED', output: { order: view('PAID'), at: (snapshot.context.confirmedAt ?? at) - 1 } },
    { type: 'POLL_FAILED', error: failure('backoff') },
  ];
}

/** The state value plus the context facts guards read; clock readings and counters that only grow are left out. */
function abstractState(snapshot: OrderSnapshot): string {
  const { context: c } = snapshot;
  const intent = c.pendingIntent;
  return JSON.stringify([
    snapshot.value,
    c.request.mode,
    c.request.preScreening !== null,
    c.resumeFrom,
    intent === null
      ? null
      : intent.kind === 'create'
        ? `create:${intent.outcome}:${intent.rateId ?? ''}:${intent.reference != null && (intent.foreign ?? []).includes(intent.reference)}`
        : intent.kind,
    Math.min(c.attempt, c.config.maxAttempts), // grows without bound while a create is in doubt
    c.requotes,
    c.quote !== null,
    c.lastStatus,
    c.paymentDeadline !== null,
    c.paymentDeadlineChecked,
    c.pollStartedAt !== null,
    c.pollAttempt > 0,
    c.hintPending,
    c.queuedHintsMayWait === true,
    c.hintDueAt != null,
    c.deposit === null ? null : c.deposit.startedAt !== null,
    c.depositRecorded?.alreadyRecorded ?? null,
    c.depositRetryAt !== null,
    c.depositAttempt > 0,
    c.failure?.reason ?? null,
    c.cancelReason,
    c.parkedAt !== null,
    c.lookupUnreachableAt != null,
  ]);
}

const freshInputs: Array<[string, OrderCreateInput]> = [
  ['DeFi', orderInput({ config: modelConfig })],
  ['DeFi with pre-screening', orderInput({ preScreening: { ip: '203.0.113.7' }, config: modelConfig })],
  ['floating CeFi', orderInput({ mode: 'cefi', config: modelConfig })],
  [
    'CeFi limit with pre-screening',
    orderInput({
      mode: 'cefi',
      limitOrder: { ttlSeconds: 600 },
      preScreening: { ip: '203.0.113.7' },
      config: modelConfig,
    }),
  ],
];

interface Coverage {
  readonly transitions: Set<AnyTransitionDefinition>;
  /** State nodes (compared by identity). */
  readonly nodes: Set<object>;
}

/** Runs `events` on a live actor started from `input`, recording every transition and state node it goes through. */
function replay(input: OrderInput, events: readonly OrderEvent[], coverage: Coverage): OrderSnapshot {
  const clock = new SimulatedClock();
  clock.set(input.now);
  const actor = createActor(machine, {
    input,
    clock,
    inspect: (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep') return;
      for (const transition of event._transitions) {
        coverage.transitions.add(transition);
        coverage.nodes.add(transition.source);
      }
      for (const node of (event.snapshot as OrderSnapshot)._nodes) coverage.nodes.add(node);
    },
  });
  actor.start();
  for (const node of actor.getSnapshot()._nodes) coverage.nodes.add(node);
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  actor.stop();
  return snapshot;
}

describe('order machine: model-based coverage (@xstate/graph)', () => {
  it('reaches every state and every transition', () => {
    const allNodes = getStateNodes(machine);
    const allTransitions = new Set<AnyTransitionDefinition>(
      allNodes.flatMap((node) => [...[...node.transitions.values()].flat(), ...(node.always ?? [])]),
    );
    const coverage: Coverage = { transitions: new Set(), nodes: new Set() };
    const stored = new Map<string, OrderSnapshot>();
    let edges = 0;
    let abstractStates = 0;

    for (const [name, input] of freshInputs) {
      const options = { input, events: eventsFor, serializeState: abstractState, limit: 50_000 };
      const paths = getShortestPaths(logic, options);
      const pathTo = new Map(paths.map((path) => [abstractState(path.state), path]));
      // The map's keys are branded strings; read it as the plain record it is.
      const adjacency = getAdjacencyMap(logic, options) as Record<
        string,
        AdjacencyValue<OrderSnapshot, OrderEvent>
      >;
      abstractStates += Object.keys(adjacency).length;

      for (const [key, { state, transitions }] of Object.entries(adjacency)) {
        const path = pathTo.get(key);
        expect(path, `${name}: no path to ${key}`).toBeDefined();
        const prefix = (path?.steps ?? []).slice(1).map((step) => step.event);
        if (state.status === 'active' || state.status === 'done') stored.set(key, state);
        const next = Object.values(transitions) as Array<{ event: OrderEvent; state: OrderSnapshot }>;
        for (const { event, state: expected } of next) {
          edges += 1;
          const actual = replay(input, [...prefix, event], coverage);
          expect(abstractState(actual), `${name}: ${key} --${event.type}-->`).toBe(abstractState(expected));
        }
      }
    }

    // Every stored state, restored by another replica: the router takes it back to where it was, except that a call
    // that may have gone out is verified first (a quote asks for its slot again, a CeFi create looks for its order).
    for (const snapshot of stored.values()) {
      const persisted = toPersisted(snapshot);
      const restored = replay(
        restoreInput(JSON.parse(JSON.stringify(persisted)) as typeof persisted, persisted.savedAt + 5_000),
        [],
        coverage,
      );
      const expected =
        persisted.resumeFrom === 'quoting.requesting'
          ? 'quoting.acquiringSlot'
          : persisted.resumeFrom === 'creating.posting'
            ? 'creating.waiting' // the settle window first, DeFi too: the previous owner's POST may still land
            : persisted.resumeFrom;
      expect(resumeKeyOf(restored.value), `restore from ${persisted.resumeFrom}`).toBe(expected);
      expect(restored.context.failure).toEqual(snapshot.context.failure);
    }
    // ...and one it cannot know fails rather than guessing.
    const anyStored = [...stored.values()][0] as OrderSnapshot;
    replay({ restore: { resumeFrom: 'warpDrive', context: anyStored.context }, now: T0 }, [], coverage);

    const missingNodes = allNodes.filter((node) => !coverage.nodes.has(node)).map((node) => node.id);
    const missingTransitions = [...allTransitions]
      .filter((transition) => !coverage.transitions.has(transition))
      .map(
        (transition) =>
          `${transition.source.id} --${transition.eventType || '(always)'}--> ${transition.target?.map((t) => t.id).join(',') ?? '(none)'}`,
      );

    console.info(
      `model-based coverage: states ${allNodes.length - missingNodes.length}/${allNodes.length}, ` +
        `transitions ${allTransitions.size - missingTransitions.length}/${allTransitions.size} ` +
        `(${abstractStates} abstract states, ${edges} edges replayed, ${stored.size} restores)`,
    );
    expect(missingNodes).toEqual([]);
    expect(missingTransitions).toEqual([]);
  }, 180_000);
});
