-- SPDX-License-Identifier: BSD-3-Clause
-- create.lua: makes a bitmap filter current by writing its meta hash over a
-- bit array the client made first (docs/PROTOCOL.md, Creation).
--
-- KEYS[1]   {name}:meta
-- KEYS[2]   {name}:bits:<generation>: a string of ceil(m / 8) zero bytes
--           (SET, then SETRANGE at the last byte), with a time to live
-- ARGV[1]   the generation (also the lineage)
-- ARGV[2]   m (bits)        ARGV[3]  k (hashes)      ARGV[4]  seed
-- ARGV[5]   the bytes, ceil(m / 8)
-- ARGV[6]   capacity        ARGV[7]  error_rate (%.17g)
-- ARGV[8]   place: a shard's "j/S", or "" for a filter of its own
--
-- Reply: the status OK. The meta hash holds format 1, variant standard,
-- bits, hashes, seed, generation, items 0, capacity, error_rate, lineage
-- (and shard); the bits lose their time to live.
--
-- Errors (the bits are deleted):
--   BGEXISTS     {name}:meta or {name}:shards exists
--   ERR bloomgate: the bit array has the wrong size

if redis.call('EXISTS', KEYS[1], string.sub(KEYS[1], 1, -5) .. 'shards') > 0 then
  redis.call('DEL', KEYS[2])
  return redis.error_reply('BGEXISTS filter exists')
end
if redis.call('STRLEN', KEYS[2]) ~= tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[2])
  return redis.error_reply('ERR bloomgate: the bit array has the wrong size')
end
redis.call('HSET', KEYS[1], 'format', '1', 'variant', 'standard', 'bits', ARGV[2],
  'hashes', ARGV[3], 'seed', ARGV[4], 'generation', ARGV[1], 'items', '0',
  'capacity', ARGV[6], 'error_rate', ARGV[7], 'lineage', ARGV[1])
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'shard', ARGV[8]) end
redis.call('PERSIST', KEYS[2])
return 'OK'
