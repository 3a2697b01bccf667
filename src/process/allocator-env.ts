// glibc's allocator settings the worker runs with (deploy/Dockerfile sets them in the image; the test and benchmark
// workers get the same). With glibc's defaults the mmap threshold grows with the largest buffer freed so far (up to
// 32 MiB): after a restore or a Kafka fetch has freed a few large buffers, buffers of megabytes come from the heap
// arenas, and the arenas keep the memory after they are freed. Measured (bench/restore-at-scale.ts, 30k open orders
// restored by 3 replicas): 17.2 KiB of RSS per order with the defaults, 6.7 KiB with these, no change in CPU per
// created order at 3k orders (4.79 and 4.73 ms). They must be in the environment when the process starts.
export const allocatorEnv = {
  /** Two malloc arenas instead of eight per core: less memory parked in arenas of the threads (zlib, DNS). */
  MALLOC_ARENA_MAX: '2',
  /** Hand free memory at the top of the heap back past 64 KiB (and never move the threshold). */
  MALLOC_TRIM_THRESHOLD_: '65536',
  /** Allocations of 64 KiB or more are mapped on their own and unmapped when freed (the threshold stays there). */
  MALLOC_MMAP_THRESHOLD_: '65536',
} as const;

/** The allocator settings missing from (or different in) an environment, by name. */
export function allocatorEnvMissing(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(allocatorEnv)
    .filter(([name, value]) => env[name] !== value)
    .map(([name]) => name);
}
