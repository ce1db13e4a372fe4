-- SPDX-License-Identifier: BSD-3-Clause
-- publish.lua: makes an uploaded bit array the filter's current generation
-- (docs/PROTOCOL.md, Publish). The client first wrote the whole array to a
-- new {name}:bits:<generation> (SET with a time to live, SETRANGE).
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<generation>, the upload
-- ARGV[1]   the new generation
-- ARGV[2]   m (bits)        ARGV[3]  k (hashes)      ARGV[4]  seed
-- ARGV[5]   the bytes, ceil(m / 8)
-- ARGV[6]   capacity        ARGV[7]  error_rate (%.17g)
-- ARGV[8]   items
-- ARGV[9]   place: a shard's "j/S", or "" for a filter of its own
--
-- Reply: the status OK. The old generation's bits and a pending rebuild
-- (its bits and next_* fields) are deleted; the lineage is kept (a new
-- filter's is the generation); the upload gets the meta hash's time to
-- live, or none.
--
-- Errors (the upload is deleted, except after BGNOTFOUND):
--   BGNOTFOUND   the upload expired before it was complete
--   BGEXISTS     a sharded filter has this name ({name}:shards), or the
--                meta hash is a shard and ARGV[9] another place or none,
--                or ARGV[9] is a place and the seed differs
--   ERR bloomgate: the uploaded bit array has the wrong size
--   ERR bloomgate: the meta hash has an unknown format

if redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('BGNOTFOUND the upload expired before it was complete')
end
if redis.call('STRLEN', KEYS[2]) ~= tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[2])
  return redis.error_reply('ERR bloomgate: the uploaded bit array has the wrong size')
end
local pre = string.sub(KEYS[1], 1, -5)
local h = redis.call('HMGET', KEYS[1], 'generation', 'lineage', 'next', 'format', 'seed', 'shard')
if not h[1] and redis.call('EXISTS', pre .. 'shards') == 1 then
  redis.call('DEL', KEYS[2])
  return redis.error_reply('BGEXISTS a sharded filter has this name')
end
local lineage = ARGV[1]
if h[1] then
  if h[4] ~= '1' then
    redis.call('DEL', KEYS[2])
    return redis.error_reply('ERR bloomgate: the meta hash has an unknown format')
  end
  -- A shard is replaced only by the same place with the same seed.
  local why = nil
  if ARGV[9] == '' and h[6] then
    why = 'it is shard ' .. h[6] .. ' of a sharded filter'
  elseif ARGV[9] ~= '' and h[6] and h[6] ~= ARGV[9] then
    why = 'it is shard ' .. h[6] .. ', not ' .. ARGV[9]
  elseif ARGV[9] ~= '' and h[5] ~= ARGV[4] then
    why = 'its seed is ' .. h[5] .. ', not ' .. ARGV[4]
  end
  if why then
    redis.call('DEL', KEYS[2])
    return redis.error_reply('BGEXISTS ' .. KEYS[1] .. ': ' .. why)
  end
  if h[1] ~= ARGV[1] then redis.call('DEL', pre .. 'bits:' .. h[1]) end
  if h[3] then redis.call('DEL', pre .. 'bits:' .. h[3]) end
  if h[2] then lineage = h[2] end
  redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes', 'next_seed', 'next_capacity',
    'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) else redis.call('PERSIST', KEYS[2]) end
redis.call('HSET', KEYS[1], 'format', '1', 'variant', 'standard', 'bits', ARGV[2],
  'hashes', ARGV[3], 'seed', ARGV[4], 'generation', ARGV[1], 'items', ARGV[8],
  'capacity', ARGV[6], 'error_rate', ARGV[7], 'lineage', lineage)
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'shard', ARGV[9]) end
return 'OK'
