--[[
  Reads who holds an order lease and for how long, in one atomic step.

  Input:
    KEYS[1] lease key

  Output:
    { "<fence>:<owner>", pttl in milliseconds } or nil when nobody holds the lease.
]]
local value = redis.call("GET", KEYS[1])
if not value then
  return nil
end
return { value, redis.call("PTTL", KEYS[1]) }
