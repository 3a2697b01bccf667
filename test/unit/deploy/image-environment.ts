// The environment the worker image gives every container (the `ENV` lines of deploy/Dockerfile's worker stage),
// so a deployment's variables are checked as the worker will see them: NODE_ENV=production among them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deployRoot } from './kustomize-renderer.ts';

export function workerImageEnv(): Record<string, string> {
  const dockerfile = readFileSync(join(deployRoot, 'Dockerfile'), 'utf8');
  const stage = dockerfile.slice(dockerfile.search(/^FROM .* AS worker$/m));
  const env: Record<string, string> = {};
  for (const line of stage.split('\n').slice(1)) {
    if (/^FROM /.test(line)) break;
    const match = /^ENV (.+)$/.exec(line);
    if (!match) continue;
    for (const pair of (match[1] as string).split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}
