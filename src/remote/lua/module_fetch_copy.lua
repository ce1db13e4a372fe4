-- SPDX-License-Identifier: BSD-3-Clause
-- module_fetch_copy.lua: copies a module filter to a hidden key with a
-- lease, one instant's filter for BF.SCANDUMP to read (docs/DESIGN.md,
-- Module backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   name
-- KEYS[2]   {name}:fetch:<16 hex digits>, the copy
-- ARGV[1]   the copy's lease, ms
--
-- Reply: the integer 1.
-- Errors:
--   BGNOTFOUND   name does not exist
--   COPY's (RedisBloom: ERR not supported for this module key)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('BGNOTFOUND filter does not exist')
end
redis.call('COPY', KEYS[1], KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
