// The base's memory sizing agrees with what was measured and with the runbook: the orders a replica may drive
// (MAX_ACTIVE_ORDERS, from the base ConfigMap) at the measured RSS per order driven (the peak of the throughput
// benchmark at 10k, bench/results/) fit in half of the StatefulSet's memory limit, the other half being kept for the
// restores MAX_ACTIVE_ORDERS does not bound; docs/operations.md states the same figures.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deployRoot, renderKustomization } from './kustomize-renderer.ts';

const root = join(deployRoot, '..');
const run = JSON.parse(
  readFileSync(join(root, 'bench', 'results', 'worker-throughput-10000-x1.json'), 'utf8'),
) as { worker: { orders: number; rssMiB: { idle: number[]; peak: number[] } } };
const base = renderKustomization(join(deployRoot, 'k8s', 'base'));
const config = base.find((o) => o.kind === 'ConfigMap')?.['data'] as Record<string, string>;
const container = (
  base.find((o) => o.kind === 'StatefulSet')?.['spec'] as {
    template: { spec: { containers: Array<{ resources: { limits: { memory: string } } }> } };
  }
).template.spec.containers[0];
const limitMiB = Number(/^(\d+)Mi$/.exec(container?.resources.limits.memory ?? '')?.[1]);
const idle = run.worker.rssMiB.idle[0] as number;
const perOrder = ((run.worker.rssMiB.peak[0] as number) - idle) / run.worker.orders;
const maxActive = Number(config['MAX_ACTIVE_ORDERS']);
const driven = idle + maxActive * perOrder;
const runbook = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');

describe('memory sizing of the base', () => {
  it('fits the orders a replica drives, at the measured peak per order, in half of the memory limit', () => {
    expect(limitMiB).toBeGreaterThan(0);
    expect(perOrder).toBeGreaterThan(0);
    expect(driven).toBeLessThanOrEqual(limitMiB / 2);
  });

  it('is stated in the runbook with the measured figures', () => {
    const memory = runbook.slice(
      runbook.indexOf('\nMemory ('),
      runbook.indexOf('The production overlay adds:'),
    );
    expect(memory).toContain(`${Math.round(idle)} MiB idle`);
    expect(memory).toContain(`${perOrder.toFixed(2)} MiB per order driven`);
    expect(memory).toContain(`\`MAX_ACTIVE_ORDERS=${maxActive}\``);
    expect(memory).toContain(`≈ ${Math.round(driven)} MiB`);
    expect(memory).toContain(`${limitMiB}Mi limit`);
  });
});
