--[[
  Claims an exchange order (its unique_reference) for one order_id, so that two orders never adopt the same
  exchange order (two in-doubt creates with identical pair, address and amount would otherwise both match it).
  A reference claimed by another order_id stays theirs.

  Input:
    KEYS[1] claim key      e.g. reference-claim:<unique_reference>
    ARGV[1] order id       the claimant
    ARGV[2] retention      milliseconds the claim is kept

  Output:
    1 when the reference is (now or already) claimed by ARGV[1], else 0.
]]
local rcall = redis.call
if rcall("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
  return 1
end
if rcall("GET", KEYS[1]) == ARGV[1] then
  rcall("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
