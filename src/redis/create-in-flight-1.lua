--[[
  The POST /orders/ calls that are out right now, per sibling key (the orders a lookup could mistake for one
  another: one mode, pair and withdraw address). A lookup of a create in doubt takes no exchange order while
  another order's POST of the same key is out: that order may be about to claim what it created. Marks expire on
  their own (the longest a POST can stay out), so a replica that died leaves nothing behind for long.

  Input:
    KEYS[1] sibling key   a sorted set: member = order id, score = expiry (Redis TIME, ms)
    ARGV[1] operation     "open", "close" or "others"
    ARGV[2] order id
    open:
      ARGV[3] ttl_ms      how long the mark lasts at most, integer >= 1

  Output:
    open, close: 1
    others: the milliseconds until the last mark of an order other than ARGV[2] expires; 0 when none is out

  Invariants: expired marks are dropped on every call; the set expires with its last mark.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local op = ARGV[1]
if op == 'open' then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
elseif op == 'close' then
  redis.call('ZREM', KEYS[1], ARGV[2])
elseif op == 'others' then
  local marks = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  local longest = 0
  for i = 1, #marks, 2 do
    if marks[i] ~= ARGV[2] then
      local remaining = tonumber(marks[i + 1]) - now
      if remaining > longest then longest = remaining end
    end
  end
  return longest
else
  return redis.error_reply('create-in-flight-1.lua: unknown operation')
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if #last == 2 then
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - now))
end
return 1
