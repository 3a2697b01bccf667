import { afterEach } from 'vitest';

/**
 * What the tests of the calling file register to undo (stop a worker, delete a topic, disconnect a client): run after
 * each test, the last registered first; a cleanup that fails does not keep the others from running.
 */
export function cleanupsAfterEach(): Array<() => Promise<unknown>> {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    while (cleanups.length)
      await cleanups
        .pop()?.()
        .catch(() => {});
  });
  return cleanups;
}
