// `npm run bench`: every benchmark in turn, each printing its own figures. BENCH_ONLY=name runs one.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const benches = [
  { name: 'worker-throughput', args: [] as string[] },
  { name: 'request-budget', args: [] as string[] },
];
const only = process.env['BENCH_ONLY'];
let failed = 0;
for (const bench of benches.filter((b) => !only || b.name === only)) {
  console.log(`\n=== ${bench.name}`);
  const result = spawnSync(process.execPath, [join(here, `${bench.name}.ts`), ...bench.args], {
    stdio: 'inherit',
  });
  if (result.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
