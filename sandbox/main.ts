// CLI of the exchange sandbox (`npm run sandbox`): SANDBOX_PORT (default 8080), SANDBOX_HOST (default 0.0.0.0
// so a container publishes it), SANDBOX_CONFIG (path to a JSON world; the built-in demo world otherwise),
// SANDBOX_SEED. Logs one line with the URLs and the names of the demo keys; never logs configured secrets.
import { z } from 'zod';
import { demoKeys, loadSandboxConfigFile, startSandbox } from './index.ts';

const env = z
  .object({
    SANDBOX_PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
    SANDBOX_HOST: z.string().min(1).default('0.0.0.0'),
    SANDBOX_CONFIG: z.string().min(1).optional(),
    SANDBOX_SEED: z.coerce.number().int().optional(),
  })
  .safeParse(process.env);
if (!env.success) {
  console.error(`exchange sandbox: bad environment\n${z.prettifyError(env.error)}`);
  process.exit(1);
}
const { SANDBOX_PORT: port, SANDBOX_HOST: host, SANDBOX_CONFIG: configPath, SANDBOX_SEED: seed } = env.data;

const config = configPath
  ? await loadSandboxConfigFile(configPath).catch((error: unknown) => {
      console.error(`exchange sandbox: ${(error as Error).message}`);
      process.exit(1);
    })
  : undefined;
const handle = await startSandbox({
  port,
  host,
  ...(config ? { config } : {}),
  ...(seed === undefined ? {} : { seed }),
});
const keyNote = configPath
  ? `config ${configPath} (${handle.config.partners.length} partners)`
  : `demo keys: ${Object.entries(demoKeys)
      .map(([name, key]) => `${name}=${key}`)
      .join(' ')}`;
console.log(`exchange sandbox: v2 ${handle.url} v1 ${handle.v1Url} admin ${handle.adminUrl}; ${keyNote}`);

const shutdown = (): void => {
  void handle.close().then(() => process.exit(0));
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
