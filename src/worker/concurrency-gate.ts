// At most `max` tasks at once, the rest in order as they end. Unlike p-limit, a task admitted while fewer than `max`
// run starts synchronously, in the caller's turn: a lease the new assignment gives up is released by that assignment
// itself (order-host.ts setAssignment), not a microtask later.

export type ConcurrencyGate = <T>(task: () => Promise<T>) => Promise<T>;

export function concurrencyGate(max: number): ConcurrencyGate {
  if (!Number.isSafeInteger(max) || max < 1) throw new Error(`max must be a positive integer, got ${max}`);
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    // The slot passes straight to the next task waiting, so `running` never exceeds `max`.
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (running < max) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      release();
    }
  };
}
