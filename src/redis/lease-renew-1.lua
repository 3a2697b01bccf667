--[[
  Extends an order lease, only for the token that holds it.

  Input:
    KEYS[1] lease key
    ARGV[1] token   "<fence>:<owner>", the value written by lease-acquire-2.lua
    ARGV[2] ttl     new time to live, milliseconds

  Output:
    1 if extended, 0 if the lease expired or is held by another token (the caller lost it).
]]
local rcall = redis.call
if rcall("GET", KEYS[1]) == ARGV[1] then
  rcall("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
