-- SPDX-License-Identifier: BSD-3-Clause
-- module_rebuild_add.lua: the rebuilder adds keys to its rebuild only, and
-- renews the lease of the rebuild and the marker (docs/DESIGN.md, Module
-- backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:rebuild, the marker
-- KEYS[2]   {name}:rebuild:<16 hex digits>, the rebuild
-- ARGV[1]   the lease, ms
-- ARGV[2..] the keys
--
-- Reply: BF.INSERT's results for the rebuild, one integer per key.
-- Errors:
--   BGSTALE      the marker does not name KEYS[2], or KEYS[2] is gone
--                (aborted, committed, replaced, or its lease ran out)
--
-- A block between "-- >>> <name>" and "-- <<< <name>" is the same in every
-- script that has it (remote.lua_scripts compares the copies).

-- >>> insert
-- BF.INSERT of ARGV[from..] in calls of at most 1000 items (Lua's unpack
-- has a bound); NOCREATE, so a missing filter is an error, not a new one.
local function insert(key, from)
  local out = {}
  for i = from, #ARGV, 1000 do
    local r = redis.call('BF.INSERT', key, 'NOCREATE', 'ITEMS',
      unpack(ARGV, i, math.min(i + 999, #ARGV)))
    for j = 1, #r do out[#out + 1] = r[j] end
  end
  return out
end
-- <<< insert
-- >>> rebuild_mine
if redis.call('HGET', KEYS[1], 'key') ~= KEYS[2] or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('BGSTALE the rebuild was aborted, committed, replaced or its lease ran out')
end
-- <<< rebuild_mine
local out = insert(KEYS[2], 2)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return out
