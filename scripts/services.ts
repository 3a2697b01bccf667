// `npm run services:up` / `npm run services:down`: start (or reuse) and stop the Kafka broker and Redis
// used by tests, benchmarks and the demo. Prints the addresses as KEY=value lines.
import { servicesDown, servicesUp } from '../dev/services/index.ts';

const command = process.argv[2];
const started = Date.now();
try {
  if (command === 'up') {
    process.env['TESTCONTAINERS_RYUK_DISABLED'] ??= 'true';
    const result = await servicesUp({ log: (line) => console.error(`services: ${line}`) });
    for (const line of result.describe) console.error(`services: ${line}`);
    console.log(`KAFKA_BROKERS=${result.endpoints.kafkaBrokers.join(',')}`);
    console.log(`REDIS_URL=${result.endpoints.redisUrl}`);
    console.error(`services: up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } else if (command === 'down') {
    const done = await servicesDown();
    for (const line of done) console.error(`services: ${line}`);
    if (done.length === 0) console.error('services: nothing was running');
  } else {
    console.error('usage: node scripts/services.ts up|down');
    process.exitCode = 2;
  }
} catch (error) {
  console.error(
    `services: ${command ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exitCode = 1;
}
