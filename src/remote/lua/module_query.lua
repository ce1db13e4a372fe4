-- SPDX-License-Identifier: BSD-3-Clause
-- module_query.lua: queries a module filter where BG.MEXISTS is missing
-- (RedisBloom) or not allowed: TYPE and BF.MEXISTS in one atomic step, so
-- a missing filter is an error, not "every key is absent" (docs/REMOTE.md,
-- Module backend: queries).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   name
-- ARGV      the keys
--
-- Reply: BF.MEXISTS's array, one integer per key (1000 keys per call).
-- Errors:
--   BGNOTFOUND   name does not exist
--   WRONGTYPE    name is not a filter: its type is neither bloomgate.so's
--                ('bloomgate') nor RedisBloom's ('MBbloom--')

local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return redis.error_reply('BGNOTFOUND filter does not exist') end
if t ~= 'bloomgate' and t ~= 'MBbloom--' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if #ARGV <= 1000 then return redis.call('BF.MEXISTS', KEYS[1], unpack(ARGV)) end
local out = {}
for i = 1, #ARGV, 1000 do
  local r = redis.call('BF.MEXISTS', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  for j = 1, #r do out[#out + 1] = r[j] end
end
return out
