-- SPDX-License-Identifier: BSD-3-Clause
-- rebuild_begin.lua: starts a rebuild of a bitmap filter: a new generation,
-- possibly of another shape, that every add writes too until it is
-- committed or aborted (docs/PROTOCOL.md, Rebuild). The client first made
-- its bits, ceil(m' / 8) zero bytes with a time to live.
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<generation>, the generation the client knows
-- ARGV[1]   the client's generation     ARGV[2]  k (hashes)
-- ARGV[3]   m (bits)                    ARGV[4]  seed
-- ARGV[5]   the client's lineage
-- KEYS[3]   {name}:bits:<the rebuild's generation>
-- ARGV[6]   the rebuild's generation
-- ARGV[7]   its m           ARGV[8]  its k           ARGV[9]  its seed
-- ARGV[10]  its bytes, ceil(m / 8)
-- ARGV[11]  its capacity    ARGV[12] its error_rate (%.17g)
-- ARGV[13]  the lease, ms
--
-- Reply: the current generation (a string). The meta hash gets next,
-- next_bits, next_hashes, next_seed, next_capacity, next_error_rate,
-- next_items 0, next_lease_ms and next_lease (now + the lease, ms of the
-- server's clock); the rebuild's bits get the meta hash's time to live, or
-- none.
--
-- Errors (KEYS[3] is deleted, except after the checks):
--   BGNOTFOUND   the meta hash or the bit array is missing
--   BGSTALE      the filter was re-created or reshaped (another lineage,
--                m, k or seed than the client's)
--   ERR bloomgate: the bit array has ... bytes   the bits are damaged
--   WRONGTYPE    a key holds another type
--   BGEXISTS     a rebuild is pending (and its lease has not run out)
--   ERR bloomgate: the bit array has the wrong size   (KEYS[3])
-- A pending rebuild whose lease ran out is cancelled first.
--
-- A block between "-- >>> <name>" and "-- <<< <name>" is the same in every
-- script that has it (remote.lua_scripts compares the copies).

-- >>> check_generation
-- The generation check: h[6] is the pending rebuild, if any.
local h = redis.call('HMGET', KEYS[1], 'generation', 'bits', 'hashes', 'seed', 'lineage', 'next')
local g = h[1]
if not g then return redis.error_reply('BGNOTFOUND filter does not exist') end
local pre = string.sub(KEYS[1], 1, -5)
local bits = KEYS[2]
local moved = false
if g ~= ARGV[1] then
  if h[5] ~= ARGV[5] or h[2] ~= ARGV[3] or h[3] ~= ARGV[2] or h[4] ~= ARGV[4] then
    return redis.error_reply('BGSTALE filter was re-created or reshaped: generation ' .. g ..
      ', this handle has ' .. ARGV[1])
  end
  -- Same shape and lineage: the positions are right for the current bits.
  bits = pre .. 'bits:' .. g
  moved = true
end
-- <<< check_generation
-- >>> bits_intact
-- The bit array is intact: a string of exactly ceil(m / 8) bytes. Every
-- bits key is made at that size and SETBIT below m never grows it, so a
-- missing key was deleted or evicted, and one of another size was
-- overwritten (or deleted and grown back by a SETBIT). Without this the
-- script would read a lost array as all zeros (false negatives) or grow it
-- back nearly empty. STRLEN fails with WRONGTYPE on another type. O(1).
do
  local size = redis.call('STRLEN', bits)
  local want = math.floor((tonumber(h[2]) + 7) / 8)
  if size == 0 then return redis.error_reply('BGNOTFOUND bit array is missing')
  elseif size ~= want then return redis.error_reply('ERR bloomgate: the bit array has ' .. size ..
    ' bytes, not the ' .. want .. ' of ' .. h[2] .. ' bits') end
end
-- <<< bits_intact
-- >>> lease
-- A pending rebuild whose lease (next_lease, ms of the server's clock) ran
-- out is cancelled: its rebuilder is taken for dead. One begun without a
-- lease (no next_lease) never runs out.
if h[6] then
  local dl = tonumber(redis.call('HGET', KEYS[1], 'next_lease') or '0')
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if dl > 0 and now > dl then
    redis.call('UNLINK', pre .. 'bits:' .. h[6])
    redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes', 'next_seed', 'next_capacity',
      'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
    h[6] = nil
  end
end
-- <<< lease
if h[6] then
  redis.call('DEL', KEYS[3])
  return redis.error_reply('BGEXISTS a rebuild is pending: generation ' .. h[6])
end
if redis.call('STRLEN', KEYS[3]) ~= tonumber(ARGV[10]) then
  redis.call('DEL', KEYS[3])
  return redis.error_reply('ERR bloomgate: the bit array has the wrong size')
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) else redis.call('PERSIST', KEYS[3]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'next', ARGV[6], 'next_bits', ARGV[7], 'next_hashes', ARGV[8],
  'next_seed', ARGV[9], 'next_capacity', ARGV[11], 'next_error_rate', ARGV[12],
  'next_items', '0', 'next_lease_ms', ARGV[13],
  'next_lease', string.format('%.0f', now + tonumber(ARGV[13])))
return g
