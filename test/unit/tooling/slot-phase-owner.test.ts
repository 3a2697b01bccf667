// Exactly one module assigns a slot's phase (docs/decisions/slot-phase-model.md): the phase is readonly on the slot,
// and only src/worker/runtime/slot-phases.ts writes it (through its one cast). Any other module that assigns
// `.phase`, or casts a slot to make it writable, fails here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const owner = 'src/worker/runtime/slot-phases.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : name.endsWith('.ts') ? [full] : [];
  });
}

/** The lines of a source that assign a slot's phase: `x.phase = …` (not a comparison) or `phase` made writable. */
export function phaseAssignments(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => /\.phase\s*=(?!=)/.test(line) || /\{\s*phase\s*:\s*SlotPhase\s*\}/.test(line));
}

describe('slot phase owner', () => {
  it('finds an assignment where one is written (the check can fail)', () => {
    expect(phaseAssignments('  slot.phase = { kind: "live" };')).toHaveLength(1);
    expect(phaseAssignments('type W = { phase: SlotPhase };')).toHaveLength(1);
    expect(phaseAssignments('if (slot.phase === x) return;\nconst p = slot.phase.kind;')).toEqual([]);
  });

  it(`lets only ${owner} assign a slot's phase`, () => {
    const assigning = sources(join(root, 'src'))
      .map((file) => ({ path: relative(root, file).split('\\').join('/'), text: readFileSync(file, 'utf8') }))
      .filter(({ text }) => phaseAssignments(text).length > 0)
      .map(({ path }) => path);
    expect(assigning).toEqual([owner]);
  });
});
