--[[
  Claims the cooldown window for one actionable-quote request shape (mode, pair, amount), or says how long
  the window that someone else claimed has left. A claim made with a token can be extended by the same token
  (while its request is about to leave, and once more when it has completed, so the window runs from the moment
  the exchange has certainly seen the request); without a token the call only claims.

  Input:
    KEYS[1] cooldown key   e.g. quote-cooldown:<mode>:<pair>:<normalized amount>
    ARGV[1] window         milliseconds from now
    ARGV[2] token          the claimant's token, or "" for a plain claim

  Output:
    -1 if the window is now claimed (or extended) by this call, else the remaining milliseconds of the current window.
]]
local rcall = redis.call
local token = ARGV[2]
if token == nil or token == "" then token = "1" end
if rcall("SET", KEYS[1], token, "PX", ARGV[1], "NX") then
  return -1
end
if ARGV[2] ~= nil and ARGV[2] ~= "" and rcall("GET", KEYS[1]) == ARGV[2] then
  rcall("PEXPIRE", KEYS[1], ARGV[1])
  return -1
end
local remaining = rcall("PTTL", KEYS[1])
if remaining < 0 then
  -- A key without expiry would block this quote forever: give it one window from now.
  rcall("PEXPIRE", KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return remaining
