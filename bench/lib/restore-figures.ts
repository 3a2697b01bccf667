// The restore part's figures, derived from its readings alone: the restore time and RSS per order at rest of the
// largest N on one replica (targets), and with 3 replicas what each holds against one replica holding all (judged
// at the largest N, reported at the smaller ones). bench/run.ts judges a run with them; bench/compare.ts derives
// them again from both summaries' readings, so two runs side by side are read with one and the same estimator.
import { z } from 'zod';
import { reported, round, verdict, type Verdict } from './harness.ts';

/** What restoreVerdicts reads of a restore's result (bench/restore-at-scale.ts RestoreResult). */
export const restoreReadingsSchema = z.object({
  orders: z.number(),
  replicas: z.number(),
  emptyBootMs: z.number(),
  readyMs: z.number(),
  atRestMs: z.number(),
  notAtRest: z.number(),
  passivatedOrders: z.number(),
  rssMiB: z.object({ empty: z.number(), restored: z.number() }),
  rssKiBPerOrder: z.number(),
  heapKiBPerOrder: z.number(),
  perReplica: z.array(z.object({ rssMiB: z.number() })),
});
export type RestoreReadings = z.infer<typeof restoreReadingsSchema>;

/**
 * An empty replica's RSS as one run measured it: the mean of every restore's reading of one (each restore starts a
 * replica on empty topics first). One process's reading lands a few MiB from the next one's (which of the node
 * binary's pages it happened to touch: 112.7 to 115.5 MiB for the same code in one run), and at 10k orders on
 * 3 replicas the orders add only 17 to 20 MiB to each: one reading in the numerator and another in the
 * denominator moved the share by a fifth between runs whose replicas held the same RSS.
 */
export function runEmptyRssMiB(restores: readonly Pick<RestoreReadings, 'rssMiB'>[]): number {
  const readings = restores.map((r) => r.rssMiB.empty).filter((v) => Number.isFinite(v));
  return readings.length ? readings.reduce((a, b) => a + b, 0) / readings.length : NaN;
}

/**
 * Each replica's RSS over an empty replica's, as a share of what one replica restoring all N alone added over its
 * empty one. Unrounded: the verdict compares these with its bound, and only what is printed is rounded (a share of
 * 0.402 rounded to 0.40 first passed a bound of 0.40). `emptyMiB`: the empty replica's RSS both sides are taken
 * over (runEmptyRssMiB); without it each restore's own reading (one process each).
 */
export function replicaShares(
  alone: Pick<RestoreReadings, 'rssMiB'>,
  shared: Pick<RestoreReadings, 'rssMiB' | 'perReplica'>,
  emptyMiB?: number,
): number[] {
  const aloneAdded = alone.rssMiB.restored - (emptyMiB ?? alone.rssMiB.empty);
  return shared.perReplica.map((r) => (r.rssMiB - (emptyMiB ?? shared.rssMiB.empty)) / aloneAdded);
}

/** The restore part's verdicts from its results: one replica's restores first, then the 3-replica ones. */
export function restoreVerdicts(restores: readonly RestoreReadings[]): Verdict[] {
  const verdicts: Verdict[] = [];
  const largest = restores.filter((r) => r.replicas === 1).at(-1);
  if (largest) {
    const at = `at ${largest.orders} open orders, ${largest.passivatedOrders} at rest`;
    verdicts.push(
      verdict(
        'restore of a partition of open orders',
        largest.readyMs / 1000,
        's',
        { op: '<', bound: 10 },
        `${at}; spawn to ready (empty topics ${round(largest.emptyBootMs / 1000, 1)} s); target at 100k`,
      ),
      verdict(
        'RSS per open order at rest, 1 replica',
        largest.rssKiBPerOrder,
        'KiB',
        { op: '<', bound: 5 },
        `${at}; heap ${largest.heapKiBPerOrder} KiB; at rest ${round(largest.atRestMs / 1000, 1)} s after ready${largest.notAtRest ? ' (NOT at rest within the cap)' : ''}; target at 100k`,
      ),
    );
  }
  // Each replica's RSS over an empty replica's, against the one replica that restored the same N alone: judged at
  // the largest N (the target's), reported at the smaller ones.
  const empty = runEmptyRssMiB(restores);
  for (const three of restores.filter((r) => r.replicas > 1)) {
    const alone = restores.find((r) => r.replicas === 1 && r.orders === three.orders);
    if (!alone) continue;
    const shares = replicaShares(alone, three, empty);
    const note = `${three.orders} open orders on 6 partitions; each replica's RSS over an empty one (${round(empty, 1)} MiB, the mean of the run's ${restores.length} readings) against one replica holding all: ${shares.map((share) => round(share, 3)).join(' / ')}; summed ${three.rssKiBPerOrder} KiB per order (heap ${three.heapKiBPerOrder}); at rest ${round(three.atRestMs / 1000, 1)} s after ready${three.notAtRest ? ` (${three.notAtRest} replica(s) NOT at rest within the cap)` : ''}`;
    verdicts.push(
      alone === largest
        ? verdict(
            'with 3 replicas each holds about a third',
            Math.max(...shares),
            'x one replica',
            { op: '<=', bound: 0.4 },
            note,
          )
        : reported(
            `with 3 replicas each holds, at ${three.orders}`,
            Math.max(...shares),
            'x one replica',
            `judged at ${largest?.orders} only; ${note}`,
          ),
    );
  }
  return verdicts;
}
