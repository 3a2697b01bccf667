// `node bench/compare.ts <baseline summary.json> <candidate summary.json> [out.json]`: two runs of `npm run bench`
// side by side, figure by figure (the targets table of bench/run.ts), each with how much worse the candidate is than
// the baseline in the figure's own direction (more orders/s is better, fewer KiB/ms/s/calls is better) and whether
// that is within the tolerance (BENCH_TOLERANCE, 0.10 by default). Both runs should come from the same machine in
// the same session: the figures move with the machine far more than with a refactoring. Exits 1 when a figure
// measured in both is worse by more than the tolerance. The restore part's figures are derived again from each
// summary's own readings (its `restore` results) with this checkout's bench/lib/restore-figures.ts, so both runs are
// read with the same estimator even when the baseline ran older benchmark code; a figure that changes is printed.
import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { restoreReadingsSchema, restoreVerdicts } from './lib/restore-figures.ts';

const verdictSchema = z.object({
  figure: z.string(),
  value: z.number().nullable(),
  unit: z.string(),
  verdict: z.string(),
});
const summarySchema = z.object({
  profile: z.string(),
  startedAt: z.string(),
  elapsedSeconds: z.number().optional(),
  verdicts: z.array(verdictSchema),
  restore: z.array(restoreReadingsSchema).optional(),
});
type Summary = z.infer<typeof summarySchema>;

/**
 * Units where a larger figure is the better one (a rate, a multiple of the floor or of the 1k rate, orders kept);
 * every other unit (KiB, ms, s, calls, a multiple of one replica's memory) is better smaller.
 */
const higherIsBetter = (unit: string): boolean =>
  /\/s$/.test(unit) || ['x floor', 'x', 'orders'].includes(unit);

export interface FigureComparison {
  figure: string;
  unit: string;
  baseline: number | null;
  candidate: number | null;
  /** candidate / baseline. */
  ratio: number | null;
  /** How much worse the candidate is in the figure's direction (negative: better), as a fraction of the baseline. */
  worseBy: number | null;
  withinTolerance: boolean | null;
}

export function compareSummaries(
  baseline: Summary,
  candidate: Summary,
  tolerance: number,
): FigureComparison[] {
  const byFigure = new Map(candidate.verdicts.map((v) => [v.figure, v]));
  return baseline.verdicts.map((base) => {
    const other = byFigure.get(base.figure);
    const a = base.value;
    const b = other?.value ?? null;
    if (a === null || b === null || a === 0)
      return {
        figure: base.figure,
        unit: base.unit,
        baseline: a,
        candidate: b,
        ratio: null,
        worseBy: null,
        withinTolerance: null,
      };
    const ratio = b / a;
    const worseBy = higherIsBetter(base.unit) ? 1 - ratio : ratio - 1;
    return {
      figure: base.figure,
      unit: base.unit,
      baseline: a,
      candidate: b,
      ratio: Math.round(ratio * 1000) / 1000,
      worseBy: Math.round(worseBy * 1000) / 1000,
      withinTolerance: worseBy <= tolerance,
    };
  });
}

/** A figure whose value was derived again from the run's readings, and what the summary held. */
export interface Rederived {
  figure: string;
  stored: number | null;
  derived: number | null;
}

/**
 * The summary with its restore figures derived again from its readings (restoreVerdicts), and the figures whose
 * value that changed. A summary without readings is kept as it is.
 */
export function rederive(summary: Summary): { summary: Summary; changed: Rederived[] } {
  if (!summary.restore?.length) return { summary, changed: [] };
  const fresh = new Map(restoreVerdicts(summary.restore).map((v) => [v.figure, v.value]));
  const changed: Rederived[] = [];
  const verdicts = summary.verdicts.map((v) => {
    if (!fresh.has(v.figure)) return v;
    const derived = fresh.get(v.figure) ?? null;
    if (derived !== v.value) changed.push({ figure: v.figure, stored: v.value, derived });
    return { ...v, value: derived };
  });
  return { summary: { ...summary, verdicts }, changed };
}

const read = (path: string): Summary => summarySchema.parse(JSON.parse(readFileSync(path, 'utf8')));

if (import.meta.main) {
  const [baselinePath, candidatePath, outPath] = process.argv.slice(2);
  if (!baselinePath || !candidatePath) {
    console.error('usage: node bench/compare.ts <baseline summary.json> <candidate summary.json> [out.json]');
    process.exit(2);
  }
  const tolerance = Number(process.env['BENCH_TOLERANCE'] ?? '0.10');
  const [base, cand] = [baselinePath, candidatePath].map((path) => {
    const derived = rederive(read(path));
    for (const c of derived.changed)
      console.log(`${path}: ${c.figure} derived again from its readings: ${c.stored} -> ${c.derived}`);
    return derived;
  }) as [ReturnType<typeof rederive>, ReturnType<typeof rederive>];
  const [baseline, candidate] = [base.summary, cand.summary];
  const figures = compareSummaries(baseline, candidate, tolerance);
  console.log(`baseline  ${baselinePath} (${baseline.profile}, ${baseline.startedAt})`);
  console.log(`candidate ${candidatePath} (${candidate.profile}, ${candidate.startedAt})`);
  for (const f of figures) {
    const show = (n: number | null) => (n === null ? '-' : String(n)).padStart(9);
    const worse = f.worseBy === null ? '' : `${(f.worseBy * 100).toFixed(1)} % worse`.padStart(14);
    const mark = f.withinTolerance === null ? 'not in both' : f.withinTolerance ? 'within' : 'OUTSIDE';
    console.log(
      `  ${f.figure.padEnd(52)} ${show(f.baseline)} ${show(f.candidate)} ${f.unit.padEnd(14)} ${worse}  ${mark}`,
    );
  }
  const outside = figures.filter((f) => f.withinTolerance === false);
  console.log(
    `${figures.filter((f) => f.withinTolerance !== null).length} figures in both runs, ${outside.length} worse by more than ${tolerance * 100} %`,
  );
  if (outPath)
    writeFileSync(
      outPath,
      `${JSON.stringify({ tolerance, baseline: { path: baselinePath, startedAt: baseline.startedAt, elapsedSeconds: baseline.elapsedSeconds }, candidate: { path: candidatePath, startedAt: candidate.startedAt, elapsedSeconds: candidate.elapsedSeconds }, rederived: { baseline: base.changed, candidate: cand.changed }, figures }, null, 2)}\n`,
    );
  if (outside.length) process.exitCode = 1;
}
