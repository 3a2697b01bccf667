--[[
  Releases an order lease, only for the token that holds it.

  Input:
    KEYS[1] lease key
    ARGV[1] token   "<fence>:<owner>", the value written by lease-acquire-2.lua

  Output:
    1 if deleted, 0 if the lease expired or is held by another token (nothing is touched).
]]
local rcall = redis.call
if rcall("GET", KEYS[1]) == ARGV[1] then
  rcall("DEL", KEYS[1])
  return 1
end
return 0
