-- SPDX-License-Identifier: BSD-3-Clause
-- drop.lua: deletes a bitmap filter: its meta hash, its bits and a pending
-- rebuild's bits (docs/PROTOCOL.md). Damaged bits do not stop it.
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<generation>, the generation the client knows
-- ARGV[1]   the client's generation     ARGV[2]  k (hashes)
-- ARGV[3]   m (bits)                    ARGV[4]  seed
-- ARGV[5]   the client's lineage
--
-- Reply: the number of keys DEL removed of the meta hash and the current
-- bits (2, or 1 if the bits were already gone).
--
-- Errors (nothing is deleted):
--   BGNOTFOUND   the meta hash is missing
--   BGSTALE      the filter was re-created or reshaped (another lineage,
--                m, k or seed than the client's)
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
if h[6] then redis.call('DEL', pre .. 'bits:' .. h[6]) end
return redis.call('DEL', KEYS[1], bits)
