--[[
  Acquires an order lease (SET NX PX semantics) and hands out the next fencing token.

  Input:
    KEYS[1] lease key        e.g. lease:{orderId}        value "<fence>:<owner>"
    KEYS[2] fence counter    e.g. lease:{orderId}:fence  (same hash tag: one cluster slot)

    ARGV[1] owner            who drives the order (unique per process)
    ARGV[2] ttl              lease time to live, milliseconds
    ARGV[3] minFence         highest fence durably recorded elsewhere (Kafka) for this order, "0" if none
    ARGV[4] fenceRetention   milliseconds the counter survives without an acquire, "0" = forever

  Output:
    the fence (integer) when granted, nil when the lease is held by anyone (including this owner).

  The fence is max(INCR counter, minFence + 1), written back to the counter, so it keeps increasing even when
  Redis restarted empty or the counter expired, as long as the caller passes what it recorded.
]]
local rcall = redis.call
if rcall("EXISTS", KEYS[1]) == 1 then
  return nil
end
local fence = rcall("INCR", KEYS[2])
local minFence = tonumber(ARGV[3])
if fence <= minFence then
  fence = minFence + 1
  -- string.format: a bare Lua number would be written as "1e+15" once it is large.
  rcall("SET", KEYS[2], string.format("%d", fence))
end
if tonumber(ARGV[4]) > 0 then
  rcall("PEXPIRE", KEYS[2], ARGV[4])
else
  rcall("PERSIST", KEYS[2])
end
rcall("SET", KEYS[1], string.format("%d", fence) .. ":" .. ARGV[1], "PX", ARGV[2])
return fence
