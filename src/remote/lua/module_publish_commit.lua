-- SPDX-License-Identifier: BSD-3-Clause
-- module_publish_commit.lua: renames a complete upload over a module
-- filter's name, cancelling a pending rebuild (docs/DESIGN.md, Module
-- backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:publish:<16 hex digits>, the upload
-- KEYS[2]   name
-- KEYS[3]   {name}:rebuild, the marker
--
-- Reply: the integer 1. name keeps its time to live, if it has one.
-- Errors:
--   BGNOTFOUND   the upload expired before it was complete
--   WRONGTYPE    name holds another type of value (the upload is unlinked)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('BGNOTFOUND the upload expired before it was complete')
end
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'none' and t ~= redis.call('TYPE', KEYS[1]).ok then
  redis.call('UNLINK', KEYS[1])
  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a value of type ' .. t)
end
local ttl = redis.call('PTTL', KEYS[2])
local s = redis.call('HGET', KEYS[3], 'key')
if s then redis.call('UNLINK', s) end
redis.call('DEL', KEYS[3])
redis.call('UNLINK', KEYS[2])
redis.call('RENAME', KEYS[1], KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) else redis.call('PERSIST', KEYS[2]) end
return 1
