-- SPDX-License-Identifier: BSD-3-Clause
-- module_stage_commit.lua: gives a staged module filter its name unless
-- the name exists (docs/DESIGN.md, Module backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:staging:<16 hex digits>
-- KEYS[2]   name
--
-- Reply: 1 committed (RENAME, then PERSIST); 0 the name exists: the staged
-- filter is unlinked; -1 the staged filter expired or was dropped.
-- Errors: none of its own.

if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('UNLINK', KEYS[1])
  return 0
end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('PERSIST', KEYS[2])
return 1
