--[[
  One admission decision (or one penalty) of the per-API-key request budget that every worker replica shares.
  GCRA on the Redis clock, so replicas with skewed clocks still agree.

  Input:
    KEYS[1] tat key       theoretical arrival time of the next request, integer microseconds (Redis TIME)
    KEYS[2] penalty key   present while the exchange has throttled this API key; its PTTL is the remaining back-off
    ARGV[1] operation     "acquire" or "penalize"
    acquire:
      ARGV[2] interval_us   emission interval in microseconds (window / sustained rate), integer
      ARGV[3] capacity      requests this priority may take back to back from an idle budget, integer >= 1
    penalize:
      ARGV[2] back_off_ms   how long every replica holds this key (a 429's Retry-After), integer

  Output:
    {admitted (1|0), wait_us}: wait_us is how long the caller should wait before asking again (0 if admitted);
    a penalty answers {1, the back-off still to run in microseconds}.

  Invariants: an admission moves the TAT by exactly one interval; a refusal changes nothing; a penalty only ever
  lengthens the back-off; keys expire once idle, so an unused API key leaves nothing behind.
]]

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

if ARGV[1] == 'penalize' then
  local back_off = tonumber(ARGV[2])
  local remaining = redis.call('PTTL', KEYS[2])
  if remaining < back_off then
    redis.call('SET', KEYS[2], '1', 'PX', back_off)
    remaining = back_off
  end
  return {1, remaining * 1000}
end

local penalty = redis.call('PTTL', KEYS[2])
if penalty > 0 then
  return {0, penalty * 1000}
end

local interval = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local new_tat = tat + interval
local allow_at = new_tat - capacity * interval
if allow_at > now then
  return {0, allow_at - now}
end
-- string.format keeps the integer exact (a bare Lua number would be written in %.14g and lose microseconds)
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.floor((new_tat - now) / 1000) + 1000)
return {1, 0}
