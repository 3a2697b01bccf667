// How big a fault run is: the quick profile runs inside `npm test` (unit, adapter and integration tiers), the full
// profile in `npm run test:faults` (the counts docs/faults.md reports). The project decides through vitest's
// provide/inject (FAULT_PROFILE=quick|full overrides it, FAULT_KILL_POINTS sets the kill points, FAULT_KILL_LANES the lanes); a seed can be pinned for replay with FAULT_SEED (fast-check prints the failing seed and path).
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    faultProfile?: 'quick' | 'full';
  }
}

export interface FaultProfile {
  name: 'quick' | 'full';
  /** Fuzzed inputs of each kind checked in-process (command decoding, webhook handling, exchange responses). */
  fuzzRuns: number;
  /**
   * Fuzzed command messages sent to a real worker. Each rejection is a step of its partition's transaction chain
   * (one at a time per partition, joined across partitions by group commit): about 10 per partition per second here.
   */
  fuzzCommandsThroughWorker: number;
  /** Fuzzed webhook deliveries sent to a real worker's HTTP endpoint. */
  fuzzWebhooksThroughWorker: number;
  /** Kill points (one SIGKILL each) chosen by fast-check. */
  killPoints: number;
  /** Independent clusters the kill points are spread over, side by side. */
  killLanes: number;
  /** Orders of the money-safety run. */
  moneySafetyOrders: number;
  /** Orders of the second money-safety round (issue 50). */
  moneySafetySecondRoundOrders: number;
  brokerRestarts: number;
  redisRestarts: number;
}

const profiles: Record<'quick' | 'full', FaultProfile> = {
  quick: {
    name: 'quick',
    fuzzRuns: 1_000,
    fuzzCommandsThroughWorker: 300,
    fuzzWebhooksThroughWorker: 300,
    killPoints: 3,
    killLanes: 1,
    moneySafetyOrders: 30,
    moneySafetySecondRoundOrders: 60,
    brokerRestarts: 1,
    redisRestarts: 1,
  },
  full: {
    name: 'full',
    fuzzRuns: 10_000,
    fuzzCommandsThroughWorker: 10_000,
    fuzzWebhooksThroughWorker: 10_000,
    killPoints: 100,
    killLanes: 4,
    moneySafetyOrders: 200,
    moneySafetySecondRoundOrders: 300,
    brokerRestarts: 10,
    redisRestarts: 10,
  },
};

export function faultProfile(): FaultProfile {
  const profile = chosenProfile();
  const killPoints = process.env['FAULT_KILL_POINTS'];
  const killLanes = process.env['FAULT_KILL_LANES'];
  return {
    ...profile,
    ...(killPoints ? { killPoints: Number(killPoints) } : {}),
    ...(killLanes ? { killLanes: Number(killLanes) } : {}),
  };
}

function chosenProfile(): FaultProfile {
  const forced = process.env['FAULT_PROFILE'];
  if (forced === 'quick' || forced === 'full') return profiles[forced];
  let name: 'quick' | 'full' = 'quick';
  try {
    name = inject('faultProfile') ?? 'quick';
  } catch {
    /* outside a vitest worker */
  }
  return profiles[name];
}

/** fast-check parameters: a pinned seed (and path) replays a failing run exactly. */
export function replayable(numRuns: number): { numRuns: number; seed?: number; path?: string; verbose: 1 } {
  const seed = process.env['FAULT_SEED'];
  const path = process.env['FAULT_PATH'];
  return {
    numRuns,
    verbose: 1,
    ...(seed === undefined ? {} : { seed: Number(seed) }),
    ...(path === undefined ? {} : { path }),
  };
}
