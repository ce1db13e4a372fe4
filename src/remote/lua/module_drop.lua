-- SPDX-License-Identifier: BSD-3-Clause
-- module_drop.lua: deletes a module filter and its pending rebuild. UNLINK,
-- so that a large filter is freed in the server's background thread
-- (docs/REDIS.md), not while every client waits.
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   name
-- KEYS[2]   {name}:rebuild, the marker
--
-- Reply: the number of keys UNLINK removed of name (1, or 0: no filter).
-- Errors: none of its own.

local s = redis.call('HGET', KEYS[2], 'key')
if s then redis.call('UNLINK', s) end
redis.call('DEL', KEYS[2])
return redis.call('UNLINK', KEYS[1])
