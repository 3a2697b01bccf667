// Seeds of fault runs: one number decides every random choice of a run (the test's own PRNG, the sandbox's fault
// draws, fast-check), so a failing run replays from the seed it prints. FAULT_SEED pins it.

export function runSeed(): number {
  const pinned = process.env['FAULT_SEED'];
  if (pinned !== undefined && pinned !== '') return Number(pinned) >>> 0;
  return (Date.now() ^ (process.pid << 16)) >>> 0;
}

/** A small seeded PRNG (mulberry32): numbers in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
