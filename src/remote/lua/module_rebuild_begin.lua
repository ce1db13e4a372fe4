-- SPDX-License-Identifier: BSD-3-Clause
-- module_rebuild_begin.lua: reserves a module filter's rebuild and the
-- marker naming it, both with the lease as their time to live
-- (docs/DESIGN.md, Module backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   name
-- KEYS[2]   {name}:rebuild, the marker
-- KEYS[3]   {name}:rebuild:<16 hex digits>, the rebuild
-- ARGV[1]   the lease, ms
-- ARGV[2..] BF.RESERVE's arguments after the key
--
-- Reply: the integer 1. The marker holds key (KEYS[3]) and lease.
-- Errors:
--   BGNOTFOUND   name does not exist
--   BGEXISTS     a rebuild is pending (the marker names a key that exists)

if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('BGNOTFOUND filter does not exist') end
local s = redis.call('HGET', KEYS[2], 'key')
if s and redis.call('EXISTS', s) == 1 then return redis.error_reply('BGEXISTS a rebuild is pending') end
redis.call('BF.RESERVE', KEYS[3], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'key', KEYS[3], 'lease', ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
