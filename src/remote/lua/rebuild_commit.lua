-- SPDX-License-Identifier: BSD-3-Clause
-- rebuild_commit.lua: makes the pending rebuild the filter's current
-- generation and deletes the old bits (docs/PROTOCOL.md, Rebuild).
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<the rebuild's generation>
-- ARGV[1]   the rebuild's generation
--
-- Reply: the generation replaced (a string); ARGV[1] itself if it is
-- current already (a retry of a commit whose reply was lost). The meta
-- hash's generation, bits, hashes, seed, capacity, error_rate and items
-- become the next_* values, which are deleted.
--
-- Errors:
--   BGNOTFOUND   the meta hash is missing
--   BGSTALE      the rebuild was aborted or replaced, or its bits were
--                lost (then it is cancelled)

local h = redis.call('HMGET', KEYS[1], 'generation', 'next', 'next_bits', 'next_hashes',
  'next_seed', 'next_capacity', 'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
if not h[1] then return redis.error_reply('BGNOTFOUND filter does not exist') end
if h[1] == ARGV[1] then return h[1] end
if h[2] ~= ARGV[1] then
  return redis.error_reply('BGSTALE the rebuild was aborted or replaced')
end
-- Its bit array is intact (ceil(next_bits / 8) bytes). If it was lost
-- (deleted, evicted, overwritten) the rebuild cannot be completed or
-- committed: it is cancelled, and the rebuilder told so.
do
  local size = redis.call('STRLEN', KEYS[2])
  local want = math.floor((tonumber(h[3]) + 7) / 8)
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
redis.call('DEL', string.sub(KEYS[1], 1, -5) .. 'bits:' .. h[1])
redis.call('HSET', KEYS[1], 'generation', h[2], 'bits', h[3], 'hashes', h[4], 'seed', h[5],
  'capacity', h[6], 'error_rate', h[7], 'items', h[8])
redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes', 'next_seed', 'next_capacity',
  'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
return h[1]
