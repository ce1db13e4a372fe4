-- SPDX-License-Identifier: BSD-3-Clause
-- add_bitfield.lua: adds a batch of keys to a bitmap filter with BITFIELD
-- SET u1 (docs/PROTOCOL.md). The same contract as add_setbit.lua, which
-- costs the same and is the client's default (docs/DESIGN.md, Remote
-- client); this one is kept for the bench.
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<generation>, the generation the client knows
-- ARGV[1]   the client's generation     ARGV[2]  k (hashes)
-- ARGV[3]   m (bits)                    ARGV[4]  seed
-- ARGV[5]   the client's lineage
-- ARGV[6]   the pending rebuild's generation the client knows ("0": none)
-- ARGV[7]   that rebuild's k, nk ("0": none)
-- ARGV[8..] count * k bit positions, key after key, for the current bits;
--           then count * nk positions for the rebuild's bits
--
-- Reply: an array of count integers, 1 where the key was new (one of its
-- bits was 0), 0 where it was there already; then, only if the generation
-- moved on, one more element: the current generation (a string).
-- The generation may have moved on under the same shape (a publish or a
-- rebuild that kept m, k, seed and the lineage): the script then uses the
-- current generation's bits, {name}:bits:<meta generation>, not KEYS[2].
-- Adds the new keys to the meta hash's `items` (a pending rebuild's to
-- `next_items`).
--
-- Errors (nothing is written):
--   BGNOTFOUND   the meta hash or the bit array is missing
--   BGSTALE      the filter was re-created or reshaped (another lineage,
--                m, k or seed than the client's)
--   ERR bloomgate: the bit array has ... bytes   the bits are damaged
--   WRONGTYPE    a key holds another type
--   BGREBUILD    the pending rebuild is not the one the client named in
--                ARGV[6]: read `next` (and its shape) again and retry
-- A pending rebuild whose lease ran out, or whose bits were lost, is
-- cancelled first (its bits unlinked, its next_* fields deleted).
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
-- >>> next_intact
-- So is one whose bit array was lost (deleted, evicted, overwritten),
-- before anything is written, rather than grown back nearly empty by
-- SETBIT and later committed without the keys added before the loss. A
-- client that named it then gets BGREBUILD below; the rebuilder, BGSTALE.
if h[6] then
  do
    local size = redis.call('STRLEN', pre .. 'bits:' .. h[6])
    local want = math.floor((tonumber(redis.call('HGET', KEYS[1], 'next_bits')) + 7) / 8)
    if size == 0 then
      redis.call('UNLINK', pre .. 'bits:' .. h[6])
      redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes', 'next_seed', 'next_capacity',
        'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
      h[6] = nil
    elseif size ~= want then
      redis.call('UNLINK', pre .. 'bits:' .. h[6])
      redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes', 'next_seed', 'next_capacity',
        'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
      h[6] = nil
    end
  end
end
-- <<< next_intact
-- The client computed positions for exactly the pending rebuild, or it
-- reads it again and retries.
if (h[6] or '0') ~= ARGV[6] then return redis.error_reply('BGREBUILD the pending rebuild changed') end
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
    a[q + 1] = 'SET'; a[q + 2] = 'u1'; a[q + 3] = ARGV[p + 7]; a[q + 4] = 1; q = q + 4
  end
  local r = redis.call('BITFIELD', bits, unpack(a))
  for p = 1, #r do bit[c + p - 1] = r[p] end
  c = last + 1
end
for key = 1, count do
  local fresh = 0
  for j = (key - 1) * k + 1, key * k do if bit[j] == 0 then fresh = 1 end end
  out[key] = fresh
  hits = hits + fresh
end
-- >>> add_next
if hits > 0 then redis.call('HINCRBY', KEYS[1], 'items', hits) end
-- During a rebuild the same keys go into its bits too.
if h[6] then
  local nb = pre .. 'bits:' .. h[6]
  local i = 8 + count * k
  local nh = 0
  for key = 1, count do
    local fresh = 0
    for j = 1, nk do
      if redis.call('SETBIT', nb, ARGV[i], 1) == 0 then fresh = 1 end
      i = i + 1
    end
    nh = nh + fresh
  end
  if nh > 0 then redis.call('HINCRBY', KEYS[1], 'next_items', nh) end
end
-- <<< add_next
if moved then out[#out + 1] = g end
return out
