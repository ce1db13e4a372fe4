-- SPDX-License-Identifier: BSD-3-Clause
-- module_rebuild_abort.lua: cancels a module filter's pending rebuild: the
-- rebuild and its marker (docs/DESIGN.md, Module backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:rebuild, the marker
-- ARGV[1]   the rebuild's key, or "" for whichever is pending
--
-- Reply: 1 if it cancelled one, 0 if no such rebuild is pending.
-- Errors: none of its own.

local s = redis.call('HGET', KEYS[1], 'key')
if not s or (ARGV[1] ~= '' and s ~= ARGV[1]) then return 0 end
redis.call('UNLINK', s)
redis.call('DEL', KEYS[1])
return 1
