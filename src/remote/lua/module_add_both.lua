-- SPDX-License-Identifier: BSD-3-Clause
-- module_add_both.lua: adds keys to a module filter and to whichever
-- rebuild is pending when it runs (docs/DESIGN.md, Module backend
-- scripts). A client sends it after an add whose HGET found the marker.
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   name
-- KEYS[2]   {name}:rebuild, the marker (hash: key, lease)
-- ARGV      the keys
--
-- Reply: BF.INSERT's results for name, one integer per key. A marker whose
-- rebuild is gone is deleted.
-- Errors: BF.INSERT's (ERR not found for a missing name, ...).
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
local out = insert(KEYS[1], 1)
local s = redis.call('HGET', KEYS[2], 'key')
if s then
  if redis.call('EXISTS', s) == 1 then insert(s, 1) else redis.call('DEL', KEYS[2]) end
end
return out
