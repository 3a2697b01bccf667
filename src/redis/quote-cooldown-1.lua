--[[
  Claims the cooldown window for one actionable-quote request shape (mode, pair, amount), or says how long
  the window that someone else claimed has left.

  Input:
    KEYS[1] cooldown key   e.g. quote-cooldown:<mode>:<pair>:<normalized amount>
    ARGV[1] cooldown       window length, milliseconds

  Output:
    -1 if the window was claimed by this call, else the remaining milliseconds of the current window.
]]
local rcall = redis.call
if rcall("SET", KEYS[1], "1", "PX", ARGV[1], "NX") then
  return -1
end
local remaining = rcall("PTTL", KEYS[1])
if remaining < 0 then
  -- A key without expiry would block this quote forever: give it one window from now.
  rcall("PEXPIRE", KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return remaining
