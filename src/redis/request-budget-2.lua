--[[
  One admission decision (or one penalty) of the per-API-key request budget that every worker replica shares.
  GCRA on the Redis clock, so replicas with skewed clocks still agree. One decision may admit several waiting
  requests at once: exactly as many as the same number of single admissions in a row at this instant would.

  Input:
    KEYS[1] tat key       theoretical arrival time of the next request, integer microseconds (Redis TIME)
    KEYS[2] penalty key   present while the exchange has throttled this API key; its PTTL is the remaining back-off
    ARGV[1] operation     "acquire" or "penalize"
    acquire:
      ARGV[2] interval_us   emission interval in microseconds (window / sustained rate), integer
      ARGV[3] capacity      requests this priority may take back to back from an idle budget, integer >= 1
      ARGV[4] count         requests asking together (optional, default 1), integer >= 1
    penalize:
      ARGV[2] back_off_ms   how long every replica holds this key (a 429's Retry-After), integer

  Output:
    {admitted, wait_us}: admitted is how many of the count are admitted (0 to count; 1 or 0 without a count);
    wait_us is how long the caller should wait before asking again (0 if any was admitted);
    a penalty answers {1, the back-off still to run in microseconds}.

  Invariants: each admission moves the TAT by exactly one interval; a refusal changes nothing; a penalty only ever
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
local count = tonumber(ARGV[4] or '1')
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
-- The i-th admission in a row is allowed while tat + i * interval - capacity * interval <= now.
local admitted = math.min(count, math.floor((now - tat) / interval) + capacity)
if admitted < 1 then
  return {0, tat + interval - capacity * interval - now}
end
local new_tat = tat + admitted * interval
-- string.format keeps the integer exact (a bare Lua number would be written in %.14g and lose microseconds)
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.floor((new_tat - now) / 1000) + 1000)
return {admitted, 0}
