// bench/compare.ts: two bench summaries figure by figure, each judged in its own direction against the tolerance.
import { describe, expect, it } from 'vitest';
import { compareSummaries, rederive } from '../../../bench/compare.ts';

const summary = (values: Record<string, [number | null, string]>) => ({
  profile: 'full',
  startedAt: '2026-12-02T00:00:00Z',
  verdicts: Object.entries(values).map(([figure, [value, unit]]) => ({
    figure,
    value,
    unit,
    verdict: 'met',
  })),
});

describe('bench side by side (bench/compare.ts)', () => {
  it('judges a rate as worse when it falls and a size or a time as worse when it grows', () => {
    const baseline = summary({
      rate: [100, 'orders/s'],
      floor: [0.5, 'x floor'],
      memory: [3, 'KiB'],
      share: [0.4, 'x one replica'],
      restore: [10, 's'],
      missing: [null, 'ms'],
    });
    const candidate = summary({
      rate: [89, 'orders/s'],
      floor: [0.55, 'x floor'],
      memory: [3.2, 'KiB'],
      share: [0.45, 'x one replica'],
      restore: [9, 's'],
      missing: [4, 'ms'],
    });
    const byFigure = Object.fromEntries(compareSummaries(baseline, candidate, 0.1).map((f) => [f.figure, f]));
    expect(byFigure['rate']).toMatchObject({ worseBy: 0.11, withinTolerance: false });
    expect(byFigure['floor']).toMatchObject({ worseBy: -0.1, withinTolerance: true });
    expect(byFigure['memory']).toMatchObject({ worseBy: 0.067, withinTolerance: true });
    expect(byFigure['share']).toMatchObject({ worseBy: 0.125, withinTolerance: false });
    expect(byFigure['restore']).toMatchObject({ worseBy: -0.1, withinTolerance: true });
    expect(byFigure['missing']).toMatchObject({ ratio: null, withinTolerance: null });
  });

  it("derives the restore part's figures again from a summary's readings, and keeps a summary without them", () => {
    const reading = (orders: number, empty: number, restored: number, replicas: number[] = []) => ({
      orders,
      replicas: replicas.length || 1,
      emptyBootMs: 2_000,
      readyMs: 6_200,
      atRestMs: 1_000,
      notAtRest: 0,
      passivatedOrders: orders,
      rssMiB: { empty, restored },
      rssKiBPerOrder: 3.39,
      heapKiBPerOrder: 3.1,
      perReplica: replicas.map((rssMiB) => ({ rssMiB })),
    });
    // The shares as an older bench stored them (each restore's own empty replica: 0.61 at 10k).
    const stored = {
      ...summary({
        'with 3 replicas each holds, at 10000': [0.61, 'x one replica'],
        'restore of a partition of open orders': [6.2, 's'],
        'created/s, 1 worker': [565.3, 'orders/s'],
      }),
      restore: [
        reading(10_000, 115.5, 151.4),
        reading(100_000, 115.1, 446),
        reading(10_000, 112.7, 401.8, [134.5, 133.8, 133.5]),
        reading(100_000, 115.1, 732.4, [244.2, 247.4, 240.8]),
      ],
    };
    const { summary: derived, changed } = rederive(stored);
    expect(changed).toEqual([
      { figure: 'with 3 replicas each holds, at 10000', stored: 0.61, derived: 0.54 },
    ]);
    expect(derived.verdicts.map((v) => v.value)).toEqual([0.54, 6.2, 565.3]);
    const plain = summary({ 'with 3 replicas each holds, at 10000': [0.61, 'x one replica'] });
    expect(rederive(plain)).toEqual({ summary: plain, changed: [] });
  });
});
