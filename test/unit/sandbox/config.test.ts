import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSandboxConfigFile, parseSandboxConfig } from '../../../sandbox/config.ts';
import { demoConfig } from '../../../sandbox/demo-config.ts';

const example = fileURLToPath(new URL('../../../docs/sandbox.config.example.json', import.meta.url));

describe('sandbox config', () => {
  it('loads the documented example file', async () => {
    const config = await loadSandboxConfigFile(example);
    expect(config.partners[0]?.webhooks[0]?.payloadVersion).toBe('v2');
    expect(config.limits.globalRequestsPerMinute).toBe(2500);
  });

  it('applies the documented defaults to the demo world', () => {
    const config = parseSandboxConfig(demoConfig);
    expect(config.limits).toMatchObject({ globalRequestsPerMinute: 2500, actionableCooldownMs: 15_000 });
    expect(config.webhooks.timeoutMs).toBe(5_000);
  });

  it('defaults webhook payloads to v1 for legacy configurations', () => {
    const config = parseSandboxConfig({
      ...demoConfig,
      partners: [{ id: 'p', name: 'P', webhooks: [{ id: 'w', url: 'https://example.test/hook' }] }],
    });
    expect(config.partners[0]?.webhooks[0]?.payloadVersion).toBe('v1');
  });

  it('refuses pairs naming unknown currencies and duplicate keys, with readable messages', () => {
    expect(() =>
      parseSandboxConfig({
        ...demoConfig,
        pairs: [{ from: 'BTC', to: 'NOPE', rate: '1', minDepositAmount: '1', maxDepositAmount: '2' }],
      }),
    ).toThrow(/unknown NOPE/);
    const duplicated = {
      id: 'x',
      name: 'X',
      apiKeys: [{ key: 'sandbox-demo-cefi-key', mode: 'cefi' as const }],
    };
    expect(() =>
      parseSandboxConfig({ ...demoConfig, partners: [...demoConfig.partners, duplicated] }),
    ).toThrow(/unique/);
  });
});
