// Fuzzing the command decoder in-process: any Kafka value and key gives either a valid command whose key agrees
// with its order_id, or a specific rejection (malformed / unknown_type with a message naming the problem).
// Never a throw, never a silent pass. The same inputs go through a real worker in fuzz-worker.integration.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/contract/commands.ts';
import { fuzzedCommand } from './fuzz-inputs.ts';
import { faultProfile, replayable } from './profile.ts';
import { recordFigures } from './harness.ts';

const profile = faultProfile();

describe('command decoding under fuzzing', () => {
  it(`${profile.fuzzRuns} fuzzed command messages: a valid command or a specific rejection, never a throw`, () => {
    const tally = { valid: 0, malformed: 0, unknown_type: 0, too_large: 0, unauthorized: 0 };
    fc.assert(
      fc.property(fuzzedCommand(fc.constantFrom('o-1', 'order:2@x', 'a'.repeat(128))), (input) => {
        const result = parseCommand(input.value, input.key);
        if (result.ok) {
          tally.valid++;
          expect(input.key === null || input.key === result.command.order_id).toBe(true);
          expect(result.command.order_id).toMatch(/^[A-Za-z0-9._:@-]{1,128}$/);
        } else {
          tally[result.reason]++;
          expect(['malformed', 'unknown_type', 'too_large']).toContain(result.reason);
          expect(result.message.length).toBeGreaterThan(0);
          // The rejection names what is wrong: a field path, the key, the type or JSON itself.
          expect(result.message).toMatch(/:|key|type|JSON|object/);
        }
        // Deterministic: the same bytes always decode the same way.
        expect(parseCommand(input.value, input.key)).toEqual(result);
      }),
      replayable(profile.fuzzRuns),
    );
    recordFigures({ test: 'fuzz-commands-decoder', runs: profile.fuzzRuns, ...tally });
    expect(tally.malformed + tally.unknown_type).toBeGreaterThan(profile.fuzzRuns / 2);
  });
});
