// bench/compare.ts: two bench summaries figure by figure, each judged in its own direction against the tolerance.
import { describe, expect, it } from 'vitest';
import { compareSummaries } from '../../../bench/compare.ts';

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
});
