// SIGKILL anywhere in an order's life (see kill-anywhere.test-cases.ts): 3 kill points in `npm test`, 100 in 4 lanes in
// `npm run test:faults`. Replay a failing plan with FAULT_SEED=<printed seed>.
import { describe, it } from 'vitest';
import { runKillAnywhere } from './kill-anywhere.test-cases.ts';
import { faultProfile } from './profile.ts';

const profile = faultProfile();

describe('kill anywhere', () => {
  it(
    `${profile.killPoints} kill points chosen by fast-check (${profile.killLanes} lanes): every order ends once, nothing duplicated`,
    async () => {
      await runKillAnywhere({
        killPoints: profile.killPoints,
        lanes: profile.killLanes,
        label: profile.name,
      });
    },
    60 * 60_000,
  );
});
