-- SPDX-License-Identifier: BSD-3-Clause
-- rebuild_add.lua: the rebuilder adds a batch of keys (from its source) to
-- the pending rebuild only, and renews its lease (docs/PROTOCOL.md,
-- Rebuild).
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<the rebuild's generation>
-- ARGV[1]   the rebuild's generation
-- ARGV[2]   its k
-- ARGV[3..] count * k bit positions (the rebuild's m and seed), key after key
--
-- Reply: an array of count integers, 1 where the key was new to the
-- rebuild. Adds them to next_items; sets next_lease to now + next_lease_ms.
--
-- Errors:
--   BGNOTFOUND   the meta hash is missing
--   BGSTALE      the rebuild was committed, aborted or replaced (meta
--                `next` is not ARGV[1]), or its bits were lost (then it
--                is cancelled: bits unlinked, next_* fields deleted)

local n = redis.call('HGET', KEYS[1], 'next')
if n ~= ARGV[1] then
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return redis.error_reply('BGNOTFOUND filter does not exist')
  end
  return redis.error_reply('BGSTALE the rebuild was committed, aborted or replaced')
end
-- Its bit array is intact (ceil(next_bits / 8) bytes). If it was lost
-- (deleted, evicted, overwritten) the rebuild cannot be completed or
-- committed: it is cancelled, and the rebuilder told so.
do
  local size = redis.call('STRLEN', KEYS[2])
  local want = math.floor((tonumber(redis.call('HGET', KEYS[1], 'next_bits')) + 7) / 8)
  if size == 0 then
    redis.call('UNLINK', KEYS[2]); redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes',
      'next_seed', 'next_capacity', 'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
    return redis.error_reply('BGSTALE the rebuild was cancelled: its bit array was lost (deleted, evicted or overwritten)')
  elseif size ~= want then
    redis.call('UNLINK', KEYS[2]); redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes',
      'next_seed', 'next_capacity', 'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
    return redis.error_reply('BGSTALE the rebuild was cancelled: its bit array was lost (deleted, evicted or overwritten)')
  end
end
local k = tonumber(ARGV[2])
local out = {}
local hits = 0
local i = 3
for key = 1, (#ARGV - 2) / k do
  local fresh = 0
  for j = 1, k do
    if redis.call('SETBIT', KEYS[2], ARGV[i], 1) == 0 then fresh = 1 end
    i = i + 1
  end
  out[key] = fresh
  hits = hits + fresh
end
if hits > 0 then redis.call('HINCRBY', KEYS[1], 'next_items', hits) end
local ms = redis.call('HGET', KEYS[1], 'next_lease_ms')
if ms then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[1], 'next_lease', string.format('%.0f', now + tonumber(ms)))
end
return out
