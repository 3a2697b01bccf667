--[[
  Acquires the leases of many orders in one run (a partition's restore): for each order exactly what
  lease-acquire-2.lua does for one, so one round trip and one script run stand for a hundred.

  Input (the number of KEYS is given per call: "-n" in the file name):
    KEYS[2i-1] the i-th order's lease key      e.g. lease:{orderId}        value "<fence>:<owner>"
    KEYS[2i]   the i-th order's fence counter  e.g. lease:{orderId}:fence

    ARGV[1]    owner            who drives the orders (unique per process)
    ARGV[2]    ttl              lease time to live, milliseconds
    ARGV[3]    fenceRetention   milliseconds a counter survives without an acquire, "0" = forever
    ARGV[3+i]  minFence         the i-th order's highest fence durably recorded elsewhere (Kafka), "0" if none

  Output:
    one integer per order, in the order given: its fence when granted, 0 when its lease is held by anyone
    (including this owner). A fence is never 0 (the first one handed out is 1), so 0 means "not granted".

  The keys of one call belong to many orders, so to many hash slots: a single primary (a URL, a Sentinel set) runs
  it as is; on a Redis Cluster the client splits a call into one run per slot first (slot-batches.ts).
]]
local rcall = redis.call
local owner, ttl, retention = ARGV[1], ARGV[2], tonumber(ARGV[3])
local granted = {}
for i = 1, #KEYS / 2 do
  local leaseKey, counterKey = KEYS[2 * i - 1], KEYS[2 * i]
  if rcall("EXISTS", leaseKey) == 1 then
    granted[i] = 0
  else
    local fence = rcall("INCR", counterKey)
    local minFence = tonumber(ARGV[3 + i])
    if fence <= minFence then
      fence = minFence + 1
      -- string.format: a bare Lua number would be written as "1e+15" once it is large.
      rcall("SET", counterKey, string.format("%d", fence))
    end
    if retention > 0 then
      rcall("PEXPIRE", counterKey, ARGV[3])
    else
      rcall("PERSIST", counterKey)
    end
    rcall("SET", leaseKey, string.format("%d", fence) .. ":" .. owner, "PX", ttl)
    granted[i] = fence
  end
end
return granted
