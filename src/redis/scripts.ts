// Loads our Lua commands from the .lua files next to this module and registers them on an ioredis client.
// File names end in "-<number of keys>.lua" (the BullMQ convention), so the KEYS count lives with the script; "-n.lua"
// when each call says how many KEYS it passes (its first argument), as a script over many orders at once does.
// ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT, so scripts survive a Redis that restarted empty.
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { RedisScriptCommands } from './redis-port.ts';

const scriptFiles: Record<keyof RedisScriptCommands, string> = {
  leaseAcquire: 'lease-acquire-2.lua',
  leaseAcquireMany: 'lease-acquire-many-n.lua',
  leaseRenew: 'lease-renew-1.lua',
  leaseRelease: 'lease-release-1.lua',
  leaseHolder: 'lease-holder-1.lua',
  quoteCooldown: 'quote-cooldown-1.lua',
  createInFlight: 'create-in-flight-1.lua',
  referenceClaim: 'reference-claim-1.lua',
  requestBudget: 'request-budget-2.lua',
};

export interface LuaScript {
  readonly name: keyof RedisScriptCommands;
  /** undefined: given by each call, as its first argument. */
  readonly numberOfKeys: number | undefined;
  readonly lua: string;
}

function load(name: keyof RedisScriptCommands, file: string): LuaScript {
  const match = /-(\d+|n)\.lua$/.exec(file);
  if (!match?.[1]) throw new Error(`Lua file ${file} must end in -<number of keys>.lua or -n.lua`);
  return {
    name,
    numberOfKeys: match[1] === 'n' ? undefined : Number(match[1]),
    lua: readFileSync(new URL(`./${file}`, import.meta.url), 'utf8'),
  };
}

let loaded: readonly LuaScript[] | undefined;

export function luaScripts(): readonly LuaScript[] {
  loaded ??= Object.entries(scriptFiles).map(([name, file]) => load(name as keyof RedisScriptCommands, file));
  return loaded;
}

/** Registers every Lua command on the client; from then on it satisfies RedisScriptCommands. */
export function defineRedisScripts(redis: Redis): Redis & RedisScriptCommands {
  for (const script of luaScripts()) {
    redis.defineCommand(script.name, {
      ...(script.numberOfKeys === undefined ? {} : { numberOfKeys: script.numberOfKeys }),
      lua: script.lua,
    });
  }
  return redis as Redis & RedisScriptCommands;
}
