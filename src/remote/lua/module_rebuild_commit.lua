-- SPDX-License-Identifier: BSD-3-Clause
-- module_rebuild_commit.lua: renames a module filter's rebuild over its
-- name (docs/DESIGN.md, Module backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:rebuild, the marker
-- KEYS[2]   {name}:rebuild:<16 hex digits>, the rebuild
-- KEYS[3]   name
-- ARGV[1]   the lease, ms
--
-- Reply: the integer 1. name keeps its time to live, if it has one; the
-- marker then holds only done (KEYS[2]) for the lease, so that a commit
-- retried after a lost reply finds it and is answered 1 again.
-- Errors:
--   BGNOTFOUND   name was dropped during the rebuild
--   BGSTALE      the marker does not name KEYS[2], or KEYS[2] is gone
--
-- A block between "-- >>> <name>" and "-- <<< <name>" is the same in every
-- script that has it (remote.lua_scripts compares the copies).

local ttl = redis.call('PTTL', KEYS[3])
if ttl == -2 then
  return redis.error_reply('BGNOTFOUND filter was dropped during the rebuild')
end
if redis.call('HGET', KEYS[1], 'done') == KEYS[2] then return 1 end
-- >>> rebuild_mine
if redis.call('HGET', KEYS[1], 'key') ~= KEYS[2] or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('BGSTALE the rebuild was aborted, committed, replaced or its lease ran out')
end
-- <<< rebuild_mine
redis.call('DEL', KEYS[1])
redis.call('UNLINK', KEYS[3])
redis.call('RENAME', KEYS[2], KEYS[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) else redis.call('PERSIST', KEYS[3]) end
redis.call('HSET', KEYS[1], 'done', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
