// Sentences of the README that a change elsewhere can make false, checked against what they describe: the decision
// list against docs/decisions/, the command types against the contract, the inspector sample against what the worker
// writes (every event carries a traceparent, so every timeline row has a trace id), no line repeated by a bad merge,
// and the runbook's account of how webhooks reach the pods against the manifests. (.env.example against the
// configuration: test/unit/tooling/env-example.test.ts.)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deployRoot, renderKustomization } from './kustomize-renderer.ts';

const root = join(deployRoot, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The lines outside fenced code blocks. */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').filter((line) => {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    return !fenced;
  });
}

describe('README', () => {
  it('lists every decision note of docs/decisions/, and only those', () => {
    const files = readdirSync(join(root, 'docs', 'decisions')).filter((file) => file.endsWith('.md'));
    const linked = [...readme.matchAll(/\]\(docs\/decisions\/([a-z0-9-]+\.md)\)/g)].map(
      (m) => m[1] as string,
    );
    expect([...new Set(linked)].sort()).toEqual(files.sort());
  });

  it('documents exactly the command types of the contract, and counts none by hand', () => {
    const contract = readFileSync(join(root, 'src', 'contract', 'commands.ts'), 'utf8');
    const types = new Set(
      [...contract.matchAll(/type: z\.literal\('([a-z._]+)'\)/g)].map((m) => m[1] as string),
    );
    const section = readme.slice(readme.indexOf('### Commands ('), readme.indexOf('### Events ('));
    const documented = new Set([...section.matchAll(/^\| `([a-z._]+)` +\|/gm)].map((m) => m[1] as string));
    expect([...documented].sort()).toEqual([...types].sort());
    expect(readme).not.toMatch(/\b(?:one|two|three|four|five|six|seven|eight|nine|ten) command types\b/);
  });

  it('repeats no line of prose (a merge that kept both sides of a change)', () => {
    const lines = proseLines(readme)
      .map((line) => line.trim())
      .filter((line) => line.length >= 40 && !line.startsWith('|'));
    const repeated = lines.filter((line, i) => i > 0 && line.slice(0, 40) === lines[i - 1]?.slice(0, 40));
    expect(repeated).toEqual([]);
  });

  it("shows the trace id of every event in the inspector's timeline: the worker writes a traceparent on each", () => {
    const sample = readme.slice(readme.indexOf('$ … npm run -s inspect --'));
    const timeline = sample.slice(
      sample.indexOf('timeline'),
      sample.indexOf('```', sample.indexOf('timeline')),
    );
    const rows = timeline.split('\n').filter((line) => /^\s+\d+\s+\d{4}-\d\d-\d\dT/.test(line));
    expect(rows.length).toBeGreaterThan(2);
    expect(rows.filter((row) => !/\s[0-9a-f]{32}\s/.test(row))).toEqual([]);
    expect(readme).not.toMatch(/shows `-` until the worker writes/);
  });
});

describe('docs/operations.md on webhook routing', () => {
  const runbook = readFileSync(join(root, 'docs', 'operations.md'), 'utf8').replace(/\s+/g, ' ');
  const base = renderKustomization(join(deployRoot, 'k8s', 'base'));
  const webhooks = base.find(
    (o) => o.kind === 'Service' && o.metadata.name === 'exchange-order-worker-webhooks',
  );
  const statefulSet = base.find((o) => o.kind === 'StatefulSet');
  const readiness = JSON.stringify(statefulSet?.['spec']).match(
    /"readinessProbe":\{"httpGet":\{"path":"([^"]+)"/,
  )?.[1];

  it('says what the webhook Service does with unready and terminating pods', () => {
    const publishes = (webhooks?.['spec'] as { publishNotReadyAddresses?: boolean }).publishNotReadyAddresses;
    expect(publishes).toBeFalsy();
    expect(runbook).not.toContain('route the webhook Service with `publishNotReadyAddresses: true`');
    expect(runbook).toContain('the webhook Service routes to ready pods only');
  });

  it('names the readiness probe the pods have, and does not say a Redis outage stops webhooks', () => {
    expect(readiness).toBe('/readyz/webhooks');
    expect(runbook).toContain(`readiness probe is \`${readiness}\``);
    expect(runbook).not.toContain(
      'takes every replica out of service during the outage, and webhook deliveries fail',
    );
  });
});
