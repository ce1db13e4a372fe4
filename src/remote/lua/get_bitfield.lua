-- SPDX-License-Identifier: BSD-3-Clause
-- get_bitfield.lua: queries a batch of keys in a bitmap filter with
-- BITFIELD_RO GET u1 (docs/PROTOCOL.md). The same contract as
-- get_setbit.lua, which is faster (it stops at a key's first clear bit)
-- and is the client's default; this one is kept for the bench.
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<generation>, the generation the client knows
-- ARGV[1]   the client's generation     ARGV[2]  k (hashes)
-- ARGV[3]   m (bits)                    ARGV[4]  seed
-- ARGV[5]   the client's lineage
-- ARGV[6]   ignored ("0")               ARGV[7]  "0"
-- ARGV[8..] count * k bit positions, key after key
--
-- Reply: an array of count integers, 1 where all of the key's bits are set
-- (maybe present), 0 where one is clear (absent); then, only if the
-- generation moved on, one more element: the current generation (a string).
-- The generation may have moved on under the same shape (a publish or a
-- rebuild that kept m, k, seed and the lineage): the script then uses the
-- current generation's bits, {name}:bits:<meta generation>, not KEYS[2].
-- Writes nothing.
--
-- Errors:
--   BGNOTFOUND   the meta hash or the bit array is missing
--   BGSTALE      the filter was re-created or reshaped (another lineage,
--                m, k or seed than the client's)
--   ERR bloomgate: the bit array has ... bytes   the bits are damaged
--   WRONGTYPE    a key holds another type
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
local k = tonumber(ARGV[2])
local nk = tonumber(ARGV[7])
local count = (#ARGV - 7) / (k + nk)
local out = {}
local hits = 0
-- BITFIELD calls of at most 1024 operations (Lua's unpack has a bound).
local total = count * k
local bit = {}
local c = 1
while c <= total do
  local last = math.min(c + 1023, total)
  local a = {}
  local q = 0
  for p = c, last do
    a[q + 1] = 'GET'; a[q + 2] = 'u1'; a[q + 3] = ARGV[p + 7]; q = q + 3
  end
  local r = redis.call('BITFIELD_RO', bits, unpack(a))
  for p = 1, #r do bit[c + p - 1] = r[p] end
  c = last + 1
end
for key = 1, count do
  local here = 1
  for j = (key - 1) * k + 1, key * k do if bit[j] == 0 then here = 0 end end
  out[key] = here
end
if moved then out[#out + 1] = g end
return out
