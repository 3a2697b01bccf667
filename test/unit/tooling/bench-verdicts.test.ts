// The benchmark's verdicts (bench/lib/harness.ts verdict, bench/restore-at-scale.ts replicaShares): a figure is
// judged as measured, never after rounding, and the figure shown falls on the same side of the bound as the one judged.
import { describe, expect, it } from 'vitest';
import { summaryName, verdict } from '../../../bench/lib/harness.ts';
import { replicaShares, type RestoreResult } from '../../../bench/restore-at-scale.ts';
import { restoreVerdicts, runEmptyRssMiB } from '../../../bench/lib/restore-figures.ts';
import { machineCeiling } from '../../../bench/worker-throughput.ts';

const restore = (rssMiB: RestoreResult['rssMiB'], replicaRss: number[] = []): RestoreResult => ({
  orders: 100_000,
  recordBytes: 2_513,
  compression: 17,
  writeMs: 0,
  emptyBootMs: 0,
  readyMs: 0,
  atRestMs: 0,
  notAtRest: 0,
  activeOrders: 100_000,
  passivatedOrders: 100_000,
  rssMiB,
  heapMiB: { empty: 0, restored: 0 },
  rssKiBPerOrder: 0,
  heapKiBPerOrder: 0,
  replicas: replicaRss.length || 1,
  partitions: 6,
  perReplica: replicaRss.map((rss) => ({ activeOrders: 33_333, rssMiB: rss, heapMiB: 0, shareOfOne: 1 / 3 })),
});

describe('benchmark verdicts', () => {
  it('judges the 3 replicas by their unrounded shares (the full run of 2026-11-29 03:57)', () => {
    const alone = restore({ empty: 114.9, restored: 433 });
    const three = restore({ empty: 113.8, restored: 717.1 }, [239.5, 241.6, 236]);
    const shares = replicaShares(alone, three);
    expect(shares[0]).toBeCloseTo(0.395, 3);
    expect(shares[1]).toBeCloseTo(0.402, 3);
    expect(shares[2]).toBeCloseTo(0.384, 3);
    const judged = verdict('3 replicas', Math.max(...shares), 'x', { op: '<=', bound: 0.4 });
    expect(judged.verdict).toBe('missed');
    expect(judged.value).toBe(0.402);
  });

  // The readings of the two full runs of 2026-12-04 (Intel Xeon; bench/results/side-by-side/full-*-xeon.json): the
  // replicas that restored 10k together held the same RSS in both (133.5 to 135.7 MiB but one), yet with each
  // restore's own empty replica the shares were 0.48 and 0.61 - from the empty readings alone (115.2 against 112.7
  // under the replicas, 111.5 against 115.5 under the lone one).
  const run = (
    empties: [number, number, number, number],
    alone: [number, number],
    three: [number, number],
    replicas: [number[], number[]],
  ): RestoreResult[] => [
    { ...restore({ empty: empties[0], restored: alone[0] }), orders: 10_000 },
    { ...restore({ empty: empties[1], restored: alone[1] }), orders: 100_000 },
    { ...restore({ empty: empties[2], restored: three[0] }, replicas[0]), orders: 10_000 },
    { ...restore({ empty: empties[3], restored: three[1] }, replicas[1]), orders: 100_000 },
  ];
  const baseline = run(
    [111.5, 112.2, 115.2, 114.7],
    [154, 440.7],
    [398.1, 705.8],
    [
      [133.9, 128.6, 135.7],
      [234.1, 237.6, 234.1],
    ],
  );
  const candidate = run(
    [115.5, 115.1, 112.7, 115.1],
    [151.4, 446],
    [401.8, 732.4],
    [
      [134.5, 133.8, 133.5],
      [244.2, 247.4, 240.8],
    ],
  );
  const shareAt = (restores: RestoreResult[], figure: string): number | null =>
    restoreVerdicts(restores).find((v) => v.figure === figure)?.value ?? null;

  it("takes every replica's RSS over one empty replica's, the mean of the run's readings of one", () => {
    expect(runEmptyRssMiB(baseline)).toBeCloseTo(113.4, 6);
    expect(runEmptyRssMiB(candidate)).toBeCloseTo(114.6, 6);
    // Each restore's own reading (how the shares were taken before): 0.48 against 0.61.
    expect(Math.max(...replicaShares(baseline[0]!, baseline[2]!))).toBeCloseTo(0.482, 3);
    expect(Math.max(...replicaShares(candidate[0]!, candidate[2]!))).toBeCloseTo(0.607, 3);
    // Over the run's mean: 0.55 and 0.54, as the replicas' RSS says.
    expect(shareAt(baseline, 'with 3 replicas each holds, at 10000')).toBe(0.55);
    expect(shareAt(candidate, 'with 3 replicas each holds, at 10000')).toBe(0.54);
    // At 100k, where the orders add 330 MiB, the estimator moves the judged share by less than 0.01.
    expect(shareAt(baseline, 'with 3 replicas each holds about a third')).toBe(0.38);
    expect(shareAt(candidate, 'with 3 replicas each holds about a third')).toBe(0.401);
    expect(
      restoreVerdicts(candidate).find((v) => v.figure === 'with 3 replicas each holds about a third')
        ?.verdict,
    ).toBe('missed');
  });

  // [measured, op, bound, verdict, shown]
  const cases: [number | null, '>=' | '<' | '<=', number, string, number | null][] = [
    [0.3952, '<=', 0.4, 'met', 0.4],
    [0.4004, '<=', 0.4, 'missed', 0.4004],
    [0.4999, '>=', 0.5, 'missed', 0.4999],
    [19.996, '<', 20, 'met', 19.996],
    [580.74, '>=', 300, 'met', 580.74],
    [null, '>=', 300, 'not measured', null],
  ];
  it.each(cases)(
    'shows %s (%s %s) on the side of its bound it was judged on: %s, shown as %s',
    (measured, op, bound, judged, shown) => {
      expect(verdict('figure', measured, 'unit', { op, bound })).toMatchObject({
        verdict: judged,
        value: shown,
      });
    },
  );
  it("gives the rate the machine allows at a phase's CPU per order (the full run of 2026-11-29 07:37, 10k)", () => {
    // The worker created 617.6 /s with 1.65 of 2 cores busy machine-wide: 2.67 ms per order, 749 /s at most.
    const worker = machineCeiling(617.6, { machine: 1.65 }, 2);
    expect(worker.machineMsPerOrder).toBeCloseTo(2.672, 3);
    expect(worker.ordersPerSecond).toBeCloseTo(748.6, 1);
    // The floor: 1,601.3 /s with 1.46 cores busy: 0.91 ms per order.
    expect(machineCeiling(1601.3, { machine: 1.46 }, 2).machineMsPerOrder).toBeCloseTo(0.912, 3);
    // Half the cores busy at the same rate: twice the ceiling.
    expect(machineCeiling(617.6, { machine: 0.825 }, 2).ordersPerSecond).toBeCloseTo(
      2 * worker.ordersPerSecond,
      6,
    );
  });
  it("keeps the whole run's summary when one part runs alone (BENCH_ONLY)", () => {
    expect(summaryName('full', undefined)).toBe('summary-full');
    expect(summaryName('full', 'webhooks')).toBe('summary-full-only-webhooks');
    expect(summaryName('small', 'restore')).not.toBe(summaryName('small', undefined));
  });
});
